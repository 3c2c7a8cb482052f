package bound

import (
	"context"
	"testing"
	"time"

	"github.com/filetxn/filetxn/internal/testkit"
)

// quiet is how long a context must stay live before a test believes that it
// does not end: long enough for a wrong end (at ctx's, or d after the
// start) to show; the right behaviour ends nothing however long it lasts.
const quiet = 50 * time.Millisecond

// long is a bound that no test outlasts: a context bounded by it ends only
// by its CancelFunc, within a test.
const long = time.Hour

type key struct{}

// endings returns, by name, a ctx carrying a value and the function that
// ends it after Held or Try is called: a ctx already done (canceled, or
// expired) needs none, and one canceled after the call is canceled by it.
func endings() map[string]func() (context.Context, func()) {
	out := map[string]func() (context.Context, func()){
		"canceled after the call": func() (context.Context, func()) {
			ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
			return ctx, cancel
		},
	}
	for how, done := range testkit.DoneContexts() {
		out[how+" before the call"] = func() (context.Context, func()) {
			return context.WithValue(done, key{}, "v"), func() {}
		}
	}
	return out
}

// assertLive checks that rctx stays live for the quiet interval.
func assertLive(t *testing.T, rctx context.Context, what string) {
	t.Helper()
	select {
	case <-rctx.Done():
		t.Fatalf("%s ended (%v), want it live", what, rctx.Err())
	case <-time.After(quiet):
	}
}

// TestHeldOutlivesCtx: a request under the lock goes on after ctx ends,
// with ctx's values, until its CancelFunc (its bound, an hour here, not
// reached). Ablations: held without context.WithoutCancel (its context a
// child of ctx) ends with ctx, red on Err; its context.AfterFunc cancelling
// at once instead of at what is left of the bound, red on "want it live".
func TestHeldOutlivesCtx(t *testing.T) {
	for how, ending := range endings() {
		t.Run(how, func(t *testing.T) {
			ctx, end := ending()
			rctx, cancel := held(ctx, long)
			end()
			if err := rctx.Err(); err != nil {
				t.Fatalf("held(ctx %s, %v).Err() = %v, want nil", how, long, err)
			}
			assertLive(t, rctx, "held(ctx "+how+")")
			if got := rctx.Value(key{}); got != "v" {
				t.Errorf("held(ctx %s).Value(key) = %v, want v", how, got)
			}
			cancel()
			if err := rctx.Err(); err != context.Canceled {
				t.Errorf("held(ctx %s) after its CancelFunc: Err() = %v, want %v", how, err, context.Canceled)
			}
		})
	}
}

// TestHeldEndsDAfterItsStartOnceCtxHasEnded: when ctx ends before d has
// passed since the call (or had ended before it), the request's context
// ends d after the call, not before. The check of "not before" is a lower
// bound that a slow machine only makes easier to meet. Ablations: held
// without its context.AfterFunc (nothing but the CancelFunc ends the
// context) red at Recv's bound; the AfterFunc cancelling at once instead of
// at what is left of d red on "ended before d".
func TestHeldEndsDAfterItsStartOnceCtxHasEnded(t *testing.T) {
	const d = 50 * time.Millisecond
	for how, ending := range endings() {
		t.Run(how, func(t *testing.T) {
			ctx, end := ending()
			start := time.Now()
			rctx, cancel := held(ctx, d)
			defer cancel()
			end()
			testkit.Recv(t, rctx.Done(), "the end of held(ctx "+how+", d)")
			if took := time.Since(start); took < d {
				t.Errorf("held(ctx %s, %v) ended %v after the call, before d", how, d, took)
			}
		})
	}
}

// TestHeldEndsWithCtxOnceDHasPassed: while ctx lives, the request's context
// lives, however long past d; it ends once ctx does. Ablations: held as
// Try (context.WithTimeout(context.WithoutCancel(ctx), d): d bounds it from
// its start whatever ctx does) red on "want it live"; held without its
// context.AfterFunc red at Recv's bound.
func TestHeldEndsWithCtxOnceDHasPassed(t *testing.T) {
	const d = time.Millisecond
	ctx, end := context.WithCancel(context.Background())
	defer end()
	rctx, cancel := held(ctx, d)
	defer cancel()
	<-time.After(d)
	assertLive(t, rctx, "held(live ctx, d) past d")
	end()
	testkit.Recv(t, rctx.Done(), "the end of held(ctx, d) once ctx ended")
}

// TestTryOutlivesCtxUntilD: one request made although ctx may be done
// keeps ctx's values, lives after ctx's end, and is bounded by d from the
// call: its deadline. Ablations: try without context.WithoutCancel red on
// Err (ctx's end ends it); try without the timeout (context.WithCancel)
// red on Deadline.
func TestTryOutlivesCtxUntilD(t *testing.T) {
	for how, ending := range endings() {
		t.Run(how, func(t *testing.T) {
			ctx, end := ending()
			before := time.Now()
			rctx, cancel := try(ctx, long)
			after := time.Now()
			defer cancel()
			end()
			if err := rctx.Err(); err != nil {
				t.Fatalf("try(ctx %s, %v).Err() = %v, want nil", how, long, err)
			}
			if got := rctx.Value(key{}); got != "v" {
				t.Errorf("try(ctx %s).Value(key) = %v, want v", how, got)
			}
			dl, ok := rctx.Deadline()
			if !ok || dl.Before(before.Add(long)) || dl.After(after.Add(long)) {
				t.Errorf("try(ctx %s, %v).Deadline() = %v, %v, want %v after the call", how, long, dl, ok, long)
			}
			cancel()
			if err := rctx.Err(); err != context.Canceled {
				t.Errorf("try(ctx %s) after its CancelFunc: Err() = %v, want %v", how, err, context.Canceled)
			}
		})
	}
}

// Package bound makes the contexts of the requests that the module makes
// to a filetxn.Backend once its caller's ctx is done, and so no longer
// bounds them: ctx bounds the wait for a lock, as on files, and not the
// work done under the lock.
package bound

import (
	"context"
	"time"
)

// Done bounds what the module asks of a backend once ctx, done, no longer
// can: a lock taken under a ctx already done, in one try without wait
// (Try), and each request made under a held lock after ctx has ended
// (Held). The try must outlast a backend's own answer to a Lock without
// wait (etcd's comes within its noWaitBound, a second, from a holder that
// keeps its lock idle) and the round trips around it (a new session's
// grant, the lock's own request) on a slow network; no request made under
// the lock ought to take longer on a backend that answers at all. Five
// seconds is that with room, and is the etcd backend's own bound
// (releaseTimeout) for the requests it makes without a ctx of its caller's;
// yet it is short enough that a backend that does not answer fails the
// call well before its user would give up on it.
const Done = 5 * time.Second

// Try returns the context of one request made although ctx may be done: it
// keeps ctx's values but not its end, and is bounded by Done.
func Try(ctx context.Context) (context.Context, context.CancelFunc) { return try(ctx, Done) }

// try is Try bounded by d in place of Done, for its tests.
func try(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}

// Held returns the context of a request made under a held lock: ctx bounds
// only the wait for the lock, so the request goes on after ctx ends, until
// the later of ctx's end and Done after its start. It keeps ctx's values;
// the caller calls the CancelFunc once the request returns.
func Held(ctx context.Context) (context.Context, context.CancelFunc) { return held(ctx, Done) }

// held is Held with d in place of Done, for its tests.
func held(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	start := time.Now()
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		// Once ctx has ended, what is left of d; a timer left after the
		// request returns only cancels a context that nothing uses.
		time.AfterFunc(time.Until(start.Add(d)), cancel)
	})
	return rctx, func() { stop(); cancel() }
}

package filetxn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/proc"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// The tests of group commit hold a leader inside its fn, so that the calls
// started meanwhile queue behind it in a known order; when it is released it
// publishes alone and hands the lead to the first of them, whose batch is
// then all of them. The seam.Queued point tells a test when a call has
// joined the queue, so nothing here sleeps and hopes.

// outcome is what one Mutate gave its caller.
type outcome struct {
	commit   Commit
	err      error
	returned bool // Mutate returned (false: it panicked, or the goroutine ended)
	panicked any  // the recovered panic value, if any
}

// groupStore returns a kv store on a file holding "{}\n" (so that an
// unchanged empty document writes nothing), a context for its calls, and
// the count of the renames of that file until the test ends.
func groupStore(t *testing.T, opts ...Option) (*Store[*kv], context.Context, *atomic.Int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kv.json")
	require.NoError(t, os.WriteFile(path, []byte("{}\n"), 0o644))
	return must(NewStore[*kv](path, kvCodec{}, opts...)), context.Background(), countRenames(t, path)
}

// countRenames counts the engine's renames over path until the test ends.
func countRenames(t testing.TB, path string) *atomic.Int64 {
	var writes atomic.Int64
	seam.Set(t, func(p seam.Point, at string) error {
		if p == seam.Replaced && at == path {
			writes.Add(1)
		}
		return nil
	})
	return &writes
}

// onPoint calls fn each time the code passes point, on any path, until the
// test ends.
func onPoint(t testing.TB, point seam.Point, fn func()) {
	seam.Set(t, func(p seam.Point, _ string) error {
		if p == point {
			fn()
		}
		return nil
	})
}

// watchQueue makes every call that joins a group's queue send on the
// returned channel, until the test ends.
func watchQueue(t *testing.T) <-chan struct{} {
	t.Helper()
	queued := make(chan struct{}, 1024) // the hook runs under the group's mutex: it must not block
	onPoint(t, seam.Queued, func() { queued <- struct{}{} })
	return queued
}

// within returns the next value from ch, or fails the test after a
// generous bound.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// start runs s.Mutate(ctx, fn) in a new goroutine and returns where its
// outcome will arrive.
func start(s *Store[*kv], ctx context.Context, fn func(*kv) error) <-chan outcome {
	return goMutate(func() (Commit, error) { return s.Mutate(ctx, fn) })
}

// goMutate runs mutate in a new goroutine and returns where its outcome
// will arrive.
func goMutate(mutate func() (Commit, error)) <-chan outcome {
	out := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			o.panicked = recover()
			out <- o
		}()
		o.commit, o.err = mutate()
		o.returned = true
	}()
	return out
}

// hold starts a Mutate that sets key "leader" and then waits in its fn
// until release is called: it leads, holding the lock, while the test
// queues others behind it. then, if not nil, runs after the wait.
func hold(t *testing.T, s *Store[*kv], ctx context.Context, then func()) (release func(), done <-chan outcome) {
	t.Helper()
	inside, rel := make(chan struct{}), make(chan struct{})
	done = start(s, ctx, func(d *kv) error {
		d.m["leader"] = "1"
		close(inside)
		<-rel
		if then != nil {
			then()
		}
		return nil
	})
	within(t, inside, "the leader's fn to run")
	return func() { close(rel) }, done
}

// follow starts a Mutate and returns once it has joined the queue.
func follow(t *testing.T, s *Store[*kv], ctx context.Context, queued <-chan struct{}, fn func(*kv) error) <-chan outcome {
	t.Helper()
	out := start(s, ctx, fn)
	within(t, queued, "a follower to queue")
	return out
}

// set returns a fn that sets key k to "1" and counts its runs in runs[k].
func set(runs *sync.Map, k string) func(*kv) error {
	return func(d *kv) error {
		n, _ := runs.LoadOrStore(k, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		d.m[k] = "1"
		return nil
	}
}

func fileKeys(t *testing.T, s *Store[*kv]) map[string]string {
	t.Helper()
	d, err := s.View(context.Background())
	require.NoError(t, err)
	return d.m
}

// TestMutateGroupSharesOneWrite: seven calls that queue behind a held
// leader are published by one write, after the leader's own: two renames
// for eight Mutates, each of whose fns ran once and whose change is in the
// file. Each follower's Commit is Written and, shared, has no Digest.
// Ablation: take() returning the leader's call alone (no batching) makes
// eight renames, and this test goes red.
func TestMutateGroupSharesOneWrite(t *testing.T) {
	s, ctx, writes := groupStore(t)
	queued := watchQueue(t)
	var runs sync.Map
	release, leader := hold(t, s, ctx, nil)
	var followers []<-chan outcome
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		followers = append(followers, follow(t, s, ctx, queued, set(&runs, k)))
	}
	release()
	require.Equal(t, outcome{commit: Commit{Written: true, published: []byte("{\"leader\":\"1\"}\n")}, returned: true}, within(t, leader, "the leader"),
		"leader's Mutate = got, want written alone")
	for i, f := range followers {
		o := within(t, f, "a follower")
		require.True(t, o.returned && o.err == nil && o.commit.Written, "follower %d's Mutate = %+v, want written", i, o)
		_, owned := o.commit.Digest()
		require.False(t, owned, "follower %d's Commit.Digest() = owned, want not owned: its write carried six others", i)
	}
	require.Equal(t, int64(2), writes.Load(), "renames for 8 Mutates = %d, want 2 (the leader's, then one for the 7 queued)", writes.Load())
	runs.Range(func(k, n any) bool {
		require.Equal(t, int64(1), n.(*atomic.Int64).Load(), "runs of %s's fn = %d, want 1", k, n.(*atomic.Int64).Load())
		return true
	})
	require.Len(t, fileKeys(t, s), 8, "keys in the file = %v, want the leader's and the seven followers'", fileKeys(t, s))
}

// TestMutateGroupLosesNoUpdate: 8 goroutines x 50 increments of one file,
// through one Store and a second Store value on the same file (which
// groups apart and excludes through the lock), end with every increment
// counted, and fewer renames than calls when the calls overlap (they may
// not, on a loaded machine, so the count is logged, not required).
// Ablation: finish() publishing the bytes encoded after the leader's fn
// instead of after the last one loses the followers' increments and this
// test goes red.
func TestMutateGroupLosesNoUpdate(t *testing.T) {
	const goroutines, each = 8, 50
	s := newCounter(t, WithoutSync())
	other := must(NewStore[*counter](s.path, counterCodec{}, WithoutSync()))
	writes := countRenames(t, s.path)
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range goroutines {
		st := s
		if g%4 == 3 {
			st = other
		}
		wg.Go(func() {
			for range each {
				c, err := st.Mutate(ctx, func(c *counter) error { c.n++; return nil })
				if err != nil || !c.Written {
					t.Errorf("Mutate(+1) = %+v, %v, want written", c, err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, "400\n", readCount(t, s.path), "file after %d x %d increments = got, want 400", goroutines, each)
	t.Logf("%d renames for %d increments", writes.Load(), goroutines*each)
}

// TestMutateGroupUndoesAFailingFnAlone: in a batch of three, the middle fn
// changes the document and then fails: its caller gets its own error (the
// very value) and nothing written, its change is absent, and the changes of
// the fns before and after it are published. The same holds for a fn whose
// change the codec cannot encode. Ablation: leaving the document fresh after
// a failed fn (step's "b.fresh = false" dropped, so no re-decode) lets its
// change leak into the publish, and this test goes red.
func TestMutateGroupUndoesAFailingFnAlone(t *testing.T) {
	errBoom := errors.New("boom")
	for name, fail := range map[string]func(*kv) error{
		"fn error":     func(d *kv) error { d.m["failed"] = "1"; return errBoom },
		"encode error": func(d *kv) error { d.m["failed"] = "1"; d.m[unencodable] = "x"; return nil },
	} {
		t.Run(name, func(t *testing.T) {
			s, ctx, writes := groupStore(t)
			s.codec = refusingCodec{}
			queued := watchQueue(t)
			var runs sync.Map
			release, leader := hold(t, s, ctx, nil)
			a := follow(t, s, ctx, queued, set(&runs, "a"))
			f := follow(t, s, ctx, queued, fail)
			b := follow(t, s, ctx, queued, set(&runs, "b"))
			release()
			require.True(t, within(t, leader, "the leader").returned)
			for k, ch := range map[string]<-chan outcome{"a": a, "b": b} {
				o := within(t, ch, k)
				require.True(t, o.returned && o.err == nil && o.commit.Written, "%s's Mutate = %+v, want written", k, o)
			}
			o := within(t, f, "the failing call")
			require.False(t, o.commit.Written, "failing Mutate's Commit = %+v, want nothing written", o.commit)
			if name == "fn error" {
				require.Same(t, errBoom, o.err, "failing Mutate = %v, want its fn's error itself", o.err)
			} else {
				require.ErrorIs(t, o.err, errUnencodable, "failing Mutate = %v, want the codec's error", o.err)
			}
			require.Equal(t, map[string]string{"leader": "1", "a": "1", "b": "1"}, fileKeys(t, s), "file after the batch = got, want leader, a and b without the failed change")
			require.Equal(t, int64(2), writes.Load(), "renames = %d, want 2", writes.Load())
		})
	}
}

// unencodable is a key that refusingCodec will not encode.
const unencodable = "unencodable"

var errUnencodable = errors.New("refusingCodec: unencodable key")

// refusingCodec is kvCodec, except that it refuses to encode a document
// holding the key unencodable.
type refusingCodec struct{ kvCodec }

func (c refusingCodec) Encode(d *kv) ([]byte, error) {
	if _, ok := d.m[unencodable]; ok {
		return nil, errUnencodable
	}
	return c.kvCodec.Encode(d)
}

// TestMutateGroupPanicReachesItsOwnCaller: a follower's fn that changes the
// document and panics re-raises its value in its own caller only; the
// others of its batch return and are published without its change. A
// leader's fn that panics propagates as it would alone, and the calls
// queued behind it are run (once each) by the next leader, not dropped.
// Ablations: marking the document fresh before fn has returned (step's
// "b.fresh = false" dropped) leaks the panicking fn's change ("follower"
// goes red); not requeueing the calls a batch took but never ran leaves
// them waiting ("leader" times out).
func TestMutateGroupPanicReachesItsOwnCaller(t *testing.T) {
	t.Run("follower", func(t *testing.T) {
		s, ctx, _ := groupStore(t)
		queued := watchQueue(t)
		var runs sync.Map
		release, leader := hold(t, s, ctx, nil)
		a := follow(t, s, ctx, queued, set(&runs, "a"))
		p := follow(t, s, ctx, queued, func(d *kv) error { d.m["panicked"] = "1"; panic("boom") })
		b := follow(t, s, ctx, queued, set(&runs, "b"))
		release()
		require.True(t, within(t, leader, "the leader").returned)
		for k, ch := range map[string]<-chan outcome{"a": a, "b": b} {
			o := within(t, ch, k)
			require.True(t, o.returned && o.err == nil && o.commit.Written && o.panicked == nil, "%s's Mutate = %+v, want written", k, o)
		}
		o := within(t, p, "the panicking call")
		require.Equal(t, outcome{panicked: "boom"}, o, "panicking Mutate = got, want its own panic value re-raised")
		require.Equal(t, map[string]string{"leader": "1", "a": "1", "b": "1"}, fileKeys(t, s), "file = got, want leader, a and b without the panicking fn's change")
	})
	t.Run("leader", func(t *testing.T) {
		// p is promoted when the held leader is done, takes a and b into
		// its batch, and panics in its own fn before theirs run.
		s, ctx, _ := groupStore(t)
		queued := watchQueue(t)
		var runs sync.Map
		release, first := hold(t, s, ctx, nil)
		p := follow(t, s, ctx, queued, func(d *kv) error { d.m["panicked"] = "1"; panic("leader boom") })
		a := follow(t, s, ctx, queued, set(&runs, "a"))
		b := follow(t, s, ctx, queued, set(&runs, "b"))
		release()
		require.True(t, within(t, first, "the first leader").returned)
		require.Equal(t, outcome{panicked: "leader boom"}, within(t, p, "the panicking leader"), "leader's panicking Mutate = got, want its panic")
		for k, ch := range map[string]<-chan outcome{"a": a, "b": b} {
			o := within(t, ch, k)
			require.True(t, o.returned && o.err == nil && o.commit.Written, "%s's Mutate = %+v, want written", k, o)
		}
		runs.Range(func(k, n any) bool {
			require.Equal(t, int64(1), n.(*atomic.Int64).Load(), "runs of %s's fn = %d, want 1", k, n.(*atomic.Int64).Load())
			return true
		})
		require.Equal(t, map[string]string{"leader": "1", "a": "1", "b": "1"}, fileKeys(t, s), "file = got, want leader, a and b, and not the panicking leader's change")
	})
}

// panicsInFn is a follower's fn that panics, named so that a stack trace
// shows whether it ran on the stack that the panic reaches.
func panicsInFn(d *kv) error {
	d.m["panicked"] = "1"
	panic("boom in fn")
}

// TestMutateGroupFollowerPanicHasItsOwnStack: a follower's panic reaches
// its caller as the panic of its own fn, not one raised again by Mutate: a
// deferred recover in the caller's goroutine sees fn's frame on the stack
// the panic unwinds, and the panic's value. Ablation: follow recovering the
// panic and mutate raising it again (as when fns ran on the leader's
// goroutine) loses fn's frame, and this test goes red.
func TestMutateGroupFollowerPanicHasItsOwnStack(t *testing.T) {
	s, ctx, _ := groupStore(t)
	queued := watchQueue(t)
	var runs sync.Map
	release, leader := hold(t, s, ctx, nil)
	a := follow(t, s, ctx, queued, set(&runs, "a")) // leads the batch
	type caught struct {
		value any
		stack string
	}
	got := make(chan caught, 1)
	go func() {
		defer func() { got <- caught{recover(), string(debug.Stack())} }()
		s.Mutate(ctx, panicsInFn)
	}()
	within(t, queued, "the panicking follower to queue")
	b := follow(t, s, ctx, queued, set(&runs, "b"))
	release()
	within(t, leader, "the leader")
	c := within(t, got, "the panicking follower")
	require.Equal(t, "boom in fn", c.value, "recovered panic = %v, want fn's value", c.value)
	require.Contains(t, c.stack, "filetxn.panicsInFn(", "stack at the caller's recover = %s, want fn's frame on it", c.stack)
	for k, ch := range map[string]<-chan outcome{"a": a, "b": b} {
		o := within(t, ch, k)
		require.True(t, o.returned && o.err == nil && o.commit.Written, "%s's Mutate = %+v, want written", k, o)
	}
	require.Equal(t, map[string]string{"leader": "1", "a": "1", "b": "1"}, fileKeys(t, s), "file = got, want leader, a and b without the panicking fn's change")
}

// TestMutateGroupGoexitLeavesNobodyWaiting: a follower's fn that calls
// runtime.Goexit (as testing's FailNow does) ends its own caller's
// goroutine only, as it would alone: the other calls of the batch, the one
// leading it included, are published and answered, without its change. A
// leader's fn that calls it ends the leader's goroutine, and the calls
// queued behind it are run (once each) by the next leader, not dropped.
// Ablations: follow passing the document on only once step has returned
// (not deferred) leaves the leader waiting, and the "follower" case times
// out; a follower's fn run on the leader's goroutine (as before: run calling
// step for every call) ends the leader's goroutine instead, and it goes red;
// finish run at the end of run instead of deferred leaves the followers of
// the Goexiting leader waiting, and the "leader" case times out.
func TestMutateGroupGoexitLeavesNobodyWaiting(t *testing.T) {
	t.Run("follower", func(t *testing.T) {
		s, ctx, _ := groupStore(t)
		queued := watchQueue(t)
		var runs sync.Map
		release, first := hold(t, s, ctx, nil)
		a := follow(t, s, ctx, queued, set(&runs, "a")) // will lead the second batch
		g := follow(t, s, ctx, queued, func(d *kv) error { d.m["goexit"] = "1"; runtime.Goexit(); return nil })
		b := follow(t, s, ctx, queued, set(&runs, "b"))
		release()
		require.True(t, within(t, first, "the first leader").returned)
		for k, ch := range map[string]<-chan outcome{"a, the leader of the Goexit's batch": a, "b": b} {
			o := within(t, ch, k)
			require.True(t, o.returned && o.err == nil && o.commit.Written, "%s's Mutate = %+v, want written", k, o)
		}
		require.Equal(t, outcome{}, within(t, g, "the Goexit call"), "Goexit call's Mutate = got, want its goroutine ended")
		require.Equal(t, map[string]string{"leader": "1", "a": "1", "b": "1"}, fileKeys(t, s), "file = got, want leader, a and b")
		c, err := s.Mutate(ctx, set(&runs, "c"))
		require.True(t, err == nil && c.Written, "Mutate after the Goexit = %+v, %v, want written (the lead was handed on)", c, err)
	})
	t.Run("leader", func(t *testing.T) {
		s, ctx, _ := groupStore(t)
		queued := watchQueue(t)
		var runs sync.Map
		release, first := hold(t, s, ctx, nil)
		g := follow(t, s, ctx, queued, func(d *kv) error { d.m["goexit"] = "1"; runtime.Goexit(); return nil }) // leads the second batch
		a := follow(t, s, ctx, queued, set(&runs, "a"))
		b := follow(t, s, ctx, queued, set(&runs, "b"))
		release()
		require.True(t, within(t, first, "the first leader").returned)
		require.Equal(t, outcome{}, within(t, g, "the Goexit leader"), "Goexit leader's Mutate = got, want its goroutine ended")
		for k, ch := range map[string]<-chan outcome{"a": a, "b": b} {
			o := within(t, ch, k)
			require.True(t, o.returned && o.err == nil && o.commit.Written, "%s's Mutate = %+v, want written", k, o)
		}
		runs.Range(func(k, n any) bool {
			require.Equal(t, int64(1), n.(*atomic.Int64).Load(), "runs of %s's fn = %d, want 1", k, n.(*atomic.Int64).Load())
			return true
		})
		require.Equal(t, map[string]string{"leader": "1", "a": "1", "b": "1"}, fileKeys(t, s), "file = got, want leader, a and b")
	})
}

// TestMutateGroupRunsFnOnItsCallersGoroutine: every fn of a batch, the
// leader's and each follower's, runs on the goroutine that called Mutate
// with it (so a goroutine-local property of the caller, such as a thread
// locked by runtime.LockOSThread, holds in fn). Ablation: run calling the
// followers' step on the leader's goroutine (as before) makes every
// follower's ids differ, and this test goes red.
func TestMutateGroupRunsFnOnItsCallersGoroutine(t *testing.T) {
	s, ctx, _ := groupStore(t)
	queued := watchQueue(t)
	type ids struct{ caller, fn int64 }
	seen := func(k string, got chan<- ids) func(*kv) error {
		return func(d *kv) error {
			got <- ids{fn: proc.ID()}
			d.m[k] = "1"
			return nil
		}
	}
	// each calls Mutate on a goroutine of its own, and reports that
	// goroutine's id, then fn's.
	each := func(k string, got chan ids) <-chan outcome {
		return goMutate(func() (Commit, error) {
			got <- ids{caller: proc.ID()}
			return s.Mutate(ctx, seen(k, got))
		})
	}
	release, leader := hold(t, s, ctx, nil)
	chans := map[string]chan ids{}
	var outs []<-chan outcome
	for i, k := range []string{"a", "b", "c"} {
		chans[k] = make(chan ids, 2)
		outs = append(outs, each(k, chans[k]))
		within(t, queued, fmt.Sprintf("follower %d to queue", i))
	}
	release()
	within(t, leader, "the first leader")
	for _, out := range outs {
		o := within(t, out, "a follower")
		require.True(t, o.returned && o.err == nil && o.commit.Written, "Mutate = %+v, want written", o)
	}
	for k, ch := range chans {
		caller, fn := (<-ch).caller, (<-ch).fn
		require.Equal(t, caller, fn, "%s's fn ran on goroutine %d, want its caller's %d", k, fn, caller)
	}
	require.Equal(t, map[string]string{"leader": "1", "a": "1", "b": "1", "c": "1"}, fileKeys(t, s), "file = got, want every change")
}

// TestMutateGroupCountsItsAnsweredCallersAwake: every caller that a batch
// answers, whether its fn succeeded, failed, panicked or ended its
// goroutine, is counted as waking until its goroutine resumes, so that once
// all have returned the next leader finds none to yield for. Ablation:
// dropping the decrement in mutate leaves waking at 4 and this test goes
// red (and every later leader would yield for callers long gone).
func TestMutateGroupCountsItsAnsweredCallersAwake(t *testing.T) {
	s, ctx, _ := groupStore(t)
	queued := watchQueue(t)
	var runs sync.Map
	release, first := hold(t, s, ctx, nil)
	outs := []<-chan outcome{
		follow(t, s, ctx, queued, set(&runs, "a")), // leads the second batch: answered by its own return
		follow(t, s, ctx, queued, set(&runs, "b")),
		follow(t, s, ctx, queued, func(*kv) error { return errors.New("fails") }),
		follow(t, s, ctx, queued, func(*kv) error { panic("fn panics") }),
		follow(t, s, ctx, queued, func(*kv) error { runtime.Goexit(); return nil }),
	}
	release()
	within(t, first, "the first leader")
	for i, out := range outs {
		within(t, out, fmt.Sprintf("follower %d", i))
	}
	require.Equal(t, int32(0), s.g.waking.Load(), "waking after every caller returned = %d, want 0", s.g.waking.Load())
}

// TestMutateGroupLeaderWaitsForNoArrival: a leader yields for the callers
// the batch before answered only a bounded number of times, so callers
// that never get to run (here: counted, but never answered, as if the
// operating system had descheduled them for good) delay a lone Mutate by a
// few passes of the scheduler, not for ever. Ablation: yielding while
// waking > 0 without the bound makes this Mutate spin, and this test times
// out.
func TestMutateGroupLeaderWaitsForNoArrival(t *testing.T) {
	s, ctx, writes := groupStore(t)
	s.g.waking.Store(3)
	var runs sync.Map
	o := within(t, start(s, ctx, set(&runs, "a")), "a lone Mutate while three answered callers never resume")
	require.True(t, o.returned && o.err == nil && o.commit.Written, "Mutate = %+v, want written", o)
	require.Equal(t, int64(1), writes.Load(), "renames = %d, want 1", writes.Load())
}

// TestMutateGroupJoinsAnOpenBatchWithoutTheReentryCheck: a call that
// arrives while the leader holds the lock and has yet to take the queue
// joins that leader's batch without the re-entry check (whose lock I/O
// would delay the callers coming back from the batch before), since only
// the leader's goroutine can hold the lock then; a call that arrives while
// the leader runs its batch checks, as the re-entry tests need. Ablation:
// enqueue sending every unchecked call to check makes the first count 1,
// and this test goes red; never sending one turns
// TestMutateGroupReentryFails red.
func TestMutateGroupJoinsAnOpenBatchWithoutTheReentryCheck(t *testing.T) {
	s, ctx, writes := groupStore(t)
	queued := watchQueue(t)
	var checks atomic.Int64
	onPoint(t, seam.MayQueue, func() { checks.Add(1) })
	opened, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	onPoint(t, seam.Gather, func() { once.Do(func() { close(opened); <-proceed }) })
	var runs sync.Map
	leader := start(s, ctx, set(&runs, "leader"))
	within(t, opened, "the leader to hold the lock before taking the queue")
	a := follow(t, s, ctx, queued, set(&runs, "a"))
	require.Equal(t, int64(0), checks.Load(), "re-entry checks of a call joining an open batch = %d, want 0", checks.Load())
	close(proceed)
	for _, out := range []<-chan outcome{leader, a} {
		o := within(t, out, "a call of the open batch")
		require.True(t, o.returned && o.err == nil && o.commit.Written, "Mutate = %+v, want written", o)
	}
	require.Equal(t, int64(1), writes.Load(), "renames for the leader and a = %d, want 1 (one batch)", writes.Load())

	release, held := hold(t, s, ctx, nil)
	b := follow(t, s, ctx, queued, set(&runs, "b"))
	require.Equal(t, int64(1), checks.Load(), "re-entry checks of a call queued behind a running batch = %d, want 1", checks.Load())
	release()
	within(t, held, "the held leader")
	o := within(t, b, "b")
	require.True(t, o.returned && o.err == nil && o.commit.Written, "b's Mutate = %+v, want written", o)
}

// TestMutateGroupReentryCheckTakesNoLock: a follower's re-entry check
// (mayQueue), made while the leader is in its attempt at the lock, asks the
// lock package for no lock, so the leader, whose ctx is already done and
// which therefore makes one attempt, finds the lock free and runs its
// transaction, as documented. The seam.Lock hook pauses the leader in its
// attempt, before it takes anything, until the follower has checked and
// queued, and counts every lock attempt on the store's lock file.
// Ablation: mayQueue back to its TryAcquire and Release of the lock (which
// hold the lock for a moment, and can make a concurrent leader's attempt
// find it busy) makes the follower's check a second lock attempt, and this
// test goes red.
func TestMutateGroupReentryCheckTakesNoLock(t *testing.T) {
	s, ctx, writes := groupStore(t)
	queued := watchQueue(t)
	lockPath, err := s.LockPath()
	require.NoError(t, err, "LockPath()")
	trying, proceed := make(chan struct{}), make(chan struct{})
	var attempts atomic.Int64
	seam.Set(t, func(step seam.Point, path string) error {
		if step == seam.Lock && path == lockPath && attempts.Add(1) == 1 {
			close(trying)
			<-proceed
		}
		return nil
	})
	checked := make(chan struct{}, 16)
	onPoint(t, seam.MayQueue, func() { checked <- struct{}{} })
	done, cancel := context.WithCancel(ctx)
	cancel()
	var runs sync.Map
	leader := start(s, done, set(&runs, "leader"))
	within(t, trying, "the leader's attempt at the lock")
	a := start(s, ctx, set(&runs, "a"))
	within(t, checked, "a's re-entry check")
	within(t, queued, "a to queue behind the leader")
	require.Equal(t, int64(1), attempts.Load(), "lock attempts once a has checked = %d, want 1 (the leader's)", attempts.Load())
	close(proceed)
	o := within(t, leader, "the leader")
	require.True(t, o.returned && o.err == nil && o.commit.Written, "Mutate(done ctx) on a free lock = %+v, want written", o)
	o = within(t, a, "a")
	require.True(t, o.returned && o.err == nil && o.commit.Written, "a's Mutate = %+v, want written", o)
	require.Equal(t, map[string]string{"leader": "1", "a": "1"}, fileKeys(t, s), "file = got, want leader and a")
	require.LessOrEqual(t, writes.Load(), int64(2), "renames = %d, want at most 2", writes.Load())
}

// TestMutateGroupCancelledCallLeavesTheQueue: a call whose ctx ends while
// it waits in the queue returns at once (the leader still holds the lock)
// with an error matching context.Canceled that carries the holder, and its
// fn never runs; a call made with a done ctx while a leader holds the lock
// fails at once the same way, without queueing. The calls queued around it
// are unaffected. Ablation: dropping the ctx.Done case from the queue's
// wait makes the cancelled call wait for the leader, and this test times
// out.
func TestMutateGroupCancelledCallLeavesTheQueue(t *testing.T) {
	s, ctx, _ := groupStore(t)
	queued := watchQueue(t)
	var runs sync.Map
	release, leader := hold(t, s, ctx, nil)
	defer func() { release(); within(t, leader, "the leader") }()
	a := follow(t, s, ctx, queued, set(&runs, "a"))
	cctx, cancel := context.WithCancel(ctx)
	cancelled := follow(t, s, cctx, queued, set(&runs, "cancelled"))
	cancel()
	o := within(t, cancelled, "the cancelled call, while the leader holds the lock")
	var busy *lock.BusyError
	require.True(t, errors.Is(o.err, context.Canceled) && errors.As(o.err, &busy) && busy.Holder != nil,
		"cancelled Mutate = %v, want a *lock.BusyError matching context.Canceled, with the holder", o.err)
	_, err := s.Mutate(cctx, set(&runs, "done"))
	require.ErrorIs(t, err, context.Canceled, "Mutate(done ctx) behind a leader = %v, want context.Canceled at once", err)
	release()
	release = func() {}
	o = within(t, a, "a")
	require.True(t, o.returned && o.err == nil && o.commit.Written, "a's Mutate = %+v, want written", o)
	require.Equal(t, map[string]string{"leader": "1", "a": "1"}, fileKeys(t, s), "file = got, want leader and a only")
	_, ran := runs.Load("cancelled")
	require.False(t, ran, "the cancelled call's fn ran")
}

// TestMutateGroupCancelledCallOfAPanickedBatchWaitsForNoLock: a call taken
// into a batch whose leader's fn panics before it runs goes back to the
// queue; if its ctx ended while it was taken (its caller found it gone from
// the queue and waits for its answer), it is answered then, with ctx's
// error, and does not wait for the next leader to hold the lock. The next
// leader here is held once it holds the lock, as a wait for a lock that
// another process holds would hold it. Ablation: requeue putting every
// call back leaves the cancelled call waiting for that leader, and this
// test goes red.
func TestMutateGroupCancelledCallOfAPanickedBatchWaitsForNoLock(t *testing.T) {
	s, ctx, _ := groupStore(t)
	queued := watchQueue(t)
	var runs sync.Map
	release, first := hold(t, s, ctx, nil)
	var opens atomic.Int32
	nextLeads, proceed := make(chan struct{}), make(chan struct{})
	onPoint(t, seam.Gather, func() {
		if opens.Add(1) == 2 { // the batch after the panicked one
			close(nextLeads)
			<-proceed
		}
	})
	taken := make(chan struct{}, 1)
	onPoint(t, seam.Taken, func() { taken <- struct{}{} })
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := follow(t, s, ctx, queued, func(d *kv) error {
		cancel()
		select { // not within: its FailNow would end the leader's goroutine
		case <-taken:
			panic("leader boom")
		case <-time.After(20 * time.Second):
			panic("timed out waiting for the cancelled caller to find its call taken")
		}
	})
	a := follow(t, s, ctx, queued, set(&runs, "a"))
	c := follow(t, s, cctx, queued, set(&runs, "cancelled"))
	release()
	require.True(t, within(t, first, "the first leader").returned)
	require.Equal(t, outcome{panicked: "leader boom"}, within(t, p, "the panicking leader"), "leader's panicking Mutate = got, want its panic")
	within(t, nextLeads, "a to lead the next batch")
	o := within(t, c, "the cancelled call, while the next leader holds the lock")
	require.True(t, o.returned && errors.Is(o.err, context.Canceled) && !o.commit.Written,
		"cancelled Mutate = %+v, want an error matching context.Canceled, nothing written", o)
	close(proceed)
	o = within(t, a, "a")
	require.True(t, o.returned && o.err == nil && o.commit.Written, "a's Mutate = %+v, want written", o)
	require.Equal(t, map[string]string{"leader": "1", "a": "1"}, fileKeys(t, s), "file = got, want leader and a only")
	_, ran := runs.Load("cancelled")
	require.False(t, ran, "the cancelled call's fn ran")
}

// TestMutateGroupReentryFails: Mutate on the same Store from inside fn
// fails at once with lock.ErrReentrant, whether fn is the leader's own or a
// follower's (run on its caller's goroutine, which acts for the leader's
// meanwhile); so does Mutate from inside a Locked callback while another
// call leads, waiting for the lock that the callback holds. Ablations:
// queueing without the re-entry check (mayQueue's question to the lock
// table), or a table that answers "not held" for every goroutine, makes
// each of these wait for itself until its ctx ends, and this test goes red;
// follow without its loan turns the "follower" case red.
func TestMutateGroupReentryFails(t *testing.T) {
	nested := func(s *Store[*kv], ctx context.Context, got *error) func(*kv) error {
		return func(d *kv) error {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second) // bounds the deadlock of the ablation
			defer cancel()
			_, *got = s.Mutate(ctx, func(d *kv) error { d.m["nested"] = "1"; return nil })
			d.m["outer"] = "1"
			return nil
		}
	}
	t.Run("leader", func(t *testing.T) {
		s, ctx, _ := groupStore(t)
		var got error
		out := start(s, ctx, nested(s, ctx, &got))
		o := within(t, out, "the outer Mutate")
		require.True(t, o.returned && o.err == nil, "outer Mutate = %+v", o)
		require.ErrorIs(t, got, lock.ErrReentrant, "Mutate inside the leader's fn = %v, want ErrReentrant", got)
	})
	t.Run("follower", func(t *testing.T) {
		s, ctx, _ := groupStore(t)
		queued := watchQueue(t)
		var got error
		release, leader := hold(t, s, ctx, nil)
		second := follow(t, s, ctx, queued, func(d *kv) error { d.m["second"] = "1"; return nil }) // leads the batch
		f := follow(t, s, ctx, queued, nested(s, ctx, &got))
		g := follow(t, s, ctx, queued, func(d *kv) error { d.m["other"] = "1"; return nil })
		release()
		within(t, leader, "the leader")
		for _, ch := range []<-chan outcome{second, f, g} {
			o := within(t, ch, "a follower")
			require.True(t, o.returned && o.err == nil, "follower's Mutate = %+v", o)
		}
		require.ErrorIs(t, got, lock.ErrReentrant, "Mutate inside a follower's fn = %v, want ErrReentrant", got)
		require.Equal(t, map[string]string{"leader": "1", "second": "1", "outer": "1", "other": "1"}, fileKeys(t, s), "file = got, want the outer changes, not the nested one")
	})
	t.Run("locked", func(t *testing.T) {
		waiting := make(chan struct{})
		var once sync.Once
		report := lock.WithWaitReport(time.Nanosecond, func(*lock.BusyError) { once.Do(func() { close(waiting) }) })
		s, ctx, _ := groupStore(t, WithLockOptions(report))
		var got error
		var leader <-chan outcome
		err := s.Locked(ctx, func(tx *Tx) error {
			leader = start(s, ctx, func(d *kv) error { d.m["leader"] = "1"; return nil })
			within(t, waiting, "the leader to wait for the lock")
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second) // bounds the deadlock of the ablation
			defer cancel()
			_, got = s.Mutate(ctx, func(d *kv) error { d.m["nested"] = "1"; return nil })
			return nil
		})
		require.NoError(t, err)
		require.ErrorIs(t, got, lock.ErrReentrant, "Mutate inside Locked while another call leads = %v, want ErrReentrant", got)
		o := within(t, leader, "the leader")
		require.True(t, o.returned && o.err == nil && o.commit.Written, "leader's Mutate = %+v, want written", o)
	})
}

// TestMutateGroupEveryCallThatLocksFailsReentrantInAFollowersFn: a
// follower's fn runs on its caller's goroutine, which acts for the leader's
// (which holds the lock) while fn runs, so every call that locks the same
// file from inside it (Restore and Locked of the Store, Mutate of another
// Store of the file, whose group no call leads, and the lock itself, by
// Acquire and TryAcquire) fails at once with lock.ErrReentrant, as the
// godoc of Mutate says, and the batch goes on; so does one that locks
// another file the leader holds (its Mutate was called inside a Locked
// callback of that file), for which the leader waits no less. Ablations:
// follow without its loan makes each of these wait for the leader until
// its ctx ends (TryAcquire: busy), and this test goes red; lock's acquire
// without its check of the goroutine's hold makes Restore (and the others)
// wait likewise.
func TestMutateGroupEveryCallThatLocksFailsReentrantInAFollowersFn(t *testing.T) {
	s, ctx, _ := groupStore(t)
	other := must(NewStore[*kv](s.path, kvCodec{}))
	outer := must(NewStore[*kv](filepath.Join(filepath.Dir(s.path), "outer.json"), kvCodec{}))
	lockPath, err := s.LockPath()
	require.NoError(t, err)
	queued := watchQueue(t)
	got := map[string]error{}
	release, first := hold(t, s, ctx, nil)
	// The leader of the next batch, the first call queued, holds outer's
	// lock too: it calls Mutate inside a Locked callback of outer.
	leader := goMutate(func() (c Commit, err error) {
		err = outer.Locked(ctx, func(*Tx) error {
			c, err = s.Mutate(ctx, func(d *kv) error { d.m["second"] = "1"; return nil })
			return err
		})
		return c, err
	})
	within(t, queued, "the next leader to queue")
	f := follow(t, s, ctx, queued, func(d *kv) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second) // bounds the deadlock of an ablation
		defer cancel()
		_, got["Restore"] = s.Restore(ctx, nil, digestOf([]byte("{}\n")))
		got["Locked"] = s.Locked(ctx, func(*Tx) error { return nil })
		_, got["another Store's Mutate"] = other.Mutate(ctx, func(d *kv) error { d.m["nested"] = "1"; return nil })
		var h *lock.Handle
		if h, got["lock.Acquire"] = lock.Acquire(ctx, lockPath); h != nil {
			h.Release()
		}
		if h, got["lock.TryAcquire"] = lock.TryAcquire(lockPath); h != nil {
			h.Release()
		}
		_, got["the Mutate of another file the leader holds"] = outer.Mutate(ctx, func(d *kv) error { d.m["nested"] = "1"; return nil })
		d.m["follower"] = "1"
		return nil
	})
	release()
	within(t, first, "the first leader")
	o := within(t, leader, "the leader")
	require.True(t, o.returned && o.err == nil && o.commit.Written, "leader's Mutate = %+v, want written", o)
	o = within(t, f, "the follower")
	require.True(t, o.returned && o.err == nil && o.commit.Written, "follower's Mutate = %+v, want written", o)
	for call, err := range got {
		require.ErrorIs(t, err, lock.ErrReentrant, "%s inside a follower's fn = %v, want ErrReentrant", call, err)
	}
	require.Len(t, got, 6)
	require.Equal(t, map[string]string{"leader": "1", "second": "1", "follower": "1"}, fileKeys(t, s), "file = got, want the leaders' and the follower's changes only")
}

// TestRestoreRefusesASharedWrite: two calls published by one write each get
// a Commit without a Digest, so neither can Restore over the other's change
// (the Restore diverges and the other's change stays); a call that was the
// only one of its batch to change the document (beside a no-op and a
// failure) owns its write as if alone, and may Restore over it. Ablation:
// marking no write shared gives a and b the digest of the file, a's Restore
// then erases b's change, and this test goes red.
func TestRestoreRefusesASharedWrite(t *testing.T) {
	t.Run("shared", func(t *testing.T) {
		s, ctx, _ := groupStore(t)
		queued := watchQueue(t)
		var runs sync.Map
		release, leader := hold(t, s, ctx, nil)
		a := follow(t, s, ctx, queued, set(&runs, "a"))
		b := follow(t, s, ctx, queued, set(&runs, "b"))
		release()
		lc := within(t, leader, "the leader").commit
		snapshot := lc.published // the file as a found it
		ac, bc := within(t, a, "a").commit, within(t, b, "b").commit
		var owned []Digest
		for _, c := range []Commit{ac, bc} {
			require.True(t, c.Written, "batched Commit = %+v, want written", c)
			if d, ok := c.Digest(); ok {
				owned = append(owned, d)
			}
		}
		require.Empty(t, owned, "digests of a shared write = %x, want none", owned)
		_, err := s.Restore(ctx, snapshot, owned...)
		require.ErrorIs(t, err, ErrDiverged, "a's Restore over the shared write = %v, want ErrDiverged", err)
		require.Equal(t, map[string]string{"leader": "1", "a": "1", "b": "1"}, fileKeys(t, s), "file after the refused Restore = got, want b's change kept")
	})
	t.Run("sole writer", func(t *testing.T) {
		s, ctx, _ := groupStore(t)
		queued := watchQueue(t)
		var runs sync.Map
		release, leader := hold(t, s, ctx, nil)
		a := follow(t, s, ctx, queued, set(&runs, "a"))
		noop := follow(t, s, ctx, queued, func(*kv) error { return nil })
		failed := follow(t, s, ctx, queued, func(d *kv) error { d.m["failed"] = "1"; return errors.New("no") })
		release()
		snapshot := within(t, leader, "the leader").commit.published
		ac := within(t, a, "a").commit
		nc := within(t, noop, "the no-op").commit
		within(t, failed, "the failed call")
		require.False(t, nc.Written, "no-op's Commit in a batch = %+v, want nothing written", nc)
		d, ok := ac.Digest()
		require.True(t, ok, "sole writer's Commit.Digest() = not owned, want owned")
		_, err := s.Restore(ctx, snapshot, d)
		require.NoError(t, err, "sole writer's Restore = %v, want it to put the snapshot back", err)
		require.Equal(t, map[string]string{"leader": "1"}, fileKeys(t, s), "file after Restore = got, want the snapshot")
	})
}

// TestMutateGroupCountsAcrossProcesses: 4 processes, each with 4 goroutines
// making 50 increments through one Store, end at exactly 800: a batch runs
// under the one lock that excludes the other processes, and reads the file
// only once it holds it. The renames are logged, fewer than the calls when
// the goroutines overlap. Ablation: a batch that decodes bytes read before
// its leader took the lock loses increments, and this test goes red.
func TestMutateGroupCountsAcrossProcesses(t *testing.T) {
	const processes, goroutines, each = 4, 4, 50
	if c := testkit.Child(t); c != nil {
		s := must(NewStore[*counter](filepath.Join(c.Dir, "count.txt"), counterCodec{}))
		writes := countRenames(c.T, s.path)
		ctx := context.Background()
		c.Barrier()
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for i := range each {
					if _, err := s.Mutate(ctx, func(d *counter) error { d.n++; return nil }); err != nil {
						c.T.Errorf("Mutate #%d: %v", i, err)
						return
					}
				}
			})
		}
		wg.Wait()
		c.T.Logf("process %d: %d renames for %d increments", c.Index, writes.Load(), goroutines*each)
		return
	}
	dir := t.TempDir()
	g := testkit.Start(t, processes, dir)
	g.Release()
	g.Wait()
	require.Equal(t, fmt.Sprintf("%d\n", processes*goroutines*each), readCount(t, filepath.Join(dir, "count.txt")),
		"counter after %d processes x %d goroutines x %d increments = got, want every increment", processes, goroutines, each)
}

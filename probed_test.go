package filetxn

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/lock"
)

// countReads counts the engine's reads of path until the test ends.
func countReads(t *testing.T, path string) *atomic.Int64 {
	t.Helper()
	var reads atomic.Int64
	seam.Set(t, func(step seam.Point, p string) error {
		if step == seam.Read && p == path {
			reads.Add(1)
		}
		return nil
	})
	return &reads
}

// startProbed runs s.MutateProbed(ctx, fn) in a new goroutine and returns
// where its outcome will arrive.
func startProbed[D any](s *Store[D], ctx context.Context, fn func(D) error) <-chan outcome {
	return goMutate(func() (Commit, error) { return s.MutateProbed(ctx, fn) })
}

// TestMutateProbedOnAFreeLockReadsOnce: on a free lock whose file exists,
// MutateProbed takes the lock at once and reads the file once, whether fn
// changes the document or not. Ablation: probing before trying the lock
// (MutateProbed as it was: a lock-free read, then Mutate's own) reads twice
// for the change, and this test goes red.
func TestMutateProbedOnAFreeLockReadsOnce(t *testing.T) {
	ctx := context.Background()
	s := newCounter(t)
	require.NoError(t, os.WriteFile(s.path, []byte("3\n"), 0o644))
	lockPath, err := s.LockPath()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(lockPath, nil, 0o600))
	reads := countReads(t, s.path)

	c, err := s.MutateProbed(ctx, func(c *counter) error { c.n = 4; return nil })
	require.NoError(t, err)
	require.True(t, c.Written, "MutateProbed(3 -> 4) = %+v, want written", c)
	require.Equal(t, int64(1), reads.Load(), "reads for MutateProbed(3 -> 4) = %d, want 1", reads.Load())

	reads.Store(0)
	c, err = s.MutateProbed(ctx, func(c *counter) error { c.n = 4; return nil })
	require.NoError(t, err)
	require.False(t, c.Written, "MutateProbed(4 -> 4) = %+v, want nothing written", c)
	require.Equal(t, int64(1), reads.Load(), "reads for MutateProbed(4 -> 4) = %d, want 1", reads.Load())
	require.Equal(t, "4\n", readCount(t, s.path), "file = got, want 4")
}

// TestMutateProbedNoOpDoesNotWaitForABusyLock: while another holder has the
// lock, a MutateProbed that changes nothing answers from a lock-free read at
// once, and one that changes the document waits for the lock (it has not
// returned after a quiescent interval) and then writes. Ablation: a lead()
// that waits for the lock without probing when the try fails makes the
// no-op wait, and this test goes red at its bound.
func TestMutateProbedNoOpDoesNotWaitForABusyLock(t *testing.T) {
	s, h := busyCounter(t)
	noOpBesideAWaitingChange(t, s, h, nil, "under a busy lock")
}

// busyCounter returns a counter store on a file holding 3, and the lock of
// that file, held by the test (so busy for the store's calls) until it
// releases it or ends.
func busyCounter(t *testing.T) (*Store[*counter], *lock.Handle) {
	t.Helper()
	s := newCounter(t)
	require.NoError(t, os.WriteFile(s.path, []byte("3\n"), 0o644))
	lp, err := s.LockPath()
	require.NoError(t, err)
	h, err := lock.Acquire(context.Background(), lp)
	require.NoError(t, err)
	t.Cleanup(func() { h.Release() })
	return s, h
}

// noOpBesideAWaitingChange checks the property the tests above and below
// share, on a store from busyCounter: a MutateProbed that changes the
// document (3 -> 4) is started first; once leading is closed (at once if
// nil), a MutateProbed that changes nothing (3 -> 3) must answer with
// nothing written while the lock is still held, and the change must wait
// (it has not returned after a quiescent interval); once h is released the
// change is written.
func noOpBesideAWaitingChange(t *testing.T, s *Store[*counter], h *lock.Handle, leading <-chan struct{}, what string) {
	t.Helper()
	ctx := context.Background()
	change := startProbed(s, ctx, func(c *counter) error { c.n = 4; return nil })
	if leading != nil {
		within(t, leading, "the leader to try for the lock")
	}
	noop := within(t, startProbed(s, ctx, func(c *counter) error { c.n = 3; return nil }), "the no-op MutateProbed")
	require.True(t, noop.returned && noop.err == nil && !noop.commit.Written, "MutateProbed(3 -> 3) %s = %+v, want nothing written, no error", what, noop)
	select {
	case o := <-change:
		t.Fatalf("MutateProbed(3 -> 4) under a busy lock = %+v, want it to wait for the lock", o)
	case <-time.After(quiet): // still waiting
	}
	require.NoError(t, h.Release())
	o := within(t, change, "the changing MutateProbed")
	require.True(t, o.returned && o.err == nil && o.commit.Written, "MutateProbed(3 -> 4) after the release = %+v, want written", o)
	require.Equal(t, "4\n", readCount(t, s.path), "file = got, want 4")
}

// TestMutateProbedBehindAHolderQueuesWithoutProbing: a MutateProbed that
// arrives while a Mutate of the same Store holds the lock queues at once,
// without a lock-free read of its own, and is then run under the lock with
// one read. Ablation: probing whatever the leader is doing (a probe before
// every enqueue in mutate) reads the file before the leader is released,
// and this test goes red.
func TestMutateProbedBehindAHolderQueuesWithoutProbing(t *testing.T) {
	s, ctx, _ := groupStore(t)
	queued := watchQueue(t)
	reads := countReads(t, s.path)
	release, leader := hold(t, s, ctx, nil)
	reads.Store(0)
	var runs atomic.Int64
	follower := startProbed(s, ctx, func(d *kv) error { runs.Add(1); d.m["a"] = "1"; return nil })
	within(t, queued, "the probed call to queue")
	require.Zero(t, reads.Load(), "reads by a MutateProbed queued behind a holder = %d, want 0", reads.Load())
	release()
	require.True(t, within(t, leader, "the leader").returned)
	o := within(t, follower, "the probed call")
	require.True(t, o.returned && o.err == nil && o.commit.Written, "queued MutateProbed = %+v, want written", o)
	require.Equal(t, int64(1), reads.Load(), "reads by the queued MutateProbed = %d, want 1 (under the lock)", reads.Load())
	require.Equal(t, int64(1), runs.Load(), "runs of the queued fn = %d, want 1", runs.Load())
	require.Equal(t, map[string]string{"leader": "1", "a": "1"}, fileKeys(t, s), "file = got, want the leader's key and a")
}

// TestMutateProbedQueuedBeforeABusyLockIsSentBackToProbe: a MutateProbed
// that queued behind a leader before that leader found the lock busy is
// sent back to probe: changing nothing, it returns while the other holder
// still has the lock, and the leader writes once the lock is free.
// Ablation: group.wait() leaving the probed calls in the queue makes the
// no-op wait for the holder, and this test goes red at its bound.
func TestMutateProbedQueuedBeforeABusyLockIsSentBackToProbe(t *testing.T) {
	s, h := busyCounter(t)
	queued := watchQueue(t)
	// The leader's first try for the lock waits until the no-op has queued.
	var tries atomic.Int64
	trying := make(chan struct{})
	seam.Set(t, func(step seam.Point, p string) error {
		if step == seam.Lock && tries.Add(1) == 1 {
			close(trying)
			await(t, queued, "the no-op to queue")
		}
		return nil
	})
	noOpBesideAWaitingChange(t, s, h, trying, "queued under a busy lock")
}

// TestMutateProbedArrivingAsTheLeaderFindsTheLockBusyProbes: a MutateProbed
// that checks on the leader just before the leader finds the lock busy, and
// queues just after, is not left waiting behind it: changing nothing, it
// returns while the other holder still has the lock. The seam hooks order
// the steps: the leader's try for the lock waits until the probed call is
// between its look at the group and its queueing (in its re-entry check,
// which asks the lock for nothing), which in turn waits until the leader,
// having found the lock busy, is waiting for it. Ablation: the
// look at the leader's state (leaderWaits) apart from the queueing, as it
// was, queues the no-op behind the wait, and this test goes red at its
// bound.
func TestMutateProbedArrivingAsTheLeaderFindsTheLockBusyProbes(t *testing.T) {
	s, h := busyCounter(t)
	var tries atomic.Int64
	leaderTries, probedTries, leaderWaits := make(chan struct{}), make(chan struct{}), make(chan struct{})
	seam.Set(t, func(step seam.Point, p string) error {
		if step != seam.Lock {
			return nil
		}
		switch tries.Add(1) {
		case 1: // the leader's try, once it leads
			close(leaderTries)
			await(t, probedTries, "the probed call to look at the group")
		case 2: // the leader's wait for the lock it found busy
			close(leaderWaits)
		}
		return nil
	})
	var checks atomic.Int64
	onPoint(t, seam.MayQueue, func() { // the probed call's check, after its look, before it queues
		if checks.Add(1) == 1 {
			close(probedTries)
			await(t, leaderWaits, "the leader to wait for the lock")
		}
	})
	noOpBesideAWaitingChange(t, s, h, leaderTries, "arriving as the leader finds the lock busy")
}

// await is within for a goroutine other than the test's: past its bound it
// marks the test failed and returns, where within would end the goroutine.
func await[T any](t *testing.T, ch <-chan T, what string) {
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Errorf("timed out waiting for %s", what)
	}
}

// TestMutateProbedNoOpWhoseCtxEndsInTheQueueSucceeds: a MutateProbed that
// changes nothing, queued behind a Mutate of the same Store that holds the
// lock, and whose ctx ends there, decides on a lock-free read before it
// gives up: it returns with nothing written and no error while the leader
// still holds the lock, as it would have had it arrived with the ctx done;
// one that changes the document gives up with the ctx's error, its fn
// never run under the lock. Ablation: leaving the queue on ctx.Done with
// the busy error only (no probe) makes the no-op fail with
// context.Canceled, and this test goes red.
func TestMutateProbedNoOpWhoseCtxEndsInTheQueueSucceeds(t *testing.T) {
	s, ctx, _ := groupStore(t)
	queued := watchQueue(t)
	release, leader := hold(t, s, ctx, nil)
	var released sync.Once
	defer released.Do(release)
	for _, tt := range []struct {
		name   string
		fn     func(*kv) error
		wantOK bool
	}{
		{"no-op", func(*kv) error { return nil }, true},
		{"change", func(d *kv) error { d.m["late"] = "1"; return nil }, false},
	} {
		cctx, cancel := context.WithCancel(ctx)
		out := startProbed(s, cctx, tt.fn)
		within(t, queued, "the probed call to queue")
		cancel()
		o := within(t, out, "the probed call whose ctx ended, while the leader holds the lock")
		if tt.wantOK {
			require.True(t, o.returned && o.err == nil && !o.commit.Written, "MutateProbed(%s) whose ctx ended in the queue = %+v, want nothing written, no error", tt.name, o)
		} else {
			require.ErrorIs(t, o.err, context.Canceled, "MutateProbed(%s) whose ctx ended in the queue = %+v, want context.Canceled", tt.name, o)
		}
	}
	released.Do(release)
	require.True(t, within(t, leader, "the leader").returned)
	require.Equal(t, map[string]string{"leader": "1"}, fileKeys(t, s), "file = got, want the leader's key only")
}

// TestMutateProbedNoOpCreatesNothing: a MutateProbed whose fn changes
// nothing, on a store whose lock file does not exist yet (a fresh state
// root), leaves the disk as it found it: no state root, no lock file, no
// data file; with WithNoWait too. One that changes the document creates
// the lock file (and its directories) and writes, as Mutate does. Ablation:
// lead's first attempt with the store's own lock options (which create the
// lock file) makes the no-op create the state root, and this test goes red;
// the WithNoWait case returning the first attempt's error unprobed fails
// the change with fs.ErrNotExist.
func TestMutateProbedNoOpCreatesNothing(t *testing.T) {
	for name, opts := range map[string][]Option{"waits": nil, "WithNoWait": {WithNoWait()}} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			root := filepath.Join(dir, "state")
			s := must(NewStore[*counter](filepath.Join(dir, "count.txt"), counterCodec{}, append(opts, WithStateRoot(root))...))
			lockPath, err := s.LockPath()
			require.NoError(t, err)
			c, err := s.MutateProbed(ctx, func(*counter) error { return nil })
			require.True(t, err == nil && !c.Written, "MutateProbed(no-op) = %+v, %v, want nothing written", c, err)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, entries, "directory after a no-op MutateProbed = %v, want nothing created", entries)

			c, err = s.MutateProbed(ctx, func(c *counter) error { c.n = 1; return nil })
			require.True(t, err == nil && c.Written, "MutateProbed(0 -> 1) = %+v, %v, want written", c, err)
			require.FileExists(t, lockPath, "lock file after a MutateProbed that wrote")
			require.Equal(t, "1\n", readCount(t, s.path), "file = got, want 1")
		})
	}
}

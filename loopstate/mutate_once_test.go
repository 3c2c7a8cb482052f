package loopstate

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// TestMutateRunsFnOnceWhileAnotherProcessHoldsTheLock: a child process
// holds the loop's lock; the parent's Loop.Mutate, whose fn changes the
// state, waits for it without running fn, and once the child lets go runs
// fn exactly once and writes the change. Ablation: making Loop.Mutate call
// mutate with probe set (the engine's MutateProbed) runs fn on a lock-free
// probe before the wait, then again under the lock: fn runs 2 times, and
// the test goes red.
func TestMutateRunsFnOnceWhileAnotherProcessHoldsTheLock(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		r := mustRoot(NewRoot(c.Dir))
		l := mustOpen(t, r, "nightly")
		h, err := lock.Acquire(context.Background(), l.LockPath())
		require.NoError(t, err, "child: Acquire(%s)", l.LockPath())
		c.Mark("held")
		testkit.WaitFor(t, filepath.Join(c.Dir, "release"))
		h.Release()
		return
	}
	dir := t.TempDir()
	var runs atomic.Int32
	waiting := make(chan int32, 1) // fn's runs when Mutate is seen waiting for the lock
	r := mustRoot(NewRoot(dir, filetxn.WithLockOptions(lock.WithWaitReport(time.Millisecond, func(*lock.BusyError) { waiting <- runs.Load() }))))
	l := mustCreate(t, r, "nightly", Template{})
	g := testkit.Start(t, 1, dir)
	g.WaitMark("held")

	done := make(chan error, 1)
	go func() {
		_, err := l.Mutate(context.Background(), func(d *Doc) error {
			runs.Add(1)
			d.Template = "triage"
			return nil
		})
		done <- err
	}()
	before := testkit.Recv(t, waiting, "Mutate to wait for the child's lock")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "release"), nil, 0o644))
	require.NoError(t, testkit.Recv(t, done, "Mutate"), "Mutate(set template) after the child let go = got, want nil")
	g.Wait()

	require.Equal(t, int32(1), runs.Load(), "fn runs = %d, want 1", runs.Load())
	require.Zero(t, before, "fn runs before Mutate had the lock = %d, want 0", before)
	require.Equal(t, "triage", mustView(t, l).Template, "template after Mutate")
}

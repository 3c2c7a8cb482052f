package board

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
// holds the board's lock; the parent's Mutate, whose fn moves a row, waits
// for it without running fn, and once the child lets go runs fn exactly
// once and writes the move. Ablation: routing Store.Mutate to the engine's
// MutateProbed runs fn on a lock-free probe before the wait, then again
// under the lock: fn runs 2 times, and the test goes red.
func TestMutateRunsFnOnceWhileAnotherProcessHoldsTheLock(t *testing.T) {
	openIn := func(dir string, opts ...filetxn.Option) *Store {
		return open(t, filepath.Join(dir, "sprint-status.yaml"), append([]filetxn.Option{filetxn.WithStateRoot(filepath.Join(dir, "state"))}, opts...)...)
	}
	if c := testkit.Child(t); c != nil {
		lp, err := openIn(c.Dir).LockPath()
		require.NoError(t, err)
		h, err := lock.Acquire(context.Background(), lp)
		require.NoError(t, err, "child: Acquire(%s)", lp)
		c.Mark("held")
		testkit.WaitFor(t, filepath.Join(c.Dir, "release"))
		h.Release()
		return
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sprint-status.yaml"), []byte(sprint), 0o644))
	g := testkit.Start(t, 1, dir)
	g.WaitMark("held")

	var runs atomic.Int32
	waiting := make(chan int32, 1) // fn's runs when Mutate is seen waiting for the lock
	s := openIn(dir, filetxn.WithLockOptions(lock.WithWaitReport(time.Millisecond, func(*lock.BusyError) { waiting <- runs.Load() })))
	done := make(chan error, 1)
	go func() {
		_, err := s.Mutate(context.Background(), func(d *Doc) error {
			runs.Add(1)
			_, err := d.Advance("4-1-thing", Done)
			return err
		})
		done <- err
	}()
	before := testkit.Recv(t, waiting, "Mutate to wait for the child's lock")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "release"), nil, 0o644))
	require.NoError(t, testkit.Recv(t, done, "Mutate"), "Mutate(advance 4-1-thing) after the child let go = got, want nil")
	g.Wait()

	require.Equal(t, int32(1), runs.Load(), "fn runs = %d, want 1", runs.Load())
	require.Zero(t, before, "fn runs before Mutate had the lock = %d, want 0", before)
	d, err := s.View(context.Background())
	require.NoError(t, err)
	st, _ := d.Status("4-1-thing")
	require.Equal(t, Done, st, "4-1-thing after Mutate = %q, want done", st)
}

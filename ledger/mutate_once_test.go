package ledger

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// TestMutateRunsFnOnceWhileAnotherProcessHoldsTheLock: a child process
// holds the ledger's lock; the parent's Mutate, whose fn appends an entry,
// waits for it without running fn, and once the child lets go runs fn
// exactly once and writes the entry once. Ablation: routing Store.Mutate
// to the engine's MutateProbed runs fn on a lock-free probe before the
// wait, then again under the lock: fn runs 2 times, and the test goes red.
func TestMutateRunsFnOnceWhileAnotherProcessHoldsTheLock(t *testing.T) {
	open := func(dir string, opts ...filetxn.Option) *Store {
		return must(Open(filepath.Join(dir, "deferred-work.md"), append([]filetxn.Option{filetxn.WithStateRoot(filepath.Join(dir, "state"))}, opts...)...))
	}
	if c := testkit.Child(t); c != nil {
		lp, err := open(c.Dir).LockPath()
		require.NoError(t, err)
		h, err := lock.Acquire(context.Background(), lp)
		require.NoError(t, err, "child: Acquire(%s)", lp)
		c.Mark("held")
		testkit.WaitFor(t, filepath.Join(c.Dir, "release"))
		h.Release()
		return
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deferred-work.md"), []byte(ledgerFixture), 0o644))
	g := testkit.Start(t, 1, dir)
	g.WaitMark("held")

	var runs atomic.Int32
	waiting := make(chan int32, 1) // fn's runs when Mutate is seen waiting for the lock
	s := open(dir, filetxn.WithLockOptions(lock.WithWaitReport(time.Millisecond, func(*lock.BusyError) { waiting <- runs.Load() })))
	done := make(chan error, 1)
	go func() {
		_, err := s.Mutate(context.Background(), func(d *Doc) error {
			runs.Add(1)
			_, err := d.Append(Spec{Title: "Retry SMTP", Origin: "code review of spec-3-3.md", SourceSpec: "spec-3-3.md", Reason: "later"})
			return err
		})
		done <- err
	}()
	before := testkit.Recv(t, waiting, "Mutate to wait for the child's lock")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "release"), nil, 0o644))
	require.NoError(t, testkit.Recv(t, done, "Mutate"), "Mutate(append) after the child let go = got, want nil")
	g.Wait()

	require.Equal(t, int32(1), runs.Load(), "fn runs = %d, want 1", runs.Load())
	require.Zero(t, before, "fn runs before Mutate had the lock = %d, want 0", before)
	text := string(readOrNil(t, s.path))
	require.Equal(t, 1, strings.Count(text, "origin: code review of spec-3-3.md"), "the appended entry is in the ledger %d times, want 1:\n%s", strings.Count(text, "origin: code review of spec-3-3.md"), text)
}

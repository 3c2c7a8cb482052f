package filetxn

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// doneCtxCall is one entry point called with a done ctx. waits tells
// whether it must take the lock, so that it writes on a free one (the
// counter goes up by one) and fails on a busy one.
type doneCtxCall struct {
	name  string
	waits bool
	call  func(ctx context.Context, s *Store[*counter]) error
}

func doneCtxCalls() []doneCtxCall {
	inc := func(d *counter) error { d.n++; return nil }
	noop := func(d *counter) error { return nil }
	return []doneCtxCall{
		{"Mutate", true, func(ctx context.Context, s *Store[*counter]) error { _, err := s.Mutate(ctx, inc); return err }},
		{"MutateProbed", true, func(ctx context.Context, s *Store[*counter]) error { _, err := s.MutateProbed(ctx, inc); return err }},
		{"Locked", true, func(ctx context.Context, s *Store[*counter]) error {
			return s.Locked(ctx, func(tx *Tx) error {
				data, err := tx.Read(s.path)
				if err != nil {
					return err
				}
				d, err := counterCodec{}.Decode(data)
				if err != nil {
					return err
				}
				_, err = tx.Write(s.path, []byte(strconv.Itoa(d.n+1)+"\n"))
				return err
			})
		}},
		{"Restore", true, func(ctx context.Context, s *Store[*counter]) error {
			cur, err := os.ReadFile(s.path)
			if err != nil {
				return err
			}
			d, err := counterCodec{}.Decode(cur)
			if err != nil {
				return err
			}
			_, err = s.Restore(ctx, []byte(strconv.Itoa(d.n+1)+"\n"), digestOf(cur))
			return err
		}},
		{"MutateProbed no-op", false, func(ctx context.Context, s *Store[*counter]) error { _, err := s.MutateProbed(ctx, noop); return err }},
		{"View", false, func(ctx context.Context, s *Store[*counter]) error { _, err := s.View(ctx); return err }},
	}
}

// TestDoneContextRunsOnAFreeLock: a ctx that is already done bounds waiting
// and nothing else, so every entry point called with one on a free lock
// runs: a writing one writes, a reading one reads. Before, Mutate ran while
// View and MutateProbed returned ctx.Err() first. Ablation: putting back
// MutateProbed's early ctx.Err() return (or View's) turns it red.
func TestDoneContextRunsOnAFreeLock(t *testing.T) {
	for how, ctx := range testkit.DoneContexts() {
		for _, c := range doneCtxCalls() {
			t.Run(how+"/"+c.name, func(t *testing.T) {
				s := newCounter(t)
				require.NoError(t, os.WriteFile(s.path, []byte("41\n"), 0o644))
				err := c.call(ctx, s)
				require.NoError(t, err, "%s(%s ctx, free lock) = %v, want nil", c.name, how, err)
				want := "41\n"
				if c.waits {
					want = "42\n"
				}
				got := readCount(t, s.path)
				require.Equal(t, want, got, "file after %s(%s ctx, free lock) = %q, want %q", c.name, how, got, want)
			})
		}
	}
}

// TestDoneContextFailsAtOnceOnABusyLock: with the lock held by another
// process, every entry point that must take it, called with a ctx already
// done, returns at once an error matching ctx.Err() and carrying a
// *lock.BusyError, and leaves no goroutine and no descriptor behind (counted
// before and after, descriptors in /proc/self/fd where there is one); the
// entry points that need not wait (View, ReadBytes, a no-op MutateProbed)
// read as usual. Ablations: a lock.Acquire that starts its kernel wait in a
// goroutine without looking at ctx first (lockOS without its ctx.Err()
// check, as it was) leaves a goroutine blocked in flock, and the goroutine
// count goes red; View's early ctx.Err() return, put back, fails View.
func TestDoneContextFailsAtOnceOnABusyLock(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		h, err := lock.Acquire(context.Background(), filepath.Join(c.Dir, "count.txt.lock"), lock.WithPurpose("holding for the test"))
		require.NoError(t, err)
		defer h.Release()
		c.Mark("held")
		testkit.WaitFor(t, filepath.Join(c.Dir, "release"))
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "count.txt")
	require.NoError(t, os.WriteFile(path, []byte("41\n"), 0o644))
	g := testkit.Start(t, 1, dir)
	g.WaitMark("held")
	defer g.Wait()
	defer touch(t, filepath.Join(dir, "release"))

	s := must(NewStore[*counter](path, counterCodec{}))
	// One attempt that cannot wait first: the lock table keeps the lock
	// file's descriptor open for later acquisitions, which is not a leak.
	_, err := lock.TryAcquire(path + ".lock")
	require.ErrorIs(t, err, lock.ErrWouldBlock, "TryAcquire(busy lock) = %v, want ErrWouldBlock", err)

	for how, ctx := range testkit.DoneContexts() {
		for _, c := range doneCtxCalls() {
			goroutines, fds := runtime.NumGoroutine(), openFDs(t)
			start := time.Now()
			err := c.call(ctx, s)
			took := time.Since(start)
			if c.waits {
				var busy *lock.BusyError
				require.ErrorIs(t, err, ctx.Err(), "%s(%s ctx, busy lock) = %v, want an error matching %v", c.name, how, err, ctx.Err())
				require.True(t, errors.As(err, &busy) && busy.Holder != nil && busy.Holder.PID == g.Pid(0),
					"%s(%s ctx, busy lock) = %v, want a *lock.BusyError naming holder pid %d", c.name, how, err, g.Pid(0))
			} else {
				require.NoError(t, err, "%s(%s ctx, busy lock) = %v, want nil: it need not wait", c.name, how, err)
			}
			require.Less(t, took, 10*time.Second, "%s(%s ctx, busy lock) took %v, want it to return at once", c.name, how, took)
			require.Equal(t, goroutines, runtime.NumGoroutine(), "goroutines after %s(%s ctx, busy lock) = %d, want %d as before", c.name, how, runtime.NumGoroutine(), goroutines)
			require.Equal(t, fds, openFDs(t), "open descriptors after %s(%s ctx, busy lock) = %d, want %d as before", c.name, how, openFDs(t), fds)
		}
	}
	got := readCount(t, path)
	require.Equal(t, "41\n", got, "file after every call on a busy lock = %q, want it unchanged", got)
}

// openFDs returns the number of descriptors the process has open, or -1
// where /proc/self/fd does not tell. Under Wine it is the Linux side of
// Wine (Wine's own descriptors), not this program's handles.
func openFDs(t *testing.T) int {
	t.Helper()
	if testkit.Detected() {
		return -1
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(entries) - 1 // the directory being read
}

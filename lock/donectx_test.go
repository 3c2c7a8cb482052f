package lock_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// TestAcquireWithADoneContextNeverWaits is the package's rule for a context
// that is already done: it bounds waiting and nothing else. Acquire with a
// cancelled (or expired) ctx on a lock held by another process returns at
// once a *BusyError that unwraps to ctx.Err() and names the holder, and
// leaves no goroutine and no descriptor behind (counted right after the
// call, with no grace period: nothing may have been started). On a lock
// held by another goroutine it returns the same at once; on a free lock it
// takes the lock.
//
// Ablation that turns it red: lockOS without its ctx.Err() check before the
// kernel-level wait: waitOS starts its goroutine, which stays blocked in
// flock(2) until the other process lets go, and the goroutine count is one
// higher.
func TestAcquireWithADoneContextNeverWaits(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		childAcquire(c, filepath.Join(c.Dir, "x.lock"), lock.WithPurpose("holder"))
		c.Mark("held")
		waitToBeKilled(c)
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	g := testkit.Start(t, 1, dir)
	g.WaitMark("held")
	// The first failed attempt opens the descriptor that the package then
	// keeps (doc.go: up to 16); that cache is not a leak.
	_, err := lock.TryAcquire(path)
	require.ErrorIs(t, err, lock.ErrWouldBlock, "TryAcquire(%q) while another process holds", path)
	fds, goroutines := countFDs(t), runtime.NumGoroutine()

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, ctx := range []context.Context{cancelled, expired} {
		_, err := lock.Acquire(ctx, path)
		var busy *lock.BusyError
		require.ErrorAs(t, err, &busy, "Acquire(done ctx, %q) while another process holds = %v, want a *BusyError", path, err)
		require.ErrorIs(t, err, ctx.Err(), "Acquire(done ctx, %q) = %v, want it to unwrap to %v", path, err, ctx.Err())
		require.True(t, busy.Holder != nil && busy.Holder.PID == g.Pid(0), "Acquire(done ctx, %q) = BusyError{Holder: %v}, want pid %d", path, busy.Holder, g.Pid(0))
		require.LessOrEqual(t, runtime.NumGoroutine(), goroutines, "goroutines after Acquire(done ctx, %q), want no more than before", path)
		require.LessOrEqual(t, countFDs(t), fds, "descriptors after Acquire(done ctx, %q), want no more than before", path)
	}

	// Held by another goroutine of this process.
	inproc := filepath.Join(dir, "inproc.lock")
	held := make(chan struct{})
	letGo := make(chan struct{})
	go func() {
		h, err := lock.Acquire(context.Background(), inproc)
		if err == nil {
			close(held)
			<-letGo
			h.Release()
		}
	}()
	<-held
	_, err = lock.Acquire(cancelled, inproc)
	close(letGo)
	require.ErrorIs(t, err, context.Canceled, "Acquire(cancelled, %q) while another goroutine holds = %v, want context.Canceled", inproc, err)
	var busy *lock.BusyError
	require.ErrorAs(t, err, &busy, "Acquire(cancelled, %q) = %v, want a *BusyError", inproc, err)

	// Free: a done ctx does not stop a call that need not wait.
	free := filepath.Join(dir, "free.lock")
	h, err := lock.Acquire(cancelled, free)
	require.NoError(t, err, "Acquire(cancelled, %q) on a free lock = %v, want nil", free, err)
	require.NoError(t, h.Release())
}

package lock_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/lock"
)

// TestStalledReleaseStallsOnlyItsLock: a Release whose I/O stalls (the hook
// blocks where release clears the holder record and unlocks, as a stuck
// file system would) must not stall the process's other locks: another
// lock's Acquire and Release complete meanwhile, and a TryAcquire of the
// stalled lock says busy at once instead of waiting. Once the I/O goes on,
// the Release returns and the lock is free.
//
// Ablation that turns it red: release doing its I/O with table.mu held (as
// it did): the other lock's Acquire waits for the mutex until the bound.
func TestStalledReleaseStallsOnlyItsLock(t *testing.T) {
	dir := t.TempDir()
	stalled, other := filepath.Join(dir, "stalled.lock"), filepath.Join(dir, "other.lock")
	entered, resume := make(chan struct{}), make(chan struct{})
	var once, resumeOnce sync.Once
	goOn := func() { resumeOnce.Do(func() { close(resume) }) }
	t.Cleanup(goOn)
	onPoint(t, seam.Unlock, func(path string) {
		if path == stalled {
			once.Do(func() { close(entered); <-resume })
		}
	})
	h, err := lock.Acquire(context.Background(), stalled)
	require.NoError(t, err, "Acquire(%q)", stalled)
	released := make(chan error, 1)
	go func() { released <- h.Release() }()
	<-entered

	done := make(chan error, 1)
	go func() {
		h, err := lock.Acquire(context.Background(), other)
		if err == nil {
			err = h.Release()
		}
		done <- err
	}()
	require.NoError(t, assertDone(t, done, "Acquire and Release of another lock while a release stalls"))
	_, err = lock.TryAcquire(stalled)
	require.ErrorIs(t, err, lock.ErrWouldBlock, "TryAcquire(%q) while its release stalls = %v, want ErrWouldBlock", stalled, err)

	goOn()
	require.NoError(t, assertDone(t, released, "the stalled Release"))
	h, err = lock.TryAcquire(stalled)
	require.NoError(t, err, "TryAcquire(%q) after the release went on = %v, want nil", stalled, err)
	require.NoError(t, h.Release())
}

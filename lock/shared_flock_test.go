//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package lock_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/filetxn/filetxn/lock"
)

// TestSharedWaitersJoinAPendingSharedLock: two goroutines ask for a shared lock
// while another open file description (as good as another process) holds it
// exclusively; one waits in the kernel, the other at the in-process gate. When
// the exclusive holder lets go, both must hold the lock together, the second
// without waiting for the first to release. Ablation: not waking the gate when
// a pending acquisition becomes a shared hold makes this red (the second
// waits until its context ends, while the first holds on for it).
func TestSharedWaitersJoinAPendingSharedLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	other, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := unix.Flock(int(other.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	waiting := make(chan struct{}, 2)
	report := lock.WithWaitReport(time.Millisecond, func(lock.WaitReport) { waiting <- struct{}{} })
	type result struct {
		h   *lock.Handle
		err error
	}
	got := make(chan result, 2)
	for range 2 {
		go func() {
			h, err := lock.Acquire(ctx, path, lock.WithMode(lock.Shared), report)
			got <- result{h, err}
		}()
	}
	<-waiting
	<-waiting
	if err := unix.Flock(int(other.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		r := <-got // the first one holds on until the second has the lock too
		if r.err != nil {
			t.Fatalf("shared Acquire #%d after the exclusive holder left = %v, want the lock beside the other shared holder", i+1, r.err)
		}
		defer r.h.Release()
	}
}

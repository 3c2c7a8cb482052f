package lock_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// TestAcquireAllCannotDeadlockOnOrder: two goroutines take the same two
// locks over and over, one asking for (a, b), the other for (b, a); through
// AcquireAll both always finish, since each takes the two in the order of
// their identities. Ablation: acquiring in the order of paths deadlocks the
// two, and their generous contexts end with an error.
func TestAcquireAllCannotDeadlockOnOrder(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.lock"), filepath.Join(dir, "b.lock")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, paths := range [][]string{{a, b}, {b, a}} {
		wg.Go(func() {
			for range 300 {
				hs, err := lock.AcquireAll(ctx, paths)
				if err != nil {
					errs <- err
					return
				}
				for i, h := range hs {
					if h.Path() != paths[i] {
						errs <- errors.New("AcquireAll returned the handles out of order")
					}
				}
				for _, h := range hs {
					h.Release()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("AcquireAll(opposite orders) = %v, want both to finish", err)
	}
}

// TestAcquireAllRefusesOneFileTwice: two spellings of one lock file (the
// same path, a dot-dot spelling, a symlink to it, a hard link to it) are
// refused with ErrReentrant, naming the second, and nothing stays held: the
// files are told apart by identity, not by spelling.
func TestAcquireAllRefusesOneFileTwice(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.lock")
	link := filepath.Join(dir, "link.lock")
	hard := filepath.Join(dir, "hard.lock")
	require.NoError(t, os.WriteFile(a, nil, 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	sep := string(filepath.Separator)
	dotdot := filepath.Join(dir, "sub") + sep + ".." + sep + "a.lock" // not cleaned
	paths := [][]string{{a, a}, {a, dotdot}}
	// Under Wine os.Symlink returns nil and makes nothing (testkit.NoSymlinks).
	if err := os.Symlink(a, link); err == nil && !testkit.Detected() {
		paths = append(paths, []string{a, link})
	}
	if err := os.Link(a, hard); err == nil {
		paths = append(paths, []string{hard, a})
	}
	for _, ps := range paths {
		hs, err := lock.AcquireAll(context.Background(), ps)
		require.ErrorIs(t, err, lock.ErrReentrant, "AcquireAll(%q) = %v, want ErrReentrant", ps, err)
		require.Nil(t, hs, "AcquireAll(%q) handles", ps)
		h, err := lock.TryAcquire(a)
		require.NoError(t, err, "TryAcquire(%s) after a refused AcquireAll = %v, want the lock free", a, err)
		h.Release()
	}
}

// TestAcquireAllHoldsAllOrNone: when one of two locks is busy (each in
// turn, so that in one of the cases the free one is taken first) and ctx
// ends the wait, AcquireAll returns the *BusyError and holds nothing.
// Ablation: not releasing the handles taken before the failure leaves the
// free lock held, and the TryAcquire below fails.
func TestAcquireAllHoldsAllOrNone(t *testing.T) {
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "a.lock"), filepath.Join(dir, "b.lock")}
	for i := range paths {
		busy, free := paths[i], paths[1-i]
		held := make(chan *lock.Handle)
		go func() { // another goroutine holds busy
			h, err := lock.Acquire(context.Background(), busy)
			if err != nil {
				panic(err)
			}
			held <- h
		}()
		hb := <-held
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		hs, err := lock.AcquireAll(ctx, paths)
		var be *lock.BusyError
		require.ErrorAs(t, err, &be, "AcquireAll(%q) with %s busy = %v, want a *BusyError", paths, busy, err)
		require.Nil(t, hs)
		h, err := lock.TryAcquire(free)
		require.NoError(t, err, "TryAcquire(%s) after a failed AcquireAll = %v, want it free", free, err)
		h.Release()
		hb.Release()
	}
}

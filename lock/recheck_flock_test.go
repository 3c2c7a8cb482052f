//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package lock_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// The tests in this file delete or replace a lock file while it is locked
// or about to be. They are Unix-only: Windows refuses to delete or rename
// over a file that is open without FILE_SHARE_DELETE, as every lock file
// the package holds is.

// lockedAtPath reports whether the file now at path is locked by some open
// file description: a fresh open of it (a description of its own, which
// contends like another process) cannot take LOCK_EX|LOCK_NB.
func lockedAtPath(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err, "OpenFile(%q)", path)
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return false
	}
	require.ErrorIs(t, err, unix.EWOULDBLOCK, "flock(%q, LOCK_EX|LOCK_NB)", path)
	return true
}

// pull returns a function that removes the lock file at path, or renames
// another file over it, the first time it is called: what a cleaner of the
// state directory does to a lock that is about to be granted.
func pull(t *testing.T, how, path string) func(string) {
	var once sync.Once
	return func(string) {
		once.Do(func() {
			switch how {
			case "deleted":
				require.NoError(t, os.Remove(path))
			case "replaced":
				other := path + ".other"
				require.NoError(t, os.WriteFile(other, nil, 0o600))
				require.NoError(t, os.Rename(other, path))
			}
		})
	}
}

// TestAcquireGrantedOnAPulledFileLocksTheFileAtThePath: the lock file is
// deleted, or another file renamed over it, after Acquire opened it and
// before the kernel grants the lock (the hook between the two). Acquire must
// still return a handle on the file now at the path: Current is true, the
// file there is locked, and for "replaced" it is the file renamed there (not
// a new one).
//
// Ablation that turns it red: lockOS skipping its movedFrom re-check after
// the grant: the handle holds the pulled inode, Current is false and nothing
// locks the file at the path.
func TestAcquireGrantedOnAPulledFileLocksTheFileAtThePath(t *testing.T) {
	for _, how := range []string{"deleted", "replaced"} {
		t.Run(how, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.lock")
			require.NoError(t, os.WriteFile(path, nil, 0o600))
			onPoint(t, seam.Opened, pull(t, how, path))
			h := mustAcquire(t, path)
			ok, err := h.Current()
			require.NoError(t, err)
			require.True(t, ok, "Current() after Acquire on a %s lock file = false, want true", how)
			require.True(t, lockedAtPath(t, path), "file at %q locked after Acquire = false, want true", path)
			if how == "replaced" {
				_, err := os.Stat(path + ".other")
				require.ErrorIs(t, err, fs.ErrNotExist, "the replacing file is the one at the path")
			}
		})
	}
}

// TestAcquireWithoutCreateOnAPulledFileFailsNotExist: with WithoutCreate,
// a lock file deleted just before the grant makes Acquire fail with
// fs.ErrNotExist, and nothing is created at the path.
//
// Ablation that turns it red: lockOS skipping its movedFrom re-check: Acquire
// returns a handle on the deleted file.
func TestAcquireWithoutCreateOnAPulledFileFailsNotExist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	onPoint(t, seam.Opened, pull(t, "deleted", path))
	h, err := lock.Acquire(context.Background(), path, lock.WithoutCreate())
	if h != nil {
		h.Release()
	}
	require.ErrorIs(t, err, fs.ErrNotExist, "Acquire(%q, WithoutCreate) on a lock file deleted before the grant = %v, want fs.ErrNotExist", path, err)
	_, err = os.Stat(path)
	require.ErrorIs(t, err, fs.ErrNotExist, "Stat(%q) after the failed Acquire", path)
}

// TestGateWaiterOfADeletedFileQueuesOnTheNewOne: goroutine A holds the lock,
// B waits for it in this process, and the lock file is deleted. C then gets
// the lock at once: the path names a new file, which nobody holds. When A
// lets go, B is granted the deleted file, must notice, and wait for C on the
// new file; when C lets go, B holds the new file.
//
// Ablation that turns it red: lockOS skipping its movedFrom re-check: B is
// granted the deleted file while C holds the new one, and returns at once.
func TestGateWaiterOfADeletedFileQueuesOnTheNewOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	a := mustAcquire(t, path)
	done := make(chan error, 1)
	var b *lock.Handle
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		var err error
		b, err = lock.Acquire(ctx, path)
		done <- err
	}()
	assertBlocked(t, done, "Acquire by B while A holds")
	require.NoError(t, os.Remove(path))

	c, err := lock.TryAcquire(path)
	require.NoError(t, err, "TryAcquire(%q) by C after the held file was deleted = %v, want nil", path, err)
	ok, _ := a.Current()
	require.False(t, ok, "A's Current() after the delete = true, want false")

	require.NoError(t, a.Release())
	assertBlocked(t, done, "Acquire by B while C holds the new file")
	require.NoError(t, c.Release())
	require.NoError(t, assertDone(t, done, "Acquire by B after C released"))
	defer b.Release()
	ok, err = b.Current()
	require.NoError(t, err)
	require.True(t, ok, "B's Current() = false, want true")
	require.True(t, lockedAtPath(t, path), "file at %q locked while B holds = false, want true", path)
}

// TestLockFilePulledFromUnderAHolderProcess: a child process holds the lock
// and waits; the parent deletes the lock file ("deleted") or renames another
// file over it ("replaced"). A second process then takes the lock at once
// (on the file now at the path, which its Current confirms), and the
// holder's Current reports false: the signal on which a writer publishes
// nothing and returns ErrLockLost.
//
// Ablation that turns it red: Current comparing the path's identity with
// itself instead of with the held file's (always true): the holder's check
// fails.
func TestLockFilePulledFromUnderAHolderProcess(t *testing.T) {
	for _, how := range []string{"deleted", "replaced"} {
		t.Run(how, func(t *testing.T) {
			if c := testkit.Child(t); c != nil {
				path := filepath.Join(c.Dir, "x.lock")
				if c.Args == "second" {
					h, err := lock.TryAcquire(path)
					require.NoError(t, err, "second: TryAcquire(%q) after the lock file was %s = %v, want nil", path, how, err)
					ok, err := h.Current()
					require.True(t, ok && err == nil, "second: Current() = %v, %v, want true", ok, err)
					require.NoError(t, h.Release())
					return
				}
				h := childAcquire(c, path, lock.WithPurpose("holder"))
				c.Mark("held")
				waitFile(t, filepath.Join(c.Dir, "check"))
				ok, err := h.Current()
				require.True(t, !ok && err == nil, "holder: Current() after the lock file was %s = %v, %v, want false, nil", how, ok, err)
				require.NoError(t, h.Release())
				return
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "x.lock")
			g := testkit.Start(t, 1, dir)
			g.WaitMark("held")
			if _, err := lock.TryAcquire(path); !errors.Is(err, lock.ErrWouldBlock) {
				t.Fatalf("TryAcquire(%q) while the holder holds = %v, want ErrWouldBlock", path, err)
			}
			pull(t, how, path)(path)
			testkit.StartWith(t, 1, dir, testkit.Options{Args: "second"}).Wait()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "check"), nil, 0o644))
			g.Wait()
		})
	}
}

// TestProcessGrantedADeletedFileHoldsTheFileAtThePath: a child process whose
// lock file is deleted between its open and the grant (the hook) ends up
// holding the lock on the file now at the path: another process finds it
// busy and sees the child's holder record there.
//
// Ablation that turns it red: lockOS skipping its movedFrom re-check: the
// child holds the deleted file, and the parent's TryAcquire creates and
// takes the one at the path.
func TestProcessGrantedADeletedFileHoldsTheFileAtThePath(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		path := filepath.Join(c.Dir, "x.lock")
		onPoint(t, seam.Opened, pull(t, "deleted", path))
		h := childAcquire(c, path, lock.WithPurpose("granted a deleted file"))
		c.Mark("held")
		waitFile(t, filepath.Join(c.Dir, "done"))
		require.NoError(t, h.Release())
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	g := testkit.Start(t, 1, dir)
	g.WaitMark("held")
	h, err := lock.TryAcquire(path)
	if h != nil {
		h.Release()
	}
	var busy *lock.BusyError
	require.ErrorAs(t, err, &busy, "TryAcquire(%q) while the child holds = %v, want a *BusyError", path, err)
	require.True(t, busy.Holder != nil && busy.Holder.PID == g.Pid(0),
		"TryAcquire(%q) = BusyError{Holder: %v}, want the child's pid %d", path, busy.Holder, g.Pid(0))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "done"), nil, 0o644))
	g.Wait()
}

// TestReacquiringAPulledFileLocksTheFileAtThePath: a lock is taken and
// released, which leaves its descriptor in the table and its path
// remembered, and then the lock file is deleted, or another file renamed
// over it, with nothing held. The next Acquire by the same path must lock the
// file now at the path, not the remembered descriptor's (and with
// WithoutCreate fail with fs.ErrNotExist once the file is deleted).
//
// Ablation that turns it red: acquireCached skipping its movedFrom re-check
// after the grant: the handle holds the pulled inode, Current is false and
// nothing locks the file at the path.
func TestReacquiringAPulledFileLocksTheFileAtThePath(t *testing.T) {
	for _, how := range []string{"deleted", "replaced", "deleted/WithoutCreate"} {
		t.Run(how, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.lock")
			first, err := lock.Acquire(context.Background(), path)
			require.NoError(t, err, "Acquire(%q)", path)
			require.NoError(t, first.Release(), "Release()")
			if how == "deleted/WithoutCreate" {
				pull(t, "deleted", path)(path)
				h, err := lock.Acquire(context.Background(), path, lock.WithoutCreate())
				if h != nil {
					h.Release()
				}
				require.ErrorIs(t, err, fs.ErrNotExist, "Acquire(%q, WithoutCreate) after the file was deleted = %v, want fs.ErrNotExist", path, err)
				return
			}
			pull(t, how, path)(path)
			h := mustAcquire(t, path)
			ok, err := h.Current()
			require.NoError(t, err)
			require.True(t, ok, "Current() after re-acquiring a %s lock file = false, want true", how)
			require.True(t, lockedAtPath(t, path), "file at %q locked after Acquire = false, want true", path)
		})
	}
}

// TestRelativePathAfterChdirLocksTheFileItNamesNow: a relative lock path is
// taken and released in one directory, the process changes directory, and
// the same relative path is taken again: the handle holds the file the path
// names now (Current is true, that file is locked), not the file the table
// remembers for that spelling, which is left unlocked.
//
// Ablation that turns it red: acquireCached skipping its movedFrom re-check
// after the grant: the handle holds the first directory's file.
func TestRelativePathAfterChdirLocksTheFileItNamesNow(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	t.Chdir(a)
	first, err := lock.Acquire(context.Background(), "x.lock")
	require.NoError(t, err, "Acquire(%q) in %s", "x.lock", a)
	require.NoError(t, first.Release(), "Release()")
	t.Chdir(b)
	h := mustAcquire(t, "x.lock")
	ok, err := h.Current()
	require.True(t, ok && err == nil, "Current() after Acquire(%q) in another directory = %v, %v, want true, nil", "x.lock", ok, err)
	require.True(t, lockedAtPath(t, filepath.Join(b, "x.lock")), "%s/x.lock locked = false, want true", b)
	require.False(t, lockedAtPath(t, filepath.Join(a, "x.lock")), "%s/x.lock locked = true, want false", a)
}

// waitFile waits (at most bound) until a file exists at path. Unlike
// testkit.WaitFor it gives up after bound, so that a child stuck because of a
// broken lock fails in seconds rather than minutes.
func waitFile(t *testing.T, path string) {
	t.Helper()
	waitUntil(t, "file "+filepath.Base(path), func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

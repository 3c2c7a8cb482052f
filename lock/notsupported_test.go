package lock_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/filetxn/filetxn/lock"
)

// noLockDirEnv names a directory on a file system that refuses locks (for
// example an NFS mount without a lock manager, which answers ENOLCK), for
// TestAcquireOnAFileSystemThatRefusesLocks. Without it the test is skipped:
// no local file system refuses flock(2), and faking the errno would test
// nothing but the fake.
const noLockDirEnv = "FILETXN_TEST_NOLOCK_DIR"

// TestAcquireOnAFileSystemThatRefusesLocks: where the file system cannot
// lock, Acquire and TryAcquire fail with a *fs.PathError naming the lock
// file that matches ErrNotSupported, rather than ErrWouldBlock or a hang.
func TestAcquireOnAFileSystemThatRefusesLocks(t *testing.T) {
	dir := os.Getenv(noLockDirEnv)
	if dir == "" {
		t.Skipf("no file system that refuses locks is available; set %s to a directory on one (such as an NFS mount without lockd) to run this test", noLockDirEnv)
	}
	dir, err := os.MkdirTemp(dir, "filetxn-nolock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "x.lock")
	for name, try := range map[string]func() (*lock.Handle, error){
		"Acquire":    func() (*lock.Handle, error) { return lock.Acquire(context.Background(), path) },
		"TryAcquire": func() (*lock.Handle, error) { return lock.TryAcquire(path) },
	} {
		h, err := try()
		if err == nil {
			h.Release()
			t.Fatalf("%s(%q) on %s = nil error, want ErrNotSupported (does this file system lock after all?)", name, path, dir)
		}
		var pe *fs.PathError
		if !errors.Is(err, lock.ErrNotSupported) || !errors.As(err, &pe) || pe.Path != path || !strings.Contains(err.Error(), path) {
			t.Errorf("%s(%q) = %v, want a *fs.PathError naming the path and matching ErrNotSupported", name, path, err)
		}
	}
}

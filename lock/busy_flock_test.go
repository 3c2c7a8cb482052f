//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package lock_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/lock"
)

// TestBusyErrorNamesTheHolderWhateverItsRecordsLength: a lock busy in
// another open file description (another process, as the kernel sees it)
// and one busy in this process both give a *BusyError naming the holder
// its record describes, for a record that fits the small read a busy
// acquisition makes and for longer ones, which are read again in full.
// (Ablation: parsing the small read as it is, without falling back to the
// full read when it holds no newline, loses the holder of every record
// longer than it, and the test fails.)
func TestBusyErrorNamesTheHolderWhateverItsRecordsLength(t *testing.T) {
	for _, n := range []int{0, 10, 150, 170, 400, 3000} {
		purpose := strings.Repeat("p", n)
		t.Run("elsewhere", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.lock")
			rec, err := json.Marshal(map[string]any{"pid": 4242, "program": "other", "purpose": purpose, "acquired": "2026-01-02T03:04:05Z"})
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, append(append([]byte("\n"), rec...), '\n'), 0o600))
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			require.NoError(t, err)
			defer f.Close()
			require.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_EX), "flock(%s)", path)

			h, err := lock.TryAcquire(path)
			if err == nil {
				h.Release()
			}
			var be *lock.BusyError
			require.True(t, errors.As(err, &be), "TryAcquire(%s) = %v, want a *BusyError", path, err)
			require.NotNil(t, be.Holder, "TryAcquire(%s).Holder = nil, want pid 4242 with a %d-byte purpose", path, n)
			require.Equal(t, 4242, be.Holder.PID, "TryAcquire(%s).Holder.PID = %d, want 4242", path, be.Holder.PID)
			require.Equal(t, purpose, be.Holder.Purpose, "TryAcquire(%s).Holder.Purpose has %d bytes, want %d", path, len(be.Holder.Purpose), n)
		})
		t.Run("here", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.lock")
			h := mustAcquire(t, path, lock.WithPurpose(purpose))
			defer h.Release()
			errc := make(chan error, 1)
			go func() { // another goroutine: the holder's own would get ErrReentrant
				h2, err := lock.TryAcquire(path)
				if err == nil {
					h2.Release()
				}
				errc <- err
			}()
			err := <-errc
			var be *lock.BusyError
			require.True(t, errors.As(err, &be), "TryAcquire(%s) = %v, want a *BusyError", path, err)
			require.NotNil(t, be.Holder, "TryAcquire(%s).Holder = nil, want this process with a %d-byte purpose", path, n)
			require.Equal(t, os.Getpid(), be.Holder.PID, "TryAcquire(%s).Holder.PID = %d, want %d", path, be.Holder.PID, os.Getpid())
			require.Equal(t, purpose, be.Holder.Purpose, "TryAcquire(%s).Holder.Purpose has %d bytes, want %d", path, len(be.Holder.Purpose), n)

			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			go func() {
				_, err := lock.Acquire(ctx, path)
				errc <- err
			}()
			err = <-errc
			require.True(t, errors.As(err, &be), "Acquire(done ctx, %s) = %v, want a *BusyError", path, err)
			require.NotNil(t, be.Holder, "Acquire(done ctx, %s).Holder = nil, want this process", path)
			require.Equal(t, purpose, be.Holder.Purpose, "Acquire(done ctx, %s).Holder.Purpose has %d bytes, want %d", path, len(be.Holder.Purpose), n)
		})
	}
}

// TestTryAcquireOfAReplacedLockFileTakesTheFileAtThePath: when the lock file
// whose descriptor the process keeps is locked elsewhere but no longer at
// its path (another file was renamed over it), a TryAcquire of the path
// takes the free file now there instead of answering busy for the old one.
// (Ablation: going on from the busy answer of the kept descriptor without
// re-checking the path first, as a contended acquisition now does, makes
// TryAcquire answer busy, and the test fails.)
func TestTryAcquireOfAReplacedLockFileTakesTheFileAtThePath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	h := mustAcquire(t, path)
	require.NoError(t, h.Release()) // the process keeps the descriptor and remembers the path

	old, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer old.Close()
	require.NoError(t, unix.Flock(int(old.Fd()), unix.LOCK_EX), "flock(%s)", path)
	fresh := filepath.Join(dir, "fresh")
	require.NoError(t, os.WriteFile(fresh, nil, 0o600))
	require.NoError(t, os.Rename(fresh, path), "rename over %s", path)

	h, err = lock.TryAcquire(path)
	require.NoError(t, err, "TryAcquire(%s) with the old file locked elsewhere and a free one at the path = %v, want nil", path, err)
	defer h.Release()
	ok, err := h.Current()
	require.True(t, ok && err == nil, "Current() = %v, %v, want true, nil: the handle holds the file at the path", ok, err)
	require.True(t, lockedAtPath(t, path), "the file at %s is not locked after TryAcquire", path)
}

// TestAcquireWaitingOnAReplacedLockFileTakesTheFileAtThePath: a contended
// Acquire of a lock file whose descriptor the process keeps goes on from
// its first, busy attempt on that descriptor to the wait (see
// acquireCached); when the file it waited on is no longer at the path once
// the lock is granted, Acquire takes the file now at the path. The hook runs
// when the acquisition has found the kept descriptor busy and still at the
// path, and is about to wait: it renames another file over the path and
// frees the old one. (Ablation: acquireCached returning lockOS's outcome
// although lockOS reports the file moved makes Acquire return a nil Handle
// and a nil error, and the test fails.)
func TestAcquireWaitingOnAReplacedLockFileTakesTheFileAtThePath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	h := mustAcquire(t, path)
	require.NoError(t, h.Release()) // the process keeps the descriptor and remembers the path

	old, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer old.Close()
	require.NoError(t, unix.Flock(int(old.Fd()), unix.LOCK_EX), "flock(%s)", path)
	pulled := false
	onPoint(t, seam.Inherited, func(string) {
		if pulled {
			return
		}
		pulled = true
		fresh := filepath.Join(dir, "fresh")
		require.NoError(t, os.WriteFile(fresh, nil, 0o600))
		require.NoError(t, os.Rename(fresh, path), "rename over %s", path)
		require.NoError(t, unix.Flock(int(old.Fd()), unix.LOCK_UN), "unlock the old %s", path)
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err = lock.Acquire(ctx, path)
	require.True(t, pulled, "the acquisition never found the lock busy")
	require.NoError(t, err, "Acquire(%s) with the old file freed and replaced while it was about to wait = %v, want nil", path, err)
	require.NotNil(t, h, "Acquire(%s) = nil Handle, nil error", path)
	defer h.Release()
	ok, err := h.Current()
	require.True(t, ok && err == nil, "Current() = %v, %v, want true, nil: the handle holds the file at the path", ok, err)
	require.True(t, lockedAtPath(t, path), "the file at %s is not locked after Acquire", path)
}

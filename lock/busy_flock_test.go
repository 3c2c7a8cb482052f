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

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

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

package lock_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// TestAcquireRefusesALockFileThatIsNotRegular puts a named pipe, a
// directory, a unix socket and a device at the lock file's path (those this
// system can make): TryAcquire, Acquire and AcquireAll, with and without
// WithoutCreate, return at once an *fs.PathError naming the path and
// wrapping atomicfile.ErrNotRegular, hold nothing, keep no descriptor open
// and leave the file as it was. Ablation: opening the lock file with
// os.OpenFile, as before, locks the pipe and the device (and writes the
// holder record into the device: a link to a disk or a terminal got JSON
// at offset 1), and gives a bare EISDIR for the directory and "no such
// device or address" (ENXIO) for the socket.
func TestAcquireRefusesALockFileThatIsNotRegular(t *testing.T) {
	ctx := context.Background()
	calls := map[string]func(path string, opts ...lock.Option) error{
		"TryAcquire": func(path string, opts ...lock.Option) error {
			h, err := lock.TryAcquire(path, opts...)
			if h != nil {
				h.Release()
			}
			return err
		},
		"Acquire": func(path string, opts ...lock.Option) error {
			h, err := lock.Acquire(ctx, path, opts...)
			if h != nil {
				h.Release()
			}
			return err
		},
		"AcquireAll": func(path string, opts ...lock.Option) error {
			hs, err := lock.AcquireAll(ctx, []string{path}, opts...)
			for _, h := range hs {
				h.Release()
			}
			return err
		},
	}
	for kind, path := range testkit.Make(t) {
		before, err := os.Lstat(path)
		require.NoError(t, err)
		for name, call := range calls {
			for _, create := range []bool{true, false} {
				label, opts := name, []lock.Option(nil)
				if !create {
					label, opts = name+"/WithoutCreate", []lock.Option{lock.WithoutCreate()}
				}
				t.Run(kind+"/"+label, func(t *testing.T) {
					fds := countFDs(t)
					err := testkit.Within(t, func() error { return call(path, opts...) })
					require.ErrorIs(t, err, atomicfile.ErrNotRegular, "%s(%s) = %v, want an error wrapping atomicfile.ErrNotRegular", label, kind, err)
					var pe *fs.PathError
					require.True(t, errors.As(err, &pe) && pe.Path == path, "%s(%s) = %v, want an *fs.PathError naming %s", label, kind, err, path)
					require.Equal(t, fds, countFDs(t), "%s(%s): open descriptors = %d after, want %d as before", label, kind, countFDs(t), fds)
					after, err := os.Lstat(path)
					require.True(t, err == nil && after.Mode().Type() == before.Mode().Type() && os.SameFile(before, after),
						"%s(%s) left %v, %v at the path, want the %s untouched", label, kind, after, err, kind)
				})
			}
		}
	}
}

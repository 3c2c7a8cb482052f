package lock_test

import (
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// TestReadHolderRefusesNonRegularFilesAtOnce puts a named pipe nobody has
// open, a directory, a unix socket and a device at the lock file's path
// (those this system can make): ReadHolder, which says it does not block,
// returns at once an *fs.PathError naming the path and wrapping
// atomicfile.ErrNotRegular, and keeps no descriptor open. Ablation: opening
// with os.Open, as before, hangs on the pipe (the open waits for a writer,
// forever: the guard fails the test), reads the device as a free lock, and
// gives a bare EISDIR or ENXIO for the directory and the socket.
func TestReadHolderRefusesNonRegularFilesAtOnce(t *testing.T) {
	for kind, path := range testkit.Make(t) {
		t.Run(kind, func(t *testing.T) {
			fds := countFDs(t)
			type result struct {
				h   *lock.Holder
				err error
			}
			r := testkit.Within(t, func() result { h, err := lock.ReadHolder(path); return result{h, err} })
			require.ErrorIs(t, r.err, atomicfile.ErrNotRegular, "ReadHolder(%s) = %v, %v, want an error wrapping atomicfile.ErrNotRegular", kind, r.h, r.err)
			var pe *fs.PathError
			require.True(t, errors.As(r.err, &pe) && pe.Path == path, "ReadHolder(%s) = %v, want an *fs.PathError naming %s", kind, r.err, path)
			require.Nil(t, r.h, "ReadHolder(%s) = %v, want no holder with the error", kind, r.h)
			require.Equal(t, fds, countFDs(t), "ReadHolder(%s): open descriptors = %d after, want %d as before", kind, countFDs(t), fds)
			_, err := os.Lstat(path)
			require.NoError(t, err, "ReadHolder(%s) removed the file", kind)
		})
	}
}

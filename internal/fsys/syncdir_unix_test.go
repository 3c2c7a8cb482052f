//go:build unix

package fsys

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/filetxn/filetxn/internal/testkit"
)

// TestSyncDirRefusesWhatIsNotADirectoryAtOnce: a directory replaced by a
// named pipe nobody writes to, a socket or a device between a rename and
// the fsync of its directory gives an *fs.PathError naming it and matching
// ENOTDIR at once. Ablation: opening without O_DIRECTORY (as the version for
// Unix systems other than Linux did) hangs on the pipe, forever, waiting for
// a writer: the guard fails the test.
func TestSyncDirRefusesWhatIsNotADirectoryAtOnce(t *testing.T) {
	for kind, path := range testkit.Make(t) {
		t.Run(kind, func(t *testing.T) {
			err := testkit.Within(t, func() error { return SyncDir(path) })
			if kind == "directory" {
				require.NoError(t, err, "SyncDir(directory)")
				return
			}
			var pe *fs.PathError
			require.True(t, errors.Is(err, unix.ENOTDIR) && errors.As(err, &pe) && pe.Path == path,
				"SyncDir(%s) = %v, want an *fs.PathError naming %s and matching ENOTDIR", kind, err, path)
		})
	}
}

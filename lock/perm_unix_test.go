//go:build unix

package lock_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/lock"
)

// TestLockFilesAndTheirDirectoriesAreOwnerOnly: the package doc says lock
// files are created 0600 in directories created 0700 (under the umask).
// Acquire of a lock file two missing directories deep makes both
// directories and the file with no permission bit for the group or others,
// and the file keeps them after Release.
func TestLockFilesAndTheirDirectoriesAreOwnerOnly(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "state", "locks", "a.lock")
	h, err := lock.Acquire(context.Background(), path)
	require.NoError(t, err, "Acquire(%s)", path)
	require.NoError(t, h.Release(), "Release of %s", path)

	for _, tc := range []struct {
		path string
		max  os.FileMode
	}{
		{filepath.Join(root, "state"), 0o700},
		{filepath.Join(root, "state", "locks"), 0o700},
		{path, 0o600},
	} {
		fi, err := os.Stat(tc.path)
		require.NoError(t, err, "Stat(%s)", tc.path)
		got := fi.Mode().Perm()
		require.Zero(t, got&^tc.max, "Acquire(%s): mode of %s = %v, want at most %v", path, tc.path, got, tc.max)
	}
}

package staletemp

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// atime returns the access time of the file at path.
func atime(t *testing.T, path string) time.Time {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Stat(path, &st), "stat(%s)", path)
	return time.Unix(st.Atim.Unix())
}

// TestRemoveLeavesTheDirectorysAccessTimeAlone: the sweep after every
// published write reads the directory without updating its access time,
// which would dirty the directory's inode for the next fsync to journal.
// A plain read of the same directory must update it first (relatime does
// when the access time is older than the modification time), or the file
// system keeps no access times and the test cannot tell. (Ablation: opening
// the directory without O_NOATIME in openDir moves the access time, and the
// test fails.)
func TestRemoveLeavesTheDirectorysAccessTimeAlone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	require.NoError(t, os.WriteFile(path, []byte("{}\n"), 0o644))
	old := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	stale := func() {
		t.Helper()
		require.NoError(t, os.Chtimes(dir, old, time.Now()), "Chtimes(%s)", dir)
	}

	stale()
	_, err := os.ReadDir(dir)
	require.NoError(t, err)
	if atime(t, dir).Equal(old) {
		t.Skipf("the file system of %s keeps no access times (noatime): nothing to leave alone", dir)
	}

	stale()
	stage(t, path)
	stale() // staging created a file: the directory's times are new again
	n, err := Remove(path)
	require.NoError(t, err, "Remove(%s)", path)
	require.Equal(t, 1, n, "Remove(%s) = %d, want 1", path, n)
	require.True(t, atime(t, dir).Equal(old), "the access time of %s after Remove = %v, want %v (unchanged)", dir, atime(t, dir), old)
}

package staletemp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
// the directory without O_NOATIME in openNoatime moves the access time, and the
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

// TestScanListsEveryEntry: scan sees every entry of a directory whose
// entries take several reads of its buffer, with the names and types that
// os.ReadDir gives. Ablation: returning after the first getdents(2) misses
// most of them, and the test fails.
func TestScanListsEveryEntry(t *testing.T) {
	dir := t.TempDir()
	want := map[string]bool{}
	for i := range 400 { // about 60 bytes an entry: three buffers' worth
		name := fmt.Sprintf("%s-%03d", strings.Repeat("e", 36), i)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
		want[name] = true
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	want["sub"] = false
	got := map[string]bool{}
	require.NoError(t, scan(dir, func(name []byte, maybeRegular bool) { got[string(name)] = maybeRegular }))
	delete(got, ".")
	delete(got, "..")
	require.Equal(t, want, got, "scan(%s): names and whether each may be regular", dir)
}

// TestRemoveForAllocatesNothingWhenNothingIsStale: the sweep after every
// write reads the directory where getdents(2) leaves it, so a directory
// without stale temporary files costs it no allocation but the path's
// conversion for open(2). Ablation: listing the directory with os.ReadDir
// first, as before, allocates a DirEntry and a name per entry, and the test
// fails.
func TestRemoveForAllocatesNothingWhenNothingIsStale(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "deferred-work.md")
	for _, name := range []string{"deferred-work.md", "deferred-work.md.lock", "archive.md", ".deferred-work.md.swp"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
	}
	allocs := testing.AllocsPerRun(100, func() {
		if n, err := RemoveFor(target); n != 0 || err != nil {
			t.Fatalf("RemoveFor(%s) = %d, %v, want 0, nil", target, n, err)
		}
	})
	require.LessOrEqual(t, allocs, 1.0, "allocations of RemoveFor(%s) = %v, want at most 1", target, allocs)
}

package fsys

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// lockedWrite publishes data over dir/f as the engine's write under the
// lock key does, and returns the temporary name it staged under.
func lockedWrite(t *testing.T, dir, key, data string) string {
	t.Helper()
	pf := create(t, filepath.Join(dir, "f"), Options{LockKey: key, NoSync: true})
	tmp := filepath.Base(pf.TempPath())
	_, err := pf.Write([]byte(data))
	require.NoError(t, err)
	require.NoError(t, pf.CloseAtomicallyReplace(), "CloseAtomicallyReplace of %s", tmp)
	return tmp
}

// leave makes a dead writer's file of name in dir, holding "half", and
// returns it open, as a writer that has lost its lock but not yet found out
// still holds it. On Windows, where a file held open cannot be removed, it
// is closed, as a dead writer's is, and nil is returned.
func leave(t *testing.T, dir, name string) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	_, err = f.WriteString("half")
	require.NoError(t, err)
	if runtime.GOOS == "windows" {
		require.NoError(t, f.Close())
		return nil
	}
	return f
}

// requireUntouched fails unless f, the file a lost writer holds open, still
// holds "half" and is not the file at path; a nil f passes.
func requireUntouched(t *testing.T, f *os.File, path string) {
	t.Helper()
	if f == nil {
		return
	}
	fi, err := f.Stat()
	require.NoError(t, err)
	buf := make([]byte, 16)
	n, _ := f.ReadAt(buf, 0)
	require.Equal(t, "half", string(buf[:n]), "the lost writer's file %s after the write", f.Name())
	if pi, err := os.Stat(path); err == nil {
		require.False(t, os.SameFile(fi, pi), "%s is the lost writer's file", path)
	}
}

func sortedNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// TestLockedWriteTakesTheFreeNameAndRemovesTheOther: with no file of the
// lock's names the first is taken; with a dead writer's file under one, the
// other is taken, and the dead one removed after the rename; with both
// there, the first is removed and made afresh, the second removed after
// the rename. In every case the writer never writes into a file it did not
// create (a writer that lost its lock may still rename it), and the
// directory ends with the target alone. Ablations: without the removal of
// the other name after the rename (removeStale(pf.stale) in publish), the
// dead files stay; reopening a name that exists (O_TRUNC instead of O_EXCL
// in stageLocked) writes into the lost writer's file, and requireUntouched
// fails.
func TestLockedWriteTakesTheFreeNameAndRemovesTheOther(t *testing.T) {
	key := "i801:2a"
	names := Names("f", key)
	for _, tc := range []struct {
		name  string
		dead  []string // names of dead writers' files
		taken string   // the name the write stages under
	}{
		{"none", nil, names[0]},
		{"first", []string{names[0]}, names[1]},
		{"second", []string{names[1]}, names[0]},
		{"both", []string{names[0], names[1]}, names[0]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := oldFile(t, dir)
			var lost []*os.File
			for _, n := range tc.dead {
				lost = append(lost, leave(t, dir, n))
			}
			got := lockedWrite(t, dir, key, "new")
			require.Equal(t, tc.taken, got, "the name staged under with %v there", tc.dead)
			requireFiles(t, dir, "new", "f")
			for _, f := range lost {
				requireUntouched(t, f, path)
			}
		})
	}
}

// TestLockedWriteLeavesOtherFilesOfItsNamesAlone: a directory under one of
// the lock's names is not removed (only a regular file of those names is a
// writer's); with both names taken by directories, the write is staged
// under a random name and still publishes. Ablation: removeStale without
// its regular-file check removes the empty directory.
func TestLockedWriteLeavesOtherFilesOfItsNamesAlone(t *testing.T) {
	key := "i801:2a"
	names := Names("f", key)

	dir := t.TempDir()
	oldFile(t, dir)
	require.NoError(t, os.Mkdir(filepath.Join(dir, names[0]), 0o755))
	require.Equal(t, names[1], lockedWrite(t, dir, key, "new"))
	requireFiles(t, dir, "new", names[0], "f")

	require.NoError(t, os.Mkdir(filepath.Join(dir, names[1]), 0o755))
	got := lockedWrite(t, dir, key, "newer")
	require.NotContains(t, names, got, "the name staged under with both names taken by directories")
	require.Equal(t, []string{names[0], names[1], "f"}, sortedNames(t, dir), "files in %s", dir)
}

// TestLockedWriteOfAnotherLockOrTargetLeavesItsNamesAlone: a write under
// one lock key leaves a file of another key's names for the same target,
// and of the same key's names for another target.
func TestLockedWriteOfAnotherLockOrTargetLeavesItsNamesAlone(t *testing.T) {
	dir := t.TempDir()
	oldFile(t, dir)
	key, other := "i801:2a", "i801:2b"
	keep := []string{Names("f", other)[0], Names("f", other)[1], Names("f2", key)[0], Names("f2", key)[1]}
	for _, n := range keep {
		leave(t, dir, n)
	}
	lockedWrite(t, dir, key, "new")
	lockedWrite(t, dir, key, "newer")
	want := append([]string{"f"}, keep...)
	sort.Strings(want)
	require.Equal(t, want, sortedNames(t, dir), "files in %s", dir)
}

// TestLockedWriteOfALongNameFits: a target whose name is 255 bytes long is
// staged under its lock's names (cut to fit within 255 bytes), and a dead
// writer's file is removed after the rename, as for a short name.
func TestLockedWriteOfALongNameFits(t *testing.T) {
	dir := t.TempDir()
	base := strings.Repeat("x", 255)
	path := filepath.Join(dir, base)
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	names := Names(base, "i801:2a")
	leave(t, dir, names[0])
	pf := create(t, path, Options{LockKey: "i801:2a", NoSync: true})
	require.Equal(t, names[1], filepath.Base(pf.TempPath()), "the name staged under with the first taken")
	_, err := pf.Write([]byte("new"))
	require.NoError(t, err)
	require.NoError(t, pf.CloseAtomicallyReplace())
	require.Equal(t, []string{base}, sortedNames(t, dir), "files in %s", dir)
}

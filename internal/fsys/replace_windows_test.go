package fsys

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"

	"github.com/filetxn/filetxn/internal/testkit"
)

// TestReplaceSucceedsWhileReadersHoldTheTarget: readers that hold the
// target open, as the module's lock-free reads do while they read it, do
// not make a writer's replace fail: CloseAtomicallyReplace publishes at once,
// readers that opened before it read the old contents to their end, and the
// path holds the new ones. Before, the readers' handles did not share delete
// access and MoveFileEx's classic rename cannot replace an open file, so the
// replace failed after its 3 s of retries (a stream of readers holds it off
// for good). The ablations it is there to catch, on Windows: openFile as
// plain os.OpenFile (ERROR_SHARING_VIOLATION), replace without replacePOSIX
// (ERROR_ACCESS_DENIED). It skips under Wine (testkit.NoPOSIXRename), where the
// replace fails with the fix too, so neither has been seen red there; the
// reader's half is seen red under Wine by fsys's
// TestAReadHandleLetsItsFileBeRenamedAndRemoved.
func TestReplaceSucceedsWhileReadersHoldTheTarget(t *testing.T) {
	path := oldFile(t, t.TempDir())
	var readers []*os.File
	for range 3 {
		f, err := OpenFile(path, os.O_RDONLY, 0)
		require.NoError(t, err, "OpenFile(%q, O_RDONLY)", path)
		t.Cleanup(func() { f.Close() })
		readers = append(readers, f)
	}
	testkit.Skip(t, testkit.NoPOSIXRename)
	for _, durable := range []bool{true, false} {
		pf := create(t, path, Options{NoSync: !durable})
		_, err := pf.Write([]byte("new"))
		require.NoError(t, err, "Write")
		require.NoError(t, pf.CloseAtomicallyReplace(), "CloseAtomicallyReplace(durable %v) while %d readers hold %s", durable, len(readers), path)
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, "new", string(got), "ReadFile(%q) after the replace", path)
	}
	for i, f := range readers {
		got, err := io.ReadAll(f)
		require.NoError(t, err, "reader %d: ReadAll", i)
		require.Equal(t, "old", string(got), "reader %d, opened before the replace, reads", i)
	}
}

// TestReplaceTakesAPathLongerThanMaxPath: a replace whose paths are longer
// than MAX_PATH succeeds, as os.Rename does with such paths: replace gives
// them the \\?\ prefix (LongPath). The ablation it is there to catch,
// on Windows without long paths enabled: replace passing the raw paths to
// MoveFileEx (ERROR_PATH_NOT_FOUND). Wine has no such limit, so there the
// first check (that the raw call fails) skips (testkit.NoMaxPath), the replace
// passes with or without the prefix, and the prefix's form is seen red by
// fsys's TestLongPathPrefixesOnlyWhatNeedsIt.
func TestReplaceTakesAPathLongerThanMaxPath(t *testing.T) {
	dir := t.TempDir()
	for len(dir) < 300 {
		dir = filepath.Join(dir, strings.Repeat("d", 60))
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	path := oldFile(t, dir)
	t.Run("the raw call fails", func(t *testing.T) {
		testkit.Skip(t, testkit.NoMaxPath)
		from, to := path+".raw", path
		require.NoError(t, os.WriteFile(from, []byte("raw"), 0o644))
		src, _ := windows.UTF16PtrFromString(from)
		dst, _ := windows.UTF16PtrFromString(to)
		if err := windows.MoveFileEx(src, dst, windows.MOVEFILE_REPLACE_EXISTING); err == nil {
			t.Skip("MoveFileEx accepts a raw path over MAX_PATH here (long paths enabled)")
		}
	})
	pf := create(t, path, Options{})
	_, err := pf.Write([]byte("new"))
	require.NoError(t, err, "Write")
	require.NoError(t, pf.CloseAtomicallyReplace(), "CloseAtomicallyReplace(a %d-byte path)", len(path))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "new", string(got), "ReadFile(%q) after the replace", path)
}

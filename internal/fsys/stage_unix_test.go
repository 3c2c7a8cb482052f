//go:build unix

package fsys

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCreateStagesInTheTargetsRealDirectory checks that the temporary file of
// a link whose target goes up ("../f") through a symlinked directory is made
// in the directory that holds the target, which the directory fsync then
// covers, and not in the lexical parent of the link. Ablation: passing the
// raw directory to renameio's WithTempDir (tempDirFor returning dir as it is)
// makes it red: renameio's filepath.Join cleans "alias/.." to the root.
func TestCreateStagesInTheTargetsRealDirectory(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	require.NoError(t, os.MkdirAll(filepath.Join(real, "sub"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join("real", "sub"), filepath.Join(root, "alias")))
	require.NoError(t, os.Symlink("../f", filepath.Join(real, "sub", "link")))
	path := filepath.Join(root, "alias", "link")

	pf := create(t, path, Options{})
	tmpDir, err := os.Stat(filepath.Dir(pf.TempPath()))
	require.NoError(t, err)
	realDir, err := os.Stat(real)
	require.NoError(t, err)
	require.True(t, os.SameFile(tmpDir, realDir), "Create(%q).TempPath() = %q, want a file in %s", path, pf.TempPath(), real)
	_, err = pf.Write([]byte("new"))
	require.NoError(t, err)
	require.NoError(t, pf.CloseAtomicallyReplace(), "CloseAtomicallyReplace()")
	requireFiles(t, real, "new", "f", "sub")
}

// TestAnErrorThroughALinkNamesBothFiles: a refusal of the file a symbolic
// link resolves to is an *fs.PathError for the caller's path whose message
// also names the resolved file, and it still matches the cause. Ablation:
// fail without the resolvedError (the caller's path alone) makes it red.
func TestAnErrorThroughALinkNamesBothFiles(t *testing.T) {
	dir := t.TempDir()
	real := oldFile(t, dir)
	require.NoError(t, os.Chmod(real, 0o444))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink("f", link))

	_, err := Create("Create", link, 0o644, Options{})
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe, "Create(%q)", link)
	require.Equal(t, link, pe.Path, "Create(%q): the error's path", link)
	require.ErrorIs(t, err, fs.ErrPermission, "Create(%q)", link)
	require.Contains(t, err.Error(), "via link to "+real, "Create(%q)", link)
	require.Equal(t, err.Error(), Check("Create", link).Error(), "Check(%q), want Create's error", link)
	requireFiles(t, dir, "old", "f", "link")
}

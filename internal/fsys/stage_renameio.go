//go:build !windows

package fsys

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"
)

// Outside Windows a temporary file is renameio's: [renameio.NewPendingFile]
// creates it beside the target (WithTempDir of the target's directory, so the
// rename never crosses a file system), under renameio's name. This package
// does the rest itself: the refusals and symlink resolution before it
// (Create), the owner and exact mode of an existing target (keepMeta), and
// the fsync, close and rename (publish, rename), which renameio's
// CloseAtomicallyReplace joins in one call, so that a caller cannot check
// its lock between the slow fsync and the rename; then the directory fsync,
// without which the rename is not durable.
//
// A target whose name is longer than maxRenameioBase bytes is staged by this
// package (stageOwn): renameio's temporary name would pass the usual 255-byte
// limit on a name, and stageOwn's ".<base>.tmp-<random>" cuts the base short
// instead.

// staging is the temporary file and how it was made.
type staging struct {
	tmp string                // its path
	rio *renameio.PendingFile // the file, when renameio made it; nil when stageOwn did
}

// maxRenameioBase is the longest target name renameio can stage: it names
// its temporary file "." + name + a random non-negative int64 in decimal (up
// to 19 digits), and most file systems refuse names over 255 bytes.
const maxRenameioBase = 255 - 1 - 19

// stage creates the temporary file in dir (the target's directory) with
// perm, less the umask.
func (pf *PendingFile) stage(dir string, perm fs.FileMode) error {
	if len(filepath.Base(pf.target)) > maxRenameioBase {
		return pf.stageOwn(dir, perm)
	}
	tdir, err := tempDirFor(dir)
	if err != nil {
		return err
	}
	rio, err := renameio.NewPendingFile(pf.target, renameio.WithTempDir(tdir), renameio.WithPermissions(perm))
	if err != nil {
		return err
	}
	pf.rio, pf.f, pf.tmp = rio, rio.File, rio.Name()
	return nil
}

// tempDirFor returns dir spelled so that renameio puts the temporary file in
// it. renameio joins the directory and the name with [filepath.Join], which
// cleans: "d/.." becomes ".", which is not the kernel's "d/.." when d is a
// symbolic link to a directory elsewhere. A directory with a ".." element is
// therefore resolved first ([filepath.EvalSymlinks] takes ".." after a link
// the kernel's way); any other spelling means the same cleaned or not.
func tempDirFor(dir string) (string, error) {
	for elem := range strings.SplitSeq(dir, string(filepath.Separator)) {
		if elem == ".." {
			return filepath.EvalSymlinks(dir)
		}
	}
	return dir, nil
}

// discard removes the temporary file of an unpublished PendingFile, whose
// descriptor Cleanup has closed.
func (pf *PendingFile) discard() error {
	if pf.rio == nil {
		return os.Remove(pf.tmp)
	}
	// renameio's Cleanup closes the file too; having been closed already is
	// the one error of that close, and not a failure to clean up.
	if err := pf.rio.Cleanup(); err != nil && !errors.Is(err, fs.ErrClosed) {
		return err
	}
	return nil
}

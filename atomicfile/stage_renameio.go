//go:build !windows

package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"

	"github.com/filetxn/filetxn/internal/fault"
)

// Outside Windows a temporary file is renameio's: [renameio.NewPendingFile]
// creates it beside the target (WithTempDir of the target's directory, so the
// rename never crosses a file system) and its CloseAtomicallyReplace fsyncs,
// closes and renames it. This package adds what renameio leaves out: the
// refusals and symlink resolution before it (create), the owner and exact
// mode of an existing target (keepMeta), and the directory fsync after the
// rename, without which the rename is not durable.
//
// Two cases stay with this package's own staging (stageOwn, publishOwn):
//   - WithoutSync: renameio always fsyncs before its rename, so the file it
//     staged is closed and renamed here instead;
//   - a target whose name is longer than maxRenameioBase bytes, for which
//     renameio's temporary name would pass the usual 255-byte limit on a
//     name; stageOwn's ".<base>.tmp-<random>" cuts the base short instead.

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

// publish fsyncs (unless WithoutSync), closes and renames the temporary file
// over the target.
func (pf *PendingFile) publish() error {
	if pf.rio == nil || !pf.sync {
		return pf.publishOwn()
	}
	if synced != nil {
		synced(pf.f.Name())
	}
	// renameio fsyncs and renames in one call: a fault at either step fails
	// it before it starts, which leaves what a failed fsync or rename leaves
	// (the temporary file, for Cleanup to remove).
	if err := fault.At(fault.Sync, pf.target); err != nil {
		return err
	}
	if err := fault.At(fault.Rename, pf.target); err != nil {
		return err
	}
	pf.closed = true // by CloseAtomicallyReplace, or by its Cleanup if it fails first
	return pf.rio.CloseAtomicallyReplace()
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

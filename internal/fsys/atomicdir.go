package fsys

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// RenameNoReplace renames oldpath to newpath only if nothing exists at
// newpath, atomically: of two calls racing for one newpath, exactly one
// succeeds and the other fails with an error wrapping [fs.ErrExist], and no
// call ever replaces what it finds there. oldpath may be a file or a
// directory; both paths must be on one file system. When durable, the
// directories of both paths are fsynced afterwards, so that the rename
// survives a crash.
//
// The no-replace check is made by the kernel where it offers one:
// renameat2(RENAME_NOREPLACE) on Linux, renamex_np(RENAME_EXCL) on Darwin,
// MoveFileEx without MOVEFILE_REPLACE_EXISTING on Windows. Elsewhere, and on
// Linux file systems that refuse the flag, a file is renamed by link(2) and
// unlink(2) (link never replaces), and a directory by rename(2) after a check
// that newpath does not exist; rename(2) refuses to replace a non-empty
// directory, but it would replace an empty one that appeared between the
// check and the rename.
//
// Errors are [*fs.PathError] with Op "RenameNoReplace" and Path newpath; when
// only a directory fsync after the rename fails, the rename has happened and
// the error says that the directory was not synced.
func RenameNoReplace(oldpath, newpath string, durable bool) error {
	if err := renameNoReplace(oldpath, newpath); err != nil {
		return &fs.PathError{Op: "RenameNoReplace", Path: newpath, Err: UnwrapOS(err)}
	}
	if durable {
		to, from := filepath.Dir(newpath), filepath.Dir(oldpath)
		err := SyncDir(to)
		if err == nil && from != to {
			err = SyncDir(from)
		}
		if err != nil {
			return &fs.PathError{Op: "RenameNoReplace", Path: newpath, Err: fmt.Errorf("renamed, but the directory was not synced: %w", UnwrapOS(err))}
		}
	}
	return nil
}

// renameFallback is RenameNoReplace for systems and file systems without a
// no-replace rename in the kernel (see RenameNoReplace).
func renameFallback(oldpath, newpath string) error {
	fi, err := os.Lstat(oldpath)
	if err != nil {
		return err
	}
	if fi.Mode().IsRegular() {
		if err := os.Link(oldpath, newpath); err != nil {
			return err
		}
		return os.Remove(oldpath)
	}
	if _, err := os.Lstat(newpath); err == nil {
		return &fs.PathError{Op: "rename", Path: newpath, Err: fs.ErrExist}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Rename(oldpath, newpath)
}

// A PendingDir is a directory being filled under a temporary name, to be
// published under its final name by [Pending.Publish] only if that name is
// still free, or removed by [Pending.Cleanup]. Until Publish nobody who
// looks for the final name sees anything, so a directory is never seen half
// filled. It is created by [Create].
//
// The usual shape is
//
//	pd, err := fsys.CreateDir(path, 0o755, true)
//	if err != nil {
//		return err
//	}
//	defer pd.Cleanup() // no-op once published
//	err = atomicfile.WriteFile(filepath.Join(pd.Path(), "a"), data, 0o644)
//	...
//	return pd.Publish() // fs.ErrExist: someone else published path first
//
// A PendingDir is not safe for concurrent use, and its zero value is not
// usable.
type PendingDir struct {
	path  string // the final name, as the caller gave it
	tmp   string // the staging directory, beside path
	sync  bool   // fsync the staging directory before the rename, and the parents after it
	state dirState
}

// CreateDir makes an empty staging directory beside path, with perm minus the
// umask, and returns it as a [Pending]: fill it (its path is
// [Pending.Path]), then call [Pending.Publish], and always
// [Pending.Cleanup], for instance deferred. When durable, Publish fsyncs the
// staging directory before its rename and the parent after it. The staging directory is named
// ".<base>.tmp-<random>", so it is hidden and never collides with path.
//
// If something already exists at path, Create stages nothing and returns
// an error wrapping [fs.ErrExist]; this is only an early answer, Publish
// checks again atomically. A missing parent gives an error wrapping
// [fs.ErrNotExist]. Errors are [*fs.PathError] with Op "CreateDir" and Path
// path.
func CreateDir(path string, perm fs.FileMode, durable bool) (*PendingDir, error) {
	fail := func(err error) (*PendingDir, error) {
		return nil, &fs.PathError{Op: "CreateDir", Path: path, Err: err}
	}
	if path == "" {
		return fail(fs.ErrInvalid)
	}
	clean := filepath.Clean(path)
	if _, err := os.Lstat(clean); err == nil {
		return fail(fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fail(UnwrapOS(err))
	}
	pd := &PendingDir{path: path, sync: durable}
	dir, base := filepath.Split(clean)
	if dir == "" {
		dir = "."
	}
	var err error
	for range 100 {
		pd.tmp = filepath.Join(dir, TempName(base))
		if err = os.Mkdir(pd.tmp, perm); !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fail(fmt.Errorf("parent directory %s: %w", dir, fs.ErrNotExist))
		}
		return fail(UnwrapOS(err))
	}
	return pd, nil
}

// Path returns the staging directory: write the contents there. It exists
// from Create until Publish (which renames it to the final name) or
// Cleanup (which removes it).
func (pd *PendingDir) Path() string { return pd.tmp }

// Publish renames the staging directory to the final name if nothing exists
// there (see [RenameNoReplace]). The staging directory is fsynced first and
// the parent after, when durable, so a crash leaves either no directory at
// the final name or the complete one; files written into it with
// atomicfile.WriteFile are durable already.
//
// If the final name has been taken in the meantime, Publish removes the
// staging directory and returns an error wrapping [fs.ErrExist]. Calling it
// again, or after Cleanup, returns an error wrapping [fs.ErrClosed]. Errors
// are [*fs.PathError] with Op "Publish" and Path the final name.
func (pd *PendingDir) Publish() error {
	fail := func(err error) error { return &fs.PathError{Op: "Publish", Path: pd.path, Err: err} }
	if pd.state != dirPending {
		return fail(fs.ErrClosed)
	}
	if pd.sync {
		if err := SyncDir(pd.tmp); err != nil {
			pd.Cleanup()
			return fail(UnwrapOS(err))
		}
	}
	if err := RenameNoReplace(pd.tmp, filepath.Clean(pd.path), pd.sync); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if _, serr := os.Lstat(pd.tmp); serr == nil {
			pd.Cleanup()
		} else {
			// Only the directory sync after the rename failed.
			pd.state = dirReplaced
		}
		return fail(err)
	}
	pd.state = dirReplaced
	return nil
}

// Cleanup removes the staging directory and everything in it, unless it has
// been published. It is a no-op after Publish, after an earlier Cleanup and on
// a nil *PendingDir, so `defer pd.Cleanup()` is always right. Its error, an
// [*fs.PathError] with Op "Cleanup", reports what could not be removed.
func (pd *PendingDir) Cleanup() error {
	if pd == nil || pd.state != dirPending {
		return nil
	}
	pd.state = dirCleaned
	if err := os.RemoveAll(pd.tmp); err != nil {
		return &fs.PathError{Op: "Cleanup", Path: pd.path, Err: UnwrapOS(err)}
	}
	return nil
}

// dirState is where a Pending is in its life.
type dirState int

const (
	dirPending  dirState = iota // the staging directory exists, the final name untouched
	dirReplaced                 // published: nothing left to clean
	dirCleaned                  // the staging directory removed
)

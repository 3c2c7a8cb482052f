package fsys

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace uses renamex_np(RENAME_EXCL) (macOS 10.12). File systems
// that do not implement it answer ENOTSUP; those get the fallback.
func renameNoReplace(oldpath, newpath string) error {
	err := unix.RenamexNp(oldpath, newpath, unix.RENAME_EXCL)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.EINVAL):
		return renameFallback(oldpath, newpath)
	}
	return &os.LinkError{Op: "renamex_np", Old: oldpath, New: newpath, Err: err}
}

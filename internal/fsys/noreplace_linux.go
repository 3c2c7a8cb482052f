package fsys

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace uses renameat2(RENAME_NOREPLACE) (Linux 3.15). File systems
// that do not implement the flag answer EINVAL, and kernels without the system
// call ENOSYS; those get the fallback.
func renameNoReplace(oldpath, newpath string) error {
	for {
		err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
			return renameFallback(oldpath, newpath)
		}
		return &os.LinkError{Op: "renameat2", Old: oldpath, New: newpath, Err: err}
	}
}

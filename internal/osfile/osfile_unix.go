//go:build unix

package osfile

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

func openFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	for {
		fd, err := unix.Open(path, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}

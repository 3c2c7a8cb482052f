//go:build darwin || dragonfly || freebsd || illumos || netbsd || openbsd

package lock

import (
	"os"

	"golang.org/x/sys/unix"
)

// idOfPath returns the identity of the file that path names, following
// symlinks.
func idOfPath(path string) (fileID, error) {
	var st unix.Stat_t
	for {
		err := unix.Stat(path, &st)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fileID{}, &os.PathError{Op: "stat", Path: path, Err: err}
		}
		return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil
	}
}

func idOfFile(f *os.File) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileID{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil
}

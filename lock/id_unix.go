//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package lock

import (
	"os"

	"golang.org/x/sys/unix"
)

// statID returns the identity of the file that path names, following
// symlinks, from stat(2).
func statID(path string) (fileID, error) {
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

// fstatID returns the identity of the open file f, from fstat(2).
func fstatID(f *os.File) (fileID, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstat(int(f.Fd()), &st)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fileID{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
		}
		return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil
	}
}

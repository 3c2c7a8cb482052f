//go:build darwin || dragonfly || freebsd || linux || openbsd

package lock

import (
	"os"

	"golang.org/x/sys/unix"
)

// statFile describes f's file system from fstatfs(2): its magic number
// (Linux) or its name (f_fstypename, on the BSDs and macOS), or nothing when
// fstatfs fails (an unknown file system is allowed).
func statFile(f *os.File) statfsResult {
	var st unix.Statfs_t
	for {
		err := unix.Fstatfs(int(f.Fd()), &st)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return statfsResult{}
		}
		return describe(&st)
	}
}

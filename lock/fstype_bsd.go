//go:build darwin || dragonfly || freebsd || openbsd

package lock

import (
	"os"

	"golang.org/x/sys/unix"
)

// statFile returns the name of f's file system (f_fstypename), or nothing if
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
		return statfsResult{name: unix.ByteSliceToString(fsTypeName(&st))}
	}
}

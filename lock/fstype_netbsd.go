package lock

import (
	"os"

	"golang.org/x/sys/unix"
)

// statFile returns the name of f's file system (f_fstypename), or nothing if
// fstatvfs fails (an unknown file system is allowed).
func statFile(f *os.File) statfsResult {
	var st unix.Statvfs_t
	for {
		err := unix.Fstatvfs(int(f.Fd()), &st)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return statfsResult{}
		}
		return statfsResult{name: unix.ByteSliceToString(st.Fstypename[:])}
	}
}

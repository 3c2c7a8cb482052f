package lock

import (
	"os"

	"golang.org/x/sys/unix"
)

// statFile returns the magic number of f's file system, or zero if fstatfs
// fails (an unknown file system is allowed).
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
		// f_type is a 32-bit magic number stored in a type that differs by
		// architecture, signed on some: the low 32 bits are the magic.
		return statfsResult{magic: uint32(st.Type)}
	}
}

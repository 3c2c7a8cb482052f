//go:build unix

package fsys

import "golang.org/x/sys/unix"

// statIdentity returns the device and inode numbers of the file at path,
// following symbolic links, from stat(2).
func statIdentity(path string) (dev, ino uint64, ok bool) {
	var st unix.Stat_t
	for {
		switch err := unix.Stat(path, &st); err {
		case nil:
			return uint64(st.Dev), uint64(st.Ino), true
		case unix.EINTR:
			continue
		default:
			return 0, 0, false
		}
	}
}

//go:build unix

package lock

import "golang.org/x/sys/unix"

// isSymlink reports whether path names a symbolic link, with one lstat(2)
// and no allocation: resolving a sidecar path asks it of every component.
func isSymlink(path string) (bool, error) {
	var st unix.Stat_t
	for {
		err := unix.Lstat(path, &st)
		if err == unix.EINTR {
			continue
		}
		return err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK, err
	}
}

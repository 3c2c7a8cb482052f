//go:build unix

package fsys

import "strconv"

// Key returns the lock's part of the names: the identity (device and inode)
// of the lock file at lockPath, which the caller has locked, and false if
// the file cannot be looked at (it is gone: the lock is lost, and the write
// will publish nothing). The names are then those of one lock file, not of
// a path: a writer that lost its lock (its lock file deleted, or another
// renamed over it, while it held it) keeps the identity of the file it
// locked, which no other process can lock again, so no later holder of the
// file now at the path ever makes a file of its names. It costs one
// statx(2) (stat(2) where there is none), which asks for the inode alone.
func Key(lockPath string) (string, bool) {
	dev, ino, ok := identity(lockPath)
	if !ok {
		return "", false
	}
	var buf [1 + 16 + 1 + 16]byte
	b := strconv.AppendUint(append(buf[:0], 'i'), dev, 16)
	b = strconv.AppendUint(append(b, ':'), ino, 16)
	return string(b), true
}

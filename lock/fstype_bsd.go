//go:build darwin || dragonfly || freebsd || openbsd

package lock

import "golang.org/x/sys/unix"

// describe names a BSD or macOS file system by f_fstypename.
func describe(st *unix.Statfs_t) statfsResult {
	return statfsResult{name: unix.ByteSliceToString(fsTypeName(st))}
}

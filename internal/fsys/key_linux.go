package fsys

import "golang.org/x/sys/unix"

// identity returns the device and inode numbers of the file at path,
// following symbolic links. It asks statx(2) for the inode alone: reading
// the file's change time, as stat(2) does, would make the next write to the
// lock file (its holder record, at the next acquisition) take a
// fine-grained timestamp on Linux 6.13 and later, and the next fsync carry
// the lock file's inode (see package lock's idOfPath). Where statx is
// missing or refused, stat serves.
func identity(path string) (dev, ino uint64, ok bool) {
	var stx unix.Statx_t
	for {
		switch err := unix.Statx(unix.AT_FDCWD, path, unix.AT_STATX_SYNC_AS_STAT, unix.STATX_INO, &stx); err {
		case nil:
			return unix.Mkdev(stx.Dev_major, stx.Dev_minor), stx.Ino, true
		case unix.EINTR:
			continue
		case unix.ENOSYS, unix.EPERM:
			return statIdentity(path)
		default:
			return 0, 0, false
		}
	}
}

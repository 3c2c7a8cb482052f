package lock

import (
	"os"

	"golang.org/x/sys/unix"
)

// idOfPath returns the identity of the file that path names, following
// symlinks.
//
// It asks statx(2) for the inode number alone, not for the timestamps that
// stat(2) returns, and that matters to every transaction: on Linux 6.13 and
// later, reading a file's change time makes the next write to it take a
// fine-grained timestamp, so the holder record written right after would
// dirty the lock file's inode on every acquisition, and the journal commit of
// the caller's next fsync would carry it (measured: an fsync about 1.5 times
// as long). Unqueried, the times move with the coarse clock, a few times a
// second at most.
func idOfPath(path string) (fileID, error) {
	return statxID(unix.AT_FDCWD, path, 0, "stat")
}

func idOfFile(f *os.File) (fileID, error) {
	return statxID(int(f.Fd()), "", unix.AT_EMPTY_PATH, "fstat")
}

func statxID(dirfd int, path string, flags int, op string) (fileID, error) {
	var stx unix.Statx_t
	for {
		err := unix.Statx(dirfd, path, flags|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_INO, &stx)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fileID{}, &os.PathError{Op: op, Path: path, Err: err}
		}
		return fileID{dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor), ino: stx.Ino}, nil
	}
}

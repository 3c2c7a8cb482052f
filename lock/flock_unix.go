//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package lock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// maxIdle is how many descriptors of lock files that no handle uses the
// process keeps open, so that re-acquiring a lock opens and closes nothing
// (see acquireCached).
const maxIdle = 16

// errNotDir is the errno of a path whose directory part is a file.
const errNotDir = unix.ENOTDIR

// lockFD takes flock(2) on fd. flock locks belong to the open file
// description, not to the process (unlike fcntl's POSIX record locks, which a
// close of any descriptor of the file drops): that is what lets a child that
// inherits the descriptor share the lock, and why each process keeps exactly
// one description per lock file. EINTR is retried: a signal delivered to the
// waiting thread must not turn into a spurious failure.
func lockFD(fd uintptr, block bool) error {
	how := unix.LOCK_EX
	if !block {
		how |= unix.LOCK_NB
	}
	for {
		err := unix.Flock(int(fd), how)
		if err != unix.EINTR {
			return err
		}
	}
}

func unlockFD(fd uintptr) error {
	for {
		err := unix.Flock(int(fd), unix.LOCK_UN)
		if err != unix.EINTR {
			return err
		}
	}
}

// readOnce reads at most len(b) bytes of f at off, in one pread(2): fewer
// than len(b) need not mean the end of the file. EINTR is retried.
func readOnce(f *os.File, b []byte, off int64) (int, error) {
	for {
		n, err := unix.Pread(int(f.Fd()), b, off)
		if err != unix.EINTR {
			return max(n, 0), err
		}
	}
}

func isWouldBlock(err error) bool {
	return errors.Is(err, unix.EWOULDBLOCK) || errors.Is(err, unix.EAGAIN)
}

// isNotSupported reports whether err says that the file system cannot lock
// at all (NFS without lockd answers ENOLCK; some FUSE and SMB mounts
// EOPNOTSUPP or ENOSYS).
func isNotSupported(err error) bool {
	return errors.Is(err, unix.ENOLCK) || errors.Is(err, unix.EOPNOTSUPP) ||
		errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.ENOSYS)
}

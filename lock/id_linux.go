package lock

import (
	"os"
	"strings"
	"sync/atomic"
	"unsafe"

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
// second at most. Where statx is missing (Linux before 4.11) or refused (a
// seccomp filter), stat serves; the two agree on device and inode numbers.
func idOfPath(path string) (fileID, error) {
	if id, ok, err := statxID(unix.AT_FDCWD, path, 0); ok {
		if err != nil {
			return fileID{}, &os.PathError{Op: "statx", Path: path, Err: err}
		}
		return id, nil
	}
	return statID(path)
}

// idOfFile returns the identity of the open file f, by statx(2) as idOfPath.
func idOfFile(f *os.File) (fileID, error) {
	if id, ok, err := statxID(int(f.Fd()), "", unix.AT_EMPTY_PATH); ok {
		if err != nil {
			return fileID{}, &os.PathError{Op: "statx", Path: f.Name(), Err: err}
		}
		return id, nil
	}
	return fstatID(f)
}

// noStatx is set once statx(2) turns out to be missing or refused.
var noStatx atomic.Bool

// statxID asks statx(2) for the device and inode of path (relative to dirfd),
// and reports !ok when statx cannot be used here at all: ENOSYS, or EPERM
// from a seccomp filter. A file system may answer EPERM for one file of its
// own (FUSE), so EPERM counts as a refusal only when statx of the root
// directory, which any process may look up, is refused too.
func statxID(dirfd int, path string, flags int) (id fileID, ok bool, err error) {
	if noStatx.Load() {
		return fileID{}, false, nil
	}
	var stx unix.Statx_t
	for {
		err := statx(dirfd, path, flags|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_INO, &stx)
		switch err {
		case nil:
			return fileID{dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor), ino: stx.Ino}, true, nil
		case unix.EINTR:
			continue
		case unix.EPERM:
			if !statxRefused() {
				return fileID{}, true, err
			}
			fallthrough
		case unix.ENOSYS:
			noStatx.Store(true)
			return fileID{}, false, nil
		}
		return fileID{}, true, err
	}
}

// statxRefused reports whether statx(2) is refused to this process as such,
// not for one file: whether it fails on the root directory too.
func statxRefused() bool {
	var stx unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, "/", unix.AT_STATX_SYNC_AS_STAT, unix.STATX_INO, &stx)
	return err == unix.EPERM || err == unix.ENOSYS
}

// statx is unix.Statx without its allocation: a path that fits is made
// NUL-terminated in a buffer on the stack instead of a fresh heap copy.
// Handle.Current and the re-check after every grant call it, so that
// checking a lock costs one system call and nothing else.
func statx(dirfd int, path string, flags, mask int, stx *unix.Statx_t) error {
	var buf [512]byte
	var p *byte
	if len(path) < len(buf) && strings.IndexByte(path, 0) < 0 {
		copy(buf[:], path)
		p = &buf[0]
	} else {
		var err error
		if p, err = unix.BytePtrFromString(path); err != nil {
			return err
		}
	}
	_, _, errno := unix.Syscall6(unix.SYS_STATX, uintptr(dirfd), uintptr(unsafe.Pointer(p)),
		uintptr(flags), uintptr(mask), uintptr(unsafe.Pointer(stx)), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

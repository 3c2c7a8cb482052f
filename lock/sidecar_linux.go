//go:build linux

package lock

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2(2) turns out to be missing (Linux before 5.6)
// or refused by a seccomp filter (ENOSYS or EPERM for every call).
var noOpenat2 atomic.Bool

// linkFree reports whether every component of the absolute path abs exists
// and none is a symbolic link. It asks the kernel in one openat2(2) that
// refuses any link on the way (RESOLVE_NO_SYMLINKS), and a close, instead of
// an lstat(2) per component; on a path six deep that is two system calls
// instead of six, on every transaction of a store with a state root. false
// means only "resolve it the long way": a link, a missing component, or no
// openat2.
func linkFree(abs string) bool {
	if noOpenat2.Load() {
		return false
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	for {
		fd, err := unix.Openat2(unix.AT_FDCWD, abs, &how)
		switch err {
		case nil:
			unix.Close(fd)
			return true
		case unix.EINTR:
			continue
		case unix.ENOSYS, unix.EPERM:
			noOpenat2.Store(true)
		}
		return false
	}
}

//go:build unix

package fsys

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// checkWritable refuses, with an error wrapping [fs.ErrPermission], a target
// whose mode grants a write bit (checkTarget refused the others) but that
// opening it for writing finds read-only: EACCES, EPERM or EROFS. fi is the
// target's Lstat. O_NONBLOCK keeps the open from hanging if the file has just
// been swapped for a named pipe; no O_TRUNC, so the contents are not touched
// (the open does count as a write-open for inotify and leases).
func checkWritable(path string, fi fs.FileInfo) error {
	for {
		fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		switch {
		case err == nil:
			unix.Close(fd)
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
			return fmt.Errorf("not writable: %w", err)
		case errors.Is(err, unix.EROFS):
			return fmt.Errorf("%w (%w)", err, fs.ErrPermission)
		case errors.Is(err, unix.ETXTBSY), errors.Is(err, unix.ENOENT):
			// A running executable may still be replaced by a rename; a file
			// that vanished since the Lstat is simply a new file now.
			return nil
		default:
			return StepError{Step: "open", Err: err}
		}
	}
}

// keepMeta gives the temporary file f the mode of the existing target fi and,
// when the caller is root, its owner and group. The temporary file was created
// with the target's permission bits (tempPerm), so one fstat usually shows
// that nothing is left to do: a chown and a chmod each dirty the inode, which
// costs a journal entry, and fstat does not. Otherwise owner first: chown
// clears the setuid and setgid bits, which the chmod then restores. fchmod is
// not subject to the umask, so the mode is copied exactly. The chown is best
// effort: a target owned by an id that this file system cannot represent
// keeps root's.
func keepMeta(f *os.File, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	var cur syscall.Stat_t
	known := ok && syscall.Fstat(int(f.Fd()), &cur) == nil
	chown := ok && euid() == 0 && !(known && cur.Uid == st.Uid && cur.Gid == st.Gid)
	if chown {
		_ = f.Chown(int(st.Uid), int(st.Gid))
	} else if known && cur.Mode&0o7777 == st.Mode&0o7777 {
		return nil
	}
	return f.Chmod(fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky))
}

// tempPerm is the permission a temporary file standing in for the existing
// target fi is created with: the target's own bits, since its contents are
// the target's next version, which the umask may still narrow (keepMeta then
// sets them exactly), and read and write for the owner, who writes it.
//
// Never more than the final file grants: root's temporary file belongs to
// root and to root's group (or a setgid directory's) until keepMeta gives it
// the target's owner and group, so its group class gets only what the final
// file grants everyone (the other class); anyone in that group could
// otherwise open it in the meantime and keep reading (or writing) through the
// descriptor. A 0644 or 0664 target is thus staged as 0644. For a caller that
// is not root, the temporary file's owner and group are already the ones the
// final file will have (keepMeta changes neither), so its bits need no such
// care.
func tempPerm(fi fs.FileInfo) fs.FileMode {
	perm := fi.Mode().Perm() | 0o600
	if euid() == 0 {
		perm &^= 0o070 &^ (perm & 0o007 << 3)
	}
	return perm
}

// euid is the effective user id, which does not change for this package's
// purposes; asking once saves a system call per write.
var euid = sync.OnceValue(os.Geteuid)

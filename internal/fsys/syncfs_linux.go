package fsys

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/filetxn/filetxn/internal/seam"
)

// syncFSWorks reports whether this kernel's syncfs(2) returns the
// writeback errors of its file system: Linux 5.8 and later. Before, it
// returned 0 whatever became of the data, so that it could not stand for
// the fsyncs it replaces. The kernel's release is read once.
var syncFSWorks = sync.OnceValue(func() bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	return kernelAtLeast(unix.ByteSliceToString(u.Release[:]), 5, 8)
})

// kernelAtLeast reports whether release (uname -r: "6.18.44-foo") is
// major.minor or later; false when it cannot be read.
func kernelAtLeast(release string, major, minor int) bool {
	fields := strings.SplitN(release, ".", 3)
	if len(fields) < 2 {
		return false
	}
	maj, err1 := strconv.Atoi(fields[0])
	end := strings.IndexFunc(fields[1], func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(fields[1])
	}
	min, err2 := strconv.Atoi(fields[1][:end])
	if err1 != nil || err2 != nil {
		return false
	}
	return maj > major || maj == major && min >= minor
}

// syncFSTypes are the file systems (statfs f_type) whose syncfs(2) makes
// durable everything that fsyncs of each file and directory would: ext2,
// ext3 and ext4, XFS, Btrfs and F2FS commit their journal or transaction
// and flush the device; tmpfs has nothing to make durable either way. A
// FUSE or network file system may keep the data a syncfs wrote back in
// its server's cache, where an fsync would have reached it, so it keeps
// its fsyncs.
var syncFSTypes = []uint32{unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.F2FS_SUPER_MAGIC, unix.TMPFS_MAGIC}

// FileSystem returns the ID (st_dev) of the file system of f, open at
// path, or, when f is nil, of the file or directory at path; ok is false
// when one syncfs of it cannot stand for fsyncs (SyncFS): an older kernel,
// a file system not known to flush everything in its syncfs, or a failed
// stat. The caller then fsyncs.
func FileSystem(path string, f *os.File) (id uint64, ok bool) {
	if !syncFSWorks() {
		return 0, false
	}
	var st unix.Stat_t
	var sf unix.Statfs_t
	var err error
	if f != nil {
		rc, cerr := f.SyscallConn()
		if cerr != nil {
			return 0, false
		}
		if cerr = rc.Control(func(fd uintptr) {
			if err = unix.Fstat(int(fd), &st); err == nil {
				err = unix.Fstatfs(int(fd), &sf)
			}
		}); cerr != nil {
			return 0, false
		}
	} else if err = unix.Stat(path, &st); err == nil {
		err = unix.Statfs(path, &sf)
	}
	if err != nil {
		return 0, false
	}
	for _, t := range syncFSTypes {
		if uint32(sf.Type) == t { // f_type is 32 bits wide on some architectures
			return st.Dev, true
		}
	}
	return 0, false
}

// SyncFS flushes the file system that holds f, open at path, or, when f
// is nil, the directory at path, with syncfs(2): every file and directory
// of it is durable when it returns nil, and an error is a writeback error
// of that file system since f (or the directory) was opened. It costs one
// device flush however many files are dirty, and waits for all of them,
// other programs' too. It is the seam.SyncFS step, with path. Where the
// kernel has no syncfs it returns an error wrapping errors.ErrUnsupported.
func SyncFS(path string, f *os.File) error {
	if err := seam.At(seam.SyncFS, path); err != nil {
		return err
	}
	var err error
	if f != nil {
		rc, cerr := f.SyscallConn()
		if cerr != nil {
			return &fs.PathError{Op: "syncfs", Path: path, Err: cerr}
		}
		if cerr = rc.Control(func(fd uintptr) {
			_, err = retry(func() (int, error) { return 0, unix.Syncfs(int(fd)) })
		}); cerr != nil {
			return &fs.PathError{Op: "syncfs", Path: path, Err: cerr}
		}
	} else {
		fd, oerr := retry(func() (int, error) {
			return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		})
		if oerr != nil {
			return &fs.PathError{Op: "open", Path: path, Err: oerr}
		}
		_, err = retry(func() (int, error) { return 0, unix.Syncfs(fd) })
		unix.Close(fd)
	}
	if err == unix.ENOSYS {
		return &fs.PathError{Op: "syncfs", Path: path, Err: fmt.Errorf("%w: %w", err, errors.ErrUnsupported)}
	}
	if err != nil {
		return &fs.PathError{Op: "syncfs", Path: path, Err: err}
	}
	return nil
}

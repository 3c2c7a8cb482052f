package fsys

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// syncDir fsyncs the directory dir with bare system calls (open, fsync,
// close), EINTR retried: an *os.File would cost an fcntl to look at the
// descriptor's flags, and the runtime's bookkeeping of a file that only
// lives for the fsync.
//
// Some file systems (several FUSE ones, some network ones) cannot fsync a
// directory and say so with EINVAL or ENOTSUP. There is nothing stronger to
// ask of them, so that is not an error; PostgreSQL's fsync_fname makes the same
// call for directories.
func syncDir(dir string) error {
	fd, err := retry(func() (int, error) {
		return unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	_, err = retry(func() (int, error) { return 0, unix.Fsync(fd) })
	if err == unix.EINVAL || err == unix.ENOTSUP {
		err = nil
	}
	if err != nil {
		unix.Close(fd)
		return &fs.PathError{Op: "sync", Path: dir, Err: err}
	}
	if err := unix.Close(fd); err != nil {
		return &fs.PathError{Op: "close", Path: dir, Err: err}
	}
	return nil
}

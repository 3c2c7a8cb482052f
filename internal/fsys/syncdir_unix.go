//go:build unix && !linux

package fsys

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// syncDir fsyncs the directory dir. [os.File.Sync] retries EINTR and uses
// F_FULLFSYNC on Darwin. (Linux has its own, without an *os.File.)
//
// Some file systems (several FUSE ones, some network ones) cannot fsync a
// directory and say so with EINVAL or ENOTSUP. There is nothing stronger to
// ask of them, so that is not an error; PostgreSQL's fsync_fname makes the same
// call for directories.
//
// O_DIRECTORY, as on Linux, refuses anything but a directory with ENOTDIR
// before it is opened: a named pipe put in the directory's place would
// otherwise block the open until a writer came, forever.
func syncDir(dir string) error {
	d, err := OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTSUP) {
		err = nil
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

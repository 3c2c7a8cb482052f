package staletemp

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// openDir opens dir to read its entries without updating its access time.
//
// Remove reads the directory after every write the engine publishes, right
// after a rename has changed it, which is exactly when relatime (Linux's
// default) updates a directory's access time: every sweep would then dirty
// the directory's inode, and the next fsync of the writer, or of any other
// writer on the file system, would have to journal it. On ext4 that costs
// more than the sweep itself. O_NOATIME leaves the access time alone; the
// kernel allows it only to the directory's owner (or CAP_FOWNER), so
// anyone else falls back to a plain open and pays for the update as before.
func openDir(dir string) (*os.File, error) {
	fd, err := open(dir, unix.O_NOATIME)
	if err == unix.EPERM {
		// Not the directory's owner: O_NOATIME is refused, a plain open is not.
		fd, err = open(dir, 0)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// open opens dir read-only with extra flags, retrying on EINTR.
func open(dir string, extra int) (int, error) {
	for {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|extra, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

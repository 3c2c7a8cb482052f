package staletemp

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// openDir opens dir to read its entries without updating its access time.
func openDir(dir string) (*os.File, error) {
	fd, err := openNoatime(dir)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// openNoatime opens dir read-only, without updating its access time.
//
// Remove reads the directory after every write the engine publishes, right
// after a rename has changed it, which is exactly when relatime (Linux's
// default) updates a directory's access time: every sweep would then dirty
// the directory's inode, and the next fsync of the writer, or of any other
// writer on the file system, would have to journal it. On ext4 that costs
// more than the sweep itself. O_NOATIME leaves the access time alone; the
// kernel allows it only to the directory's owner (or CAP_FOWNER), so
// anyone else falls back to a plain open and pays for the update as before.
func openNoatime(dir string) (int, error) {
	fd, err := open(dir, unix.O_NOATIME)
	if err == unix.EPERM {
		// Not the directory's owner: O_NOATIME is refused, a plain open is not.
		fd, err = open(dir, 0)
	}
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, nil
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

// direntBufs holds the buffers scan reads directory entries into.
var direntBufs = sync.Pool{New: func() any { return new([8192]byte) }}

// scan calls visit with the name of each entry of dir, as the bytes
// getdents(2) left in its buffer (valid only during the call), and whether
// the entry may be a regular file (its type is regular, or unknown to the
// file system). It reads the directory with bare system calls, without an
// *os.File, and without a string or a DirEntry per entry.
func scan(dir string, visit func(name []byte, maybeRegular bool)) error {
	fd, err := openNoatime(dir)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	buf := direntBufs.Get().(*[8192]byte)
	defer direntBufs.Put(buf)
	for {
		n, err := unix.Getdents(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "readdirent", Path: dir, Err: err}
		}
		if n <= 0 {
			return nil
		}
		// struct linux_dirent64: d_ino (8 bytes), d_off (8), d_reclen (2),
		// d_type (1), then the name, NUL-terminated and padded to d_reclen.
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return &fs.PathError{Op: "readdirent", Path: dir, Err: unix.EIO}
			}
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			typ := b[18]
			visit(name, typ == unix.DT_REG || typ == unix.DT_UNKNOWN)
			b = b[reclen:]
		}
	}
}

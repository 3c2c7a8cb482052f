//go:build unix

package osfile

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

func openFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	for {
		fd, err := unix.Open(path, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}

func readFile(path string, buf []byte, spare int) ([]byte, error) {
	fd, err := retry(func() (int, error) { return unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0) })
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	size := int64(-1)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		size = st.Size
	}
	data := sized(buf, size, spare)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		// At most maxRead at once: darwin and the BSDs refuse reads of 2 GiB
		// or more with EINVAL.
		room := data[len(data):min(cap(data), len(data)+maxRead)]
		n, err := retry(func() (int, error) { return unix.Read(fd, room) })
		if err != nil {
			return data, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return withSpare(data, spare), nil
		}
		data = data[:len(data)+n]
	}
}

// maxRead is the most one read(2) asks for, as in package os.
const maxRead = 1 << 30

// retry calls f until it fails with something else than EINTR.
func retry(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != unix.EINTR {
			return n, err
		}
	}
}

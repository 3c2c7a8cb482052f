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
	// A buffer with some room is read into without asking the file's size
	// first: one system call less in the common case of a buffer reused for
	// the same file. Only a file that fills it is sized with fstat, once.
	data, sized := buf[:0], false
	if cap(buf) < minUnsized+spare {
		data, sized = fit(fd, buf, spare), true
	}
	for {
		if len(data) == cap(data) && !sized {
			// The file is at least as large as the buffer: size it, once.
			sized = true
			if whole := fit(fd, nil, spare); cap(whole) > cap(data) {
				data = append(whole, data...)
			}
		}
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

// fit returns a buffer for the file open at fd: buf[:0] if it holds the
// file's size (as fstat tells) with spare bytes left over, else a new one.
func fit(fd int, buf []byte, spare int) []byte {
	size := int64(-1)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		size = st.Size
	}
	return sized(buf, size, spare)
}

// minUnsized is the least room a buffer must have, beyond the spare bytes,
// to be read into without an fstat first.
const minUnsized = 4 << 10

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

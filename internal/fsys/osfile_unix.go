//go:build unix

package fsys

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

func openRegular(path string, flag int, perm fs.FileMode) (*os.File, fs.FileMode, error) {
	// The flags are readFile's (see there), with the caller's.
	fd, err := retry(func() (int, error) {
		return unix.Open(path, flag|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, uint32(perm.Perm()))
	})
	if err != nil {
		return nil, 0, openError(path, err)
	}
	var st unix.Stat_t
	if _, err := retry(func() (int, error) { return 0, unix.Fstat(fd, &st) }); err != nil {
		unix.Close(fd)
		return nil, 0, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	mode := fileMode(uint32(st.Mode)) | fs.FileMode(st.Mode&0o777)
	if !mode.IsRegular() {
		unix.Close(fd)
		return nil, 0, &fs.PathError{Op: "open", Path: path, Err: NotRegular(mode)}
	}
	// A regular file ignores O_NONBLOCK, but the *os.File is the usual
	// blocking one (see the package doc), and a caller may hand it on.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, 0, &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), mode, nil
}

func readFile(path string, buf []byte, spare int) ([]byte, error) {
	// O_NONBLOCK: opening a named pipe for reading otherwise waits, forever,
	// for a writer; a regular file ignores the flag. O_NOCTTY: a terminal at
	// the path must not become the process's controlling terminal. Whatever
	// was opened is refused below unless fstat says it is a regular file.
	fd, err := retry(func() (int, error) {
		return unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, openError(path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if _, err := retry(func() (int, error) { return 0, unix.Fstat(fd, &st) }); err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if mode := fileMode(uint32(st.Mode)); !mode.IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: NotRegular(mode)}
	}
	data := sized(buf, st.Size, spare)
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

// openError is the error for a failed open of path. A socket cannot be
// opened at all (ENXIO on Linux, EOPNOTSUPP on the BSDs), a named pipe
// without a reader cannot be opened for writing without waiting (ENXIO),
// and a directory cannot be opened for writing (EISDIR): when the path names
// anything but a regular file, the error says so, as it does for what can
// be opened.
func openError(path string, err error) error {
	if err == unix.ENXIO || err == unix.EOPNOTSUPP || err == unix.EISDIR {
		var st unix.Stat_t
		if unix.Stat(path, &st) == nil {
			if mode := fileMode(uint32(st.Mode)); !mode.IsRegular() {
				return &fs.PathError{Op: "open", Path: path, Err: NotRegular(mode)}
			}
		}
	}
	return &fs.PathError{Op: "open", Path: path, Err: err}
}

// fileMode is the type bits of a stat mode as an fs.FileMode.
func fileMode(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	case unix.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
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

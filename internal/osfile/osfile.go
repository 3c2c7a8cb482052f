// Package osfile opens and reads regular files with fewer system calls than
// package os.
//
// os.OpenFile tries to register every new descriptor with the runtime's
// network poller (fcntl to set O_NONBLOCK, epoll_ctl, which a regular file
// refuses, and fcntl twice more to undo it): five calls that cost more than
// the open itself on a virtual machine. A transaction opens three files, so
// the engine and package atomicfile open theirs here. The *os.File returned
// behaves as usual (os.NewFile: blocking, not in the poller).
package osfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// OpenFile is os.OpenFile for regular files and directories, returning the
// same *fs.PathError values.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return openFile(path, flag, perm)
}

// ReadFile is os.ReadFile: it returns the whole file, with the same errors.
// On Unix it reads with bare system calls (open, fstat, read, close), without
// an *os.File at all.
func ReadFile(path string) ([]byte, error) { return readFile(path) }

// readFileOS is ReadFile through an *os.File from OpenFile.
func readFileOS(path string) ([]byte, error) {
	f, err := OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := 512
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 && int64(int(fi.Size())) == fi.Size() {
		size = int(fi.Size()) + 1 // one more, to see EOF without growing
	}
	data := make([]byte, 0, size)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err != nil {
			if errors.Is(err, io.EOF) {
				return data, nil
			}
			return data, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}

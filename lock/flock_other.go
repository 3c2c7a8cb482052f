//go:build !(darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd || windows)

package lock

import (
	"errors"
	"io"
	"os"
)

const maxIdle = 0

// errNotDir matches nothing here: os.Stat reports what it reports.
var errNotDir = errors.New("lock: not a directory")

func lockFD(fd uintptr, block bool) error { return ErrNotSupported }

func unlockFD(fd uintptr) error { return ErrNotSupported }

// readOnce reads at most len(b) bytes of f at off: fewer than len(b) need
// not mean the end of the file.
func readOnce(f *os.File, b []byte, off int64) (int, error) {
	n, err := f.ReadAt(b, off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

func isWouldBlock(err error) bool { return false }

func isNotSupported(err error) bool { return errors.Is(err, ErrNotSupported) }

// idOfPath and idOfFile fall back to the path itself: without locking there
// is nothing for the identity to protect.
func idOfPath(path string) (fileID, error) {
	if _, err := os.Stat(path); err != nil {
		return fileID{}, err
	}
	return fileID{name: path}, nil
}

func idOfFile(f *os.File) (fileID, error) { return fileID{name: f.Name()}, nil }

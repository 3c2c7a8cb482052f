//go:build !(darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd || windows)

package lock

import (
	"errors"
	"os"
)

const maxIdle = 0

// errNotDir matches nothing here: os.Stat reports what it reports.
var errNotDir = errors.New("lock: not a directory")

func lockFD(fd uintptr, block bool) error { return ErrNotSupported }

func unlockFD(fd uintptr) error { return ErrNotSupported }

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

//go:build !(darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd || windows)

package lock_test

import (
	"errors"
	"os"
)

// rawLockCycle: this system has no lock primitive for the package to beat.
func rawLockCycle(path string) error { return errors.ErrUnsupported }

func inodeOf(path string) string { return "" }

func rawHold(path string) (func() error, error) { return nil, errors.ErrUnsupported }

func rawLockOnFD(f *os.File) error { return errors.ErrUnsupported }

//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package lock_test

import (
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// rawLockCycle is the floor of BenchmarkAcquireRelease: open, flock(2)
// exclusive, unlock, close.
func rawLockCycle(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	return unix.Flock(int(f.Fd()), unix.LOCK_UN)
}

// inodeOf returns the inode number of the file at path, or "" if unknown.
func inodeOf(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return strconv.FormatUint(uint64(fi.Sys().(*syscall.Stat_t).Ino), 10)
}

// rawHold is the floor of a hand-off: open, flock(2) exclusive (waiting),
// and unlock plus close to release.
func rawHold(path string) (func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		err := unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
		return err
	}, nil
}

// rawLockOnFD is the floor of BenchmarkRawFlockHeldFD: flock(2) exclusive
// and unlock on a descriptor already open.
func rawLockOnFD(f *os.File) error {
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	return unix.Flock(int(f.Fd()), unix.LOCK_UN)
}

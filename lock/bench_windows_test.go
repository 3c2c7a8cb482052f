package lock_test

import (
	"os"

	"golang.org/x/sys/windows"
)

// rawLockCycle is the floor of BenchmarkAcquireRelease: open, LockFileEx
// exclusive on byte 0 (as the package locks), unlock, close.
func rawLockCycle(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	h := windows.Handle(f.Fd())
	if err := windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, new(windows.Overlapped)); err != nil {
		return err
	}
	return windows.UnlockFileEx(h, 0, 1, 0, new(windows.Overlapped))
}

// inodeOf is used only on Linux.
func inodeOf(path string) string { return "" }

// rawHold is the floor of a hand-off: open, LockFileEx exclusive on byte 0
// (waiting), and unlock plus close to release.
func rawHold(path string) (func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	h := windows.Handle(f.Fd())
	if err := windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, new(windows.Overlapped)); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		err := windows.UnlockFileEx(h, 0, 1, 0, new(windows.Overlapped))
		f.Close()
		return err
	}, nil
}

// rawLockOnFD is the floor of BenchmarkRawFlockHeldFD: LockFileEx exclusive
// on byte 0 and unlock on a handle already open.
func rawLockOnFD(f *os.File) error {
	h := windows.Handle(f.Fd())
	if err := windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, new(windows.Overlapped)); err != nil {
		return err
	}
	return windows.UnlockFileEx(h, 0, 1, 0, new(windows.Overlapped))
}

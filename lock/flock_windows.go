//go:build windows

package lock

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/windows"
)

// maxIdle is 0 on Windows: an open handle keeps a directory from being
// removed there, so a released lock file is closed at once.
const maxIdle = 0

// errNotDir is the errno of a path whose directory part is a file (Windows
// reports such a path as not found, which gone matches anyway).
const errNotDir = windows.ERROR_DIRECTORY

// lockFD locks byte 0 (one byte) of the file with LockFileEx. bmad-loop's
// Python lock (msvcrt.locking) locks the same byte, so the two serialize.
// Windows byte-range locks are mandatory for the range: the holder record is
// therefore written from offset 1 on, where readers are not refused.
func lockFD(fd uintptr, block bool) error {
	flags := uint32(windows.LOCKFILE_EXCLUSIVE_LOCK)
	if !block {
		flags |= windows.LOCKFILE_FAIL_IMMEDIATELY
	}
	ol := new(windows.Overlapped)
	return windows.LockFileEx(windows.Handle(fd), flags, 0, 1, 0, ol)
}

func unlockFD(fd uintptr) error {
	ol := new(windows.Overlapped)
	return windows.UnlockFileEx(windows.Handle(fd), 0, 1, 0, ol)
}

// readOnce reads at most len(b) bytes of f at off: fewer than len(b) need
// not mean the end of the file.
func readOnce(f *os.File, b []byte, off int64) (int, error) {
	n, err := f.ReadAt(b, off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

func isWouldBlock(err error) bool {
	return errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING)
}

func isNotSupported(err error) bool {
	return errors.Is(err, windows.ERROR_NOT_SUPPORTED) || errors.Is(err, windows.ERROR_INVALID_FUNCTION)
}

// idOfPath opens path to read its volume serial number and file index:
// Windows exposes identity only through a handle.
func idOfPath(path string) (fileID, error) {
	f, err := os.Open(path)
	if err != nil {
		return fileID{}, err
	}
	defer f.Close()
	return idOfFile(f)
}

func idOfFile(f *os.File) (fileID, error) {
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &info); err != nil {
		return fileID{}, &os.PathError{Op: "GetFileInformationByHandle", Path: f.Name(), Err: err}
	}
	return fileID{
		dev: uint64(info.VolumeSerialNumber),
		ino: uint64(info.FileIndexHigh)<<32 | uint64(info.FileIndexLow),
	}, nil
}

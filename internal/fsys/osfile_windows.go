package fsys

import (
	"errors"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/windows"
)

// openBudget is how long readFile keeps retrying an open that a concurrent
// replace refuses; openMaxDelay caps the pause between two attempts.
const (
	openBudget   = 2 * time.Second
	openMaxDelay = 100 * time.Millisecond
)

// openFile is os.OpenFile, except that a file opened for reading only
// (os.O_RDONLY and no other flag) is opened by openRead, sharing delete
// access.
func openFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	if flag == os.O_RDONLY {
		return openRead(path)
	}
	return os.OpenFile(path, flag, perm)
}

// openRead opens path for reading, as os.Open does, except that the handle
// shares delete access (FILE_SHARE_DELETE) as well as reading and writing.
//
// os.Open shares reading and writing only. A handle that does not share
// delete access refuses, while it is open, every rename and removal of its
// file: a writer's replace of the file (MoveFileEx over it, which needs
// delete access to the old file) fails with ERROR_SHARING_VIOLATION for as
// long as any reader has it open, so a stream of lock-free readers could
// hold off a locked writer past its retry budget (fsys's replace). With
// FILE_SHARE_DELETE a reader never stands in the way of a rename: the
// writer's POSIX-semantics rename replaces the file at once and the reader
// goes on reading the old one, as on Unix.
//
// Like os.Open it opens a directory too (FILE_FLAG_BACKUP_SEMANTICS), the
// handle is not inherited by child processes, and a failure is an
// *fs.PathError with Op "open" wrapping the Windows error. A long path gets
// LongPath's prefix, as os gives it.
func openRead(path string) (*os.File, error) {
	if path == "" {
		return nil, &fs.PathError{Op: "open", Path: path, Err: windows.ERROR_FILE_NOT_FOUND}
	}
	p, err := windows.UTF16PtrFromString(LongPath(path))
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}

func openRegular(path string, flag int, perm fs.FileMode) (*os.File, fs.FileMode, error) {
	return openRegularOS(path, flag, perm)
}

// readFile is readFileOS, retrying an open that fails only because another
// process is replacing the file.
//
// On Windows a rename over a file and a reader's open exclude each other:
// while MoveFileEx replaces the target (atomicfile's replace, or any other
// writer's), an open of that name fails with ERROR_SHARING_VIOLATION, or with
// ERROR_ACCESS_DENIED while the old file is still being deleted. A lock-free
// read (View, a store's probe) meets that whenever a writer publishes, and a
// read under the lock meets it when a process without the lock writes. Those
// holds last as long as the rename, so both errors are retried, pausing 1 ms,
// 2 ms, 4 ms, ... up to 100 ms, for about 2 s in all, as cmd/go's robustio
// does for the same errors; then the last error is returned. A file that is
// really unreadable (an ACL that denies this user) therefore fails after that
// bound rather than at once. Any other error, and any failure after the open,
// is returned at once.
func readFile(path string, buf []byte, spare int) ([]byte, error) {
	var deadline time.Time
	delay := time.Millisecond
	for {
		data, err := readFileOS(path, buf, spare)
		if err == nil || !replacing(err) {
			return data, err
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(openBudget)
		}
		if time.Now().Add(delay).After(deadline) {
			return data, err
		}
		time.Sleep(delay)
		delay = min(2*delay, openMaxDelay)
	}
}

// replacing reports whether err is an open that a concurrent replace refused.
func replacing(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Op == "open" &&
		(errors.Is(pe.Err, windows.ERROR_SHARING_VIOLATION) || errors.Is(pe.Err, windows.ERROR_ACCESS_DENIED))
}

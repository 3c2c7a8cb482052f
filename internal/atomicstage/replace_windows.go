package atomicstage

import (
	"errors"
	"time"

	"golang.org/x/sys/windows"
)

// replaceBudget is how long replace keeps retrying a target that another process
// holds open; replaceMaxDelay caps the pause between two attempts.
const (
	replaceBudget   = 3 * time.Second
	replaceMaxDelay = 100 * time.Millisecond
)

// replace renames from over to with MoveFileEx(MOVEFILE_REPLACE_EXISTING), adding
// MOVEFILE_WRITE_THROUGH when durable so that it returns only once the move is on
// disk (Windows has no directory fsync to do that afterwards).
//
// On Windows a file that another process has open without FILE_SHARE_DELETE
// cannot be replaced: MoveFileEx fails with ERROR_SHARING_VIOLATION, or with
// ERROR_ACCESS_DENIED while a previous replace's old file is still being deleted
// or a virus scanner or indexer is looking at the new one. Those holds are
// usually brief, so both errors are retried, pausing 1 ms, 2 ms, 4 ms, ... up to
// 100 ms, for about 3 s in all; then the last error is returned. Any other error
// is returned at once.
func replace(from, to string, durable bool) error {
	src, err := windows.UTF16PtrFromString(from)
	if err != nil {
		return err
	}
	dst, err := windows.UTF16PtrFromString(to)
	if err != nil {
		return err
	}
	flags := uint32(windows.MOVEFILE_REPLACE_EXISTING)
	if durable {
		flags |= windows.MOVEFILE_WRITE_THROUGH
	}
	deadline := time.Now().Add(replaceBudget)
	delay := time.Millisecond
	for {
		err := windows.MoveFileEx(src, dst, flags)
		if err == nil {
			return nil
		}
		if !errors.Is(err, windows.ERROR_SHARING_VIOLATION) && !errors.Is(err, windows.ERROR_ACCESS_DENIED) {
			return err
		}
		if time.Now().Add(delay).After(deadline) {
			return err
		}
		time.Sleep(delay)
		delay = min(2*delay, replaceMaxDelay)
	}
}

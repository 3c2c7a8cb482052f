package osfile

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

func openFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag, perm)
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

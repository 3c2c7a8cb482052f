//go:build unix

package fsys

import (
	"golang.org/x/sys/unix"
)

// replace renames from over to. rename(2) replaces the name atomically: every
// open of to sees the old file or the new one, never neither and never a mix
// (POSIX rename, "If the link named by the new argument exists, it shall be
// removed and old renamed to new ... a link named new shall remain visible").
// Durability is the directory fsync's job, so durable is unused here.
//
// It calls renameat(2) directly: os.Rename first stats to, to refuse a
// directory, and Create has already refused every target that is not a
// regular file (one that has become a directory since makes rename(2) fail
// with EISDIR).
func replace(from, to string, durable bool) error {
	for {
		err := unix.Renameat(unix.AT_FDCWD, from, unix.AT_FDCWD, to)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return StepError{Step: "rename", Err: err}
		}
		return nil
	}
}

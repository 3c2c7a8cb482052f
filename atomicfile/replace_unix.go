//go:build unix

package atomicfile

import "os"

// replace renames from over to. rename(2) replaces the name atomically: every
// open of to sees the old file or the new one, never neither and never a mix
// (POSIX rename, "If the link named by the new argument exists, it shall be
// removed and old renamed to new ... a link named new shall remain visible").
// Durability is the directory fsync's job, so durable is unused here.
func replace(from, to string, durable bool) error {
	return os.Rename(from, to)
}

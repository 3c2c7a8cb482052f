//go:build !linux

package fsys

import "os"

// startWriteback does nothing here: Linux's sync_file_range(2), which the
// Linux version calls, has no portable counterpart. The fsync that follows
// does all the work.
func startWriteback(*os.File) {}

package fsys

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// checkWritable refuses, with an error wrapping [fs.ErrPermission], a target
// without the read-only attribute (which Go reports as a mode without write
// bits, and checkTarget refused) whose ACL denies opening it for writing. A
// sharing violation, from another process holding the file open, is not a
// permission problem: replace retries it.
func checkWritable(path string, fi fs.FileInfo) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err == nil {
		f.Close()
		return nil
	}
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("not writable: %w", UnwrapOS(err))
	}
	return nil
}

// tempPerm is the permission a temporary file standing in for the existing
// target fi is created with: writable, which is all that Windows keeps of it.
func tempPerm(fi fs.FileInfo) fs.FileMode { return 0o600 }

// keepMeta does nothing on Windows: a writable target's only permission bit is
// the read-only attribute, which is clear, and its ACL and owner are not copied
// (the new file inherits the directory's ACL).
func keepMeta(f *os.File, fi fs.FileInfo) error { return nil }

package fsys

import (
	"os"

	"golang.org/x/sys/windows"
)

// renameNoReplace uses MoveFileEx without MOVEFILE_REPLACE_EXISTING, which
// fails with ERROR_ALREADY_EXISTS (or ERROR_FILE_EXISTS) when newpath exists;
// both match fs.ErrExist. Both paths get LongPath's prefix when they
// are long, as os gives its own calls.
func renameNoReplace(oldpath, newpath string) error {
	src, err := windows.UTF16PtrFromString(LongPath(oldpath))
	if err != nil {
		return err
	}
	dst, err := windows.UTF16PtrFromString(LongPath(newpath))
	if err != nil {
		return err
	}
	if err := windows.MoveFileEx(src, dst, windows.MOVEFILE_WRITE_THROUGH); err != nil {
		return &os.LinkError{Op: "MoveFileEx", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}

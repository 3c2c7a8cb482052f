//go:build !unix

package fsys

import (
	"io/fs"
	"os"
)

// openRegularOS is OpenRegular through OpenFile, for systems without named
// pipes that block an open: what is not a regular file is refused after the
// open, or, when the open itself fails (a directory opened for writing), by
// a stat of the path.
func openRegularOS(path string, flag int, perm fs.FileMode) (*os.File, fs.FileMode, error) {
	f, err := OpenFile(path, flag, perm)
	if err != nil {
		if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
			return nil, 0, &fs.PathError{Op: "open", Path: path, Err: NotRegular(fi.Mode())}
		}
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, &fs.PathError{Op: "open", Path: path, Err: NotRegular(fi.Mode())}
	}
	return f, fi.Mode(), nil
}

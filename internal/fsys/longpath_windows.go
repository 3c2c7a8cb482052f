package fsys

import (
	"strings"

	"golang.org/x/sys/windows"
)

// LongPath returns the form of path that the Win32 calls accept whatever its
// length: path itself when it is short, and otherwise its absolute form with
// the extended-length prefix (\\?\C:\..., or \\?\UNC\server\share\... for a
// share), which lifts the limit of MAX_PATH (260 UTF-16 units) on every
// Windows. Package os does the same (its internal fixLongPath) for every
// call it makes; this is for the calls the module makes itself
// (MoveFileEx, CreateFile, SetFileInformationByHandle), which would
// otherwise fail with ERROR_PATH_NOT_FOUND on a path os handles.
//
// As in os, "short" is under 248 bytes once made absolute (a directory name
// must leave room for an 8.3 name under MAX_PATH), a path that already has
// the \\?\ or \??\ prefix is returned as it is, and so is a device path
// (\\.\...), which the prefix would change. The absolute form is
// GetFullPathName's, which also applies "." and ".." and turns slashes into
// backslashes, as the prefix requires (Windows does no such processing of a
// prefixed path). It costs nothing for an absolute path under 248 bytes, and
// one GetFullPathName (no I/O) otherwise. If that fails, path is returned
// unchanged, and the call it is given to reports the error.
func LongPath(path string) string {
	if len(path) < 248 && isAbs(path) {
		return path
	}
	if len(path) >= 4 && (path[:4] == `\??\` || isSep(path[0]) && isSep(path[1]) && path[2] == '?' && isSep(path[3])) {
		return path
	}
	full, err := windows.FullPath(path)
	if err != nil || len(full) < 248 {
		return path
	}
	switch {
	case strings.HasPrefix(full, `\\.\`):
		return path
	case strings.HasPrefix(full, `\\`):
		return `\\?\UNC\` + full[2:]
	}
	return `\\?\` + full
}

func isSep(c byte) bool { return c == '\\' || c == '/' }

// isAbs reports whether path is absolute for Windows: a drive letter, a colon
// and a separator, or a path starting with two separators (a share or a
// device).
func isAbs(path string) bool {
	if len(path) >= 3 && path[1] == ':' && isSep(path[2]) {
		return true
	}
	return len(path) >= 2 && isSep(path[0]) && isSep(path[1])
}

//go:build !linux

package fsys

import (
	"errors"
	"io/fs"
	"os"
)

// FileSystem reports no file system that one syncfs could flush: outside
// Linux there is no syncfs(2) (Darwin's and the BSDs' sync(2) waits for
// nothing, Windows has none), and the caller fsyncs.
func FileSystem(path string, f *os.File) (id uint64, ok bool) { return 0, false }

// SyncFS is not supported here: it returns an error wrapping
// errors.ErrUnsupported (FileSystem never reports a file system for it).
func SyncFS(path string, f *os.File) error {
	return &fs.PathError{Op: "syncfs", Path: path, Err: errors.ErrUnsupported}
}

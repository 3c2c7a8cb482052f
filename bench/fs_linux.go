package main

import (
	"fmt"
	"os"

	"github.com/filetxn/filetxn/internal/benchkit"
	"golang.org/x/sys/unix"
)

// fileSystem names the file system dir is on: the mount that holds it
// (see benchkit.Mount), if known, and statfs(2)'s type.
func fileSystem(dir string) string {
	var st unix.Statfs_t
	magic := "statfs failed"
	if err := unix.Statfs(dir, &st); err == nil {
		magic = fmt.Sprintf("statfs type %#x", st.Type)
	}
	if m := benchkit.Mount(dir); m != "" {
		return m + ", " + magic
	}
	return magic
}

// syncAll commits every file system's pending writes (sync(2)), so that
// work left by one section is not paid by the next.
func syncAll() { unix.Sync() }

// datasync is fdatasync(2): f's data, and of its metadata only what reading
// it back needs.
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

//go:build !unix && !windows

package fsys

import (
	"io/fs"
	"os"
)

// This file serves the systems that are neither Unix nor Windows (Plan 9,
// WebAssembly hosts) with what the standard library offers: the mode alone
// decides the read-only check (checkTarget's), and the rename is a plain one
// (the directory sync, attempted with its failure ignored, is
// internal/fsys's).

func checkWritable(path string, fi fs.FileInfo) error { return nil }

// tempPerm is the permission a temporary file standing in for the existing
// target fi is created with; keepMeta sets the target's own afterwards.
func tempPerm(fi fs.FileInfo) fs.FileMode { return 0o600 }

// keepMeta gives the temporary file f the permission bits of the target fi.
func keepMeta(f *os.File, fi fs.FileInfo) error {
	return f.Chmod(fi.Mode() & fs.ModePerm)
}

func replace(from, to string, durable bool) error {
	return os.Rename(from, to)
}

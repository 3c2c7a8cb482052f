//go:build unix && !linux

package main

import "os"

// fileSystem names the file system dir is on; only Linux's is decoded.
func fileSystem(dir string) string { return "not decoded on this OS" }

// syncAll does nothing here: a section's leftovers are left to the OS.
func syncAll() {}

// datasync is f.Sync here: fdatasync(2) is Linux's.
func datasync(f *os.File) error { return f.Sync() }

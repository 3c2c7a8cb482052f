//go:build darwin || dragonfly || freebsd || illumos || netbsd || openbsd

package lock

import "os"

// idOfPath returns the identity of the file that path names, following
// symlinks.
func idOfPath(path string) (fileID, error) { return statID(path) }

// idOfFile returns the identity of the open file f.
func idOfFile(f *os.File) (fileID, error) { return fstatID(f) }

//go:build !unix

package fsys

import "path/filepath"

// Key returns the lock's part of the names: the path of the lock file,
// made absolute and cleaned (so that "x.lock" and its absolute spelling are
// one lock), or the path as it is if the working directory cannot be found
// (safe: a holder spelling the lock otherwise only uses other names, and
// leaves a dead writer's file to the next holder spelling it the same way).
// The file's identity is not needed here: on Windows a lock file cannot be
// deleted or renamed over while it is held (package lock opens it without
// FILE_SHARE_DELETE), so the file at the path is the one every holder
// locked; elsewhere there are no locks to lose. It costs a getwd for a
// relative path, nothing for an absolute one, and is never false.
func Key(lockPath string) (string, bool) {
	if abs, err := filepath.Abs(lockPath); err == nil {
		return "p" + abs, true
	}
	return "p" + filepath.Clean(lockPath), true
}

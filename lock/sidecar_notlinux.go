//go:build !linux

package lock

// linkFree reports whether every component of the absolute path abs exists
// and none is a symbolic link, where one system call can tell (Linux); here
// it always answers false, "resolve it the long way".
func linkFree(abs string) bool { return false }

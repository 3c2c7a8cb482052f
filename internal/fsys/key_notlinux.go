//go:build unix && !linux

package fsys

// identity returns the device and inode numbers of the file at path,
// following symbolic links.
func identity(path string) (dev, ino uint64, ok bool) { return statIdentity(path) }

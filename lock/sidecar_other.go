//go:build !unix

package lock

import (
	"io/fs"
	"os"
)

// isSymlink reports whether path names a symbolic link.
func isSymlink(path string) (bool, error) {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&fs.ModeSymlink != 0, err
}

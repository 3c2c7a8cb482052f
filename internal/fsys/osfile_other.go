//go:build !unix && !windows

package fsys

import (
	"io/fs"
	"os"
)

func openFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag, perm)
}

func openRegular(path string, flag int, perm fs.FileMode) (*os.File, fs.FileMode, error) {
	return openRegularOS(path, flag, perm)
}

func readFile(path string, buf []byte, spare int) ([]byte, error) {
	return readFileOS(path, buf, spare)
}

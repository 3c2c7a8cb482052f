//go:build !linux

package staletemp

import "os"

// openDir opens dir to read its entries.
func openDir(dir string) (*os.File, error) { return os.Open(dir) }

//go:build !unix && !windows

package fsys

import "os"

// syncDir attempts to fsync the directory dir and ignores a failure: these
// systems (Plan 9, WebAssembly hosts) may not support it.
func syncDir(dir string) error {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

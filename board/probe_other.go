//go:build !unix

package board

import (
	"errors"
	"io/fs"
	"os"
)

// readProbe reads the board for Advance's lock-free probe: its bytes (non-nil, empty for
// an empty file), or nil when it does not exist. ok is false on any other outcome, which
// the probe leaves to the locked pass to decide and report.
func readProbe(path string) (data []byte, ok bool) {
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if data == nil {
			data = []byte{}
		}
		return data, true
	case errors.Is(err, fs.ErrNotExist):
		return nil, true
	default:
		return nil, false
	}
}

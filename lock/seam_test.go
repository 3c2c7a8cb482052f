package lock_test

import (
	"testing"

	"github.com/filetxn/filetxn/internal/seam"
)

// onPoint calls fn with the lock file's path each time any acquisition or
// release of the process passes point, until t ends. Call it before
// starting the goroutines that may pass there.
func onPoint(t testing.TB, point seam.Point, fn func(path string)) {
	seam.Set(t, func(p seam.Point, path string) error {
		if p == point {
			fn(path)
		}
		return nil
	})
}

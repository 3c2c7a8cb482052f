//go:build !unix

package ledger

import (
	"testing"
	"time"
)

// newFloor measures nothing where flock(2) is not available: the ratios are
// reported on Unix.
func newFloor(b *testing.B, seed []byte) func(n int) time.Duration {
	return func(int) time.Duration { return 0 }
}

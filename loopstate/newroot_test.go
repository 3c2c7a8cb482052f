package loopstate

import (
	"errors"
	"testing"
)

// TestNewRootRefusesWhatItCannotHonour: an empty directory and a nil clock
// are refused with ErrInvalid, before any I/O, as filetxn.NewStore,
// ledger.Open and board.Open refuse theirs. Ablation: dropping either check
// returns a Root that fails later (Create in the working directory's
// "loops", or a nil-func panic on the first tick).
func TestNewRootRefusesWhatItCannotHonour(t *testing.T) {
	for name, opts := range map[string][]Option{"empty directory": nil, "nil clock": {WithClock(nil)}} {
		dir := ""
		if name != "empty directory" {
			dir = t.TempDir()
		}
		if r, err := NewRoot(dir, opts...); !errors.Is(err, ErrInvalid) || r != nil {
			t.Errorf("NewRoot(%s) = %v, %v, want nil and ErrInvalid", name, r, err)
		}
	}
	if _, err := NewRoot(t.TempDir()); err != nil {
		t.Errorf("NewRoot(dir) = %v, want nil", err)
	}
}

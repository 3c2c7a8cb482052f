package loopstate

import (
	"errors"
	"testing"

	"github.com/filetxn/filetxn"
)

// TestNewRootRefusesWhatItCannotHonour: an empty directory and an invalid
// engine option (an empty lock path) are refused with filetxn.ErrInvalidArgument, before any
// I/O, as filetxn.NewStore, ledger.Open and board.Open refuse theirs.
// Ablation: dropping either check returns a Root that fails later (Create in
// the working directory's "loops", or every transaction of its loops).
func TestNewRootRefusesWhatItCannotHonour(t *testing.T) {
	for name, opts := range map[string][]filetxn.Option{"empty directory": nil, "empty lock path": {filetxn.WithLockPath("")}} {
		dir := ""
		if name != "empty directory" {
			dir = t.TempDir()
		}
		if r, err := NewRoot(dir, opts...); !errors.Is(err, filetxn.ErrInvalidArgument) || r != nil {
			t.Errorf("NewRoot(%s) = %v, %v, want nil and filetxn.ErrInvalidArgument", name, r, err)
		}
	}
	if _, err := NewRoot(t.TempDir()); err != nil {
		t.Errorf("NewRoot(dir) = %v, want nil", err)
	}
}

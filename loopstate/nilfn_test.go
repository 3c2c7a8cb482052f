package loopstate

import (
	"errors"
	"testing"

	"github.com/filetxn/filetxn"
)

// TestMutateRefusesANilFn: Loop.Mutate with a nil fn returns an error
// matching filetxn.ErrInvalidArgument, before any I/O, and the loop's
// state is unchanged. Ablation: dropping the check makes Mutate panic with
// a nil dereference under the loop's lock, and this test goes red.
func TestMutateRefusesANilFn(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{})
	before := mustView(t, l)
	if _, err := l.Mutate(ctx0, nil); !errors.Is(err, filetxn.ErrInvalidArgument) {
		t.Fatalf("Mutate(nil) = %v, want an error matching filetxn.ErrInvalidArgument", err)
	}
	if after := mustView(t, l); after.UpdatedAt != before.UpdatedAt {
		t.Errorf("UpdatedAt after Mutate(nil) = %v, want %v", after.UpdatedAt, before.UpdatedAt)
	}
}

//go:build !(darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd)

package lock_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/filetxn/filetxn/lock"
)

// TestHandOverNotSupported: without flock(2) there is no hand-over; HandOver
// says so with ErrNotSupported and leaves the command untouched. The
// cross-process hand-over tests (handover_test.go) run only where flock(2)
// exists.
func TestHandOverNotSupported(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	h := mustAcquire(t, path)
	cmd := exec.Command("true")
	if err := h.HandOver(cmd); !errors.Is(err, lock.ErrNotSupported) {
		t.Fatalf("HandOver(cmd) = %v, want ErrNotSupported", err)
	}
	if cmd.Env != nil || len(cmd.ExtraFiles) != 0 {
		t.Errorf("HandOver changed cmd: Env %v, ExtraFiles %v", cmd.Env, cmd.ExtraFiles)
	}
}

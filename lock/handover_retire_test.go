//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package lock_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// TestHandedOverDescriptorIsRetired: a child that outlives the hold it was
// lent (here it just keeps running) must not pass the hand-over check when
// the parent takes the lock again. Ablation: without retiring the handed-over
// entry in release, the parent re-locks the very description the child
// inherited, the child's check succeeds and it "borrows" a lock the parent
// holds for itself: this test goes red.
func TestHandedOverDescriptorIsRetired(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		path := filepath.Join(c.Dir, "x.lock")
		c.Mark("started")
		testkit.WaitFor(c.T, filepath.Join(c.Dir, "relocked"))
		h, err := lock.TryAcquire(path)
		if err == nil {
			h.Release()
			c.T.Fatalf("TryAcquire after the parent's hold ended and it re-locked = borrowed %v, want ErrWouldBlock", h.Borrowed())
		}
		if !errors.Is(err, lock.ErrWouldBlock) {
			c.T.Fatalf("TryAcquire = %v, want ErrWouldBlock", err)
		}
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	h1, err := lock.Acquire(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	g := testkit.StartWith(t, 1, dir, testkit.Options{Prepare: func(i int, cmd *exec.Cmd) error { return h1.HandOver(cmd) }})
	g.WaitMark("started")
	if err := h1.Release(); err != nil {
		t.Fatal(err)
	}
	h2, err := lock.Acquire(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Release()
	if err := os.WriteFile(filepath.Join(dir, "relocked"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	g.Wait()
}

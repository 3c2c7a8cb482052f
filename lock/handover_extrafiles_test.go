//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package lock_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// TestHandOverSurvivesLaterChangesToExtraFiles: the parent hands its lock
// over and then changes cmd.ExtraFiles, one way per child. A child whose
// ExtraFiles still hold the lock file, wherever it ended up, borrows the
// lock at once; a child whose ExtraFiles lost it gets an error matching
// ErrHandOverBroken that names the lock file, from TryAcquire and from
// Acquire, at once: never a lock through another descriptor, never a wait
// for its parent (which holds the lock until its children exit).
//
// The changes: another file appended; another file put first, which moves
// the lock file's descriptor from the number HandOver named; an append to
// the slice as it was before HandOver, which writes over the lock file's
// place in the shared array; ExtraFiles replaced by another file; and
// replaced by a fresh open of the lock file (the same file at the named
// descriptor, but not the description that holds the lock).
//
// Ablations (run): inherited() looking only at the named descriptor (no
// search of the others) makes the child whose lock file was moved get
// ErrHandOverBroken; inherited() without ErrHandOverBroken, as before,
// leaves the three children that lost the lock file with ErrWouldBlock
// from TryAcquire and waiting for their parent until their deadline.
func TestHandOverSurvivesLaterChangesToExtraFiles(t *testing.T) {
	cases := []struct {
		name   string
		borrow bool // the child must borrow; otherwise it must get ErrHandOverBroken
	}{
		{"appended", true},
		{"prepended", true},
		{"appended to the slice before HandOver", false},
		{"replaced", false},
		{"replaced by a fresh open of the lock file", false},
	}
	if c := testkit.Child(t); c != nil {
		path := filepath.Join(c.Dir, "x.lock")
		tc := cases[c.Index]
		h, err := lock.TryAcquire(path)
		if tc.borrow {
			if err != nil || !h.Borrowed() {
				c.T.Fatalf("child %q: TryAcquire(%q) = %s, %v, want a borrowed handle", tc.name, path, describe(h), err)
			}
			if err := h.Release(); err != nil {
				c.T.Fatalf("child %q: Release() of a borrowed handle = %v", tc.name, err)
			}
			return
		}
		var pe *fs.PathError
		if !errors.Is(err, lock.ErrHandOverBroken) || !errors.As(err, &pe) || pe.Path != path {
			c.T.Fatalf("child %q: TryAcquire(%q) = %s, %v, want ErrHandOverBroken naming the lock file", tc.name, path, describe(h), err)
		}
		c.T.Logf("child %q: TryAcquire: %v", tc.name, err)
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		h, err = lock.Acquire(ctx, path)
		if !errors.Is(err, lock.ErrHandOverBroken) || ctx.Err() != nil {
			c.T.Fatalf("child %q: Acquire(%q) = %s, %v (ctx %v), want ErrHandOverBroken at once", tc.name, path, describe(h), err, ctx.Err())
		}
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	other, err := os.Create(filepath.Join(dir, "other"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	h, err := lock.Acquire(context.Background(), path, lock.WithPurpose("lend to children"))
	if err != nil {
		t.Fatalf("Acquire(%q) = %v", path, err)
	}
	defer h.Release()
	g := testkit.StartWith(t, len(cases), dir, testkit.Options{
		Prepare: func(i int, cmd *exec.Cmd) error {
			before := make([]*os.File, 0, 4)
			cmd.ExtraFiles = before
			if err := h.HandOver(cmd); err != nil {
				return err
			}
			switch cases[i].name {
			case "appended":
				cmd.ExtraFiles = append(cmd.ExtraFiles, other)
			case "prepended":
				cmd.ExtraFiles = append([]*os.File{other}, cmd.ExtraFiles...)
			case "appended to the slice before HandOver":
				cmd.ExtraFiles = append(before, other)
			case "replaced":
				cmd.ExtraFiles = []*os.File{other}
			case "replaced by a fresh open of the lock file":
				f, err := os.OpenFile(path, os.O_RDWR, 0)
				if err != nil {
					return err
				}
				t.Cleanup(func() { f.Close() })
				cmd.ExtraFiles = []*os.File{f}
			}
			return nil
		},
	})
	g.Wait()
}

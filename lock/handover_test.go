//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package lock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// TestHandOverLendsTheLockToAChild: the parent holds the lock and hands it
// to a child with HandOver. In the child, TryAcquire through a symlink and
// Acquire through the real path both return at once a borrowed handle; the
// child hands the borrowed lock on to a grandchild, which borrows it too. The
// borrowed handles' Release leaves the parent's lock held: after the child
// has exited, an unrelated process still gets ErrWouldBlock (and sees the
// parent's holder record), and once the parent releases, it gets the lock.
//
// Ablations that turn it red: release() of a borrowed entry unlocking the
// inherited descriptor (the parent's open file description): the child's
// second Acquire is no longer borrowed, because the parent's lock is gone.
// (Dropping release's "if !e.borrowed" guard alone stays green: it unlocks
// the child's own description, which holds nothing.) HandOver on a borrowed
// handle passing e.f (the child's own, unlocked description) instead of a
// dup of the inherited descriptor: the grandchild waits into its deadline.
func TestHandOverLendsTheLockToAChild(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		path := filepath.Join(c.Dir, "x.lock")
		link := filepath.Join(c.Dir, "link.lock")
		switch c.Args {
		case "child":
			h, err := lock.TryAcquire(link)
			if err != nil || !h.Borrowed() {
				t.Fatalf("child: TryAcquire(%q) = %v, %v, want a borrowed handle", link, h, err)
			}
			if err := h.Release(); err != nil {
				t.Fatalf("child: Release() of a borrowed handle = %v", err)
			}
			h = childAcquire(c, path)
			if !h.Borrowed() {
				t.Fatalf("child: Acquire(%q).Borrowed() = false, want true", path)
			}
			if rec, err := lock.ReadHolder(path); err != nil || rec == nil || rec.PID != os.Getppid() {
				t.Fatalf("child: ReadHolder(%q) while borrowing = %+v, %v, want the parent's pid %d", path, rec, err, os.Getppid())
			}
			g := testkit.StartWith(t, 1, c.Dir, testkit.Options{
				Args:    "grandchild",
				Prepare: func(i int, cmd *exec.Cmd) error { return h.HandOver(cmd) },
			})
			g.Wait()
			if err := h.Release(); err != nil {
				t.Fatalf("child: Release() of a borrowed handle = %v", err)
			}
		case "grandchild":
			h := childAcquire(c, link)
			if !h.Borrowed() {
				t.Fatalf("grandchild: Acquire(%q).Borrowed() = false, want true", link)
			}
			h.Release()
		case "probe-held":
			_, err := lock.TryAcquire(path)
			var busy *lock.BusyError
			if !errors.Is(err, lock.ErrWouldBlock) || !errors.As(err, &busy) {
				t.Fatalf("probe: TryAcquire(%q) after the borrowers exited = %v, want ErrWouldBlock", path, err)
			}
			if busy.Holder == nil || busy.Holder.PID != os.Getppid() || busy.Holder.Purpose != "lend to child" {
				t.Fatalf("probe: holder after the borrowers exited = %v, want the parent (pid %d) lending", busy.Holder, os.Getppid())
			}
		case "probe-free":
			h, err := lock.TryAcquire(path)
			if err != nil {
				t.Fatalf("probe: TryAcquire(%q) after the parent released = %v, want nil", path, err)
			}
			h.Release()
		}
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	if err := os.Symlink("x.lock", filepath.Join(dir, "link.lock")); err != nil {
		t.Fatal(err)
	}
	h, err := lock.Acquire(context.Background(), path, lock.WithPurpose("lend to child"))
	if err != nil {
		t.Fatalf("Acquire(%q) = %v", path, err)
	}
	defer h.Release()
	g := testkit.StartWith(t, 1, dir, testkit.Options{
		Args:    "child",
		Prepare: func(i int, cmd *exec.Cmd) error { return h.HandOver(cmd) },
	})
	g.Wait()
	testkit.StartWith(t, 1, dir, testkit.Options{Args: "probe-held"}).Wait()
	if err := h.Release(); err != nil {
		t.Fatalf("Release() = %v", err)
	}
	testkit.StartWith(t, 1, dir, testkit.Options{Args: "probe-free"}).Wait()
}

// TestHandoverEnvAloneGrantsNothing is the security property of HandOver: a
// process that was not handed the lock, but has HandoverEnv set by hand to
// the right descriptor number, device and inode, gets ErrWouldBlock from
// TryAcquire and waits like any other process in Acquire. Three forgeries,
// one child each: 0, the variable alone (descriptor 3 is whatever the child
// has open there; refused by the identity check); 1, the variable plus
// a fresh open of the lock file passed as descriptor 3 in cmd.ExtraFiles (the
// same file, but not the open file description that holds the lock); 2, the
// child's own fresh open of the lock file, named in a variable that it sets
// itself.
//
// The variables carry the holder's pid and a made-up nonce: the nonce is no
// secret (the holder record is readable), and the flock check is what
// refuses these forgeries. Ablation that turns it red: prove() skipping
// its flock verification and its nonce check (accepting any descriptor of
// the right device and inode): forgeries 1 and 2 get a borrowed handle at
// once from TryAcquire.
func TestHandoverEnvAloneGrantsNothing(t *testing.T) {
	forgeries := []string{"env-only", "env-and-fresh-open", "own-open"}
	if c := testkit.Child(t); c != nil {
		path := filepath.Join(c.Dir, "x.lock")
		forgery := forgeries[c.Index]
		if forgery == "own-open" {
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			os.Setenv(lock.HandoverEnv, fmt.Sprintf("%d:%s:%d:forged", f.Fd(), devIno(t, path), os.Getppid()))
		}
		t.Logf("forgery %s: %s=%s", forgery, lock.HandoverEnv, os.Getenv(lock.HandoverEnv))
		h, err := lock.TryAcquire(path)
		if !errors.Is(err, lock.ErrWouldBlock) {
			t.Fatalf("forgery %s: TryAcquire(%q) = %s, %v, want ErrWouldBlock", forgery, path, describe(h), err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		h, err = lock.Acquire(ctx, path)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("forgery %s: Acquire(%q, 50ms deadline) = %s, %v, want DeadlineExceeded", forgery, path, describe(h), err)
		}
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	h, err := lock.Acquire(context.Background(), path, lock.WithPurpose("not lent"))
	if err != nil {
		t.Fatalf("Acquire(%q) = %v", path, err)
	}
	defer h.Release()
	g := testkit.StartWith(t, len(forgeries), dir, testkit.Options{
		Env: []string{fmt.Sprintf("%s=3:%s:%d:forged", lock.HandoverEnv, devIno(t, path), os.Getpid())},
		Prepare: func(i int, cmd *exec.Cmd) error {
			if forgeries[i] != "env-and-fresh-open" {
				return nil
			}
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				return err
			}
			t.Cleanup(func() { f.Close() })
			cmd.ExtraFiles = append(cmd.ExtraFiles, f)
			return nil
		},
	})
	g.Wait()
}

// describe names a handle for a failure message.
func describe(h *lock.Handle) string {
	if h == nil {
		return "nil"
	}
	return fmt.Sprintf("handle(borrowed=%v)", h.Borrowed())
}

// devIno returns "dev:ino" of the file at path, as HandoverEnv spells them.
func devIno(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return fmt.Sprintf("%d:%d", uint64(st.Dev), uint64(st.Ino))
}

// TestChildOwnsAHandedOverLockReleasedBeforeItLooks: the parent hands the
// lock over and lets it go just after the child failed to take it on its own
// descriptor and before the child tries the inherited one (the hook between
// the two). The inherited description is then granted the lock because
// nobody holds it, not because the parent does, and the holder record no
// longer carries the hand-over's nonce: the child must own the lock, not
// borrow it, and its Release must unlock it, which the parent sees while the
// child still runs (with the inherited descriptor still open).
//
// Ablation that turns it red: prove() taking the grant on the inherited
// descriptor as proof (no nonce check): the child's handle is borrowed, its
// Release unlocks nothing, and the parent's TryAcquire stays busy until the
// child exits.
func TestChildOwnsAHandedOverLockReleasedBeforeItLooks(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		path := filepath.Join(c.Dir, "x.lock")
		var once sync.Once
		onPoint(t, seam.Inherited, func(string) {
			once.Do(func() {
				c.Mark("tried-own")
				waitFile(t, filepath.Join(c.Dir, "released"))
			})
		})
		h := childAcquire(c, path, lock.WithPurpose("child"))
		borrowed := h.Borrowed()
		require.NoError(t, h.Release(), "child: Release()")
		require.False(t, borrowed, "child: Acquire(%q).Borrowed() after the parent let go = true, want false", path)
		c.Mark("child-released")
		waitFile(t, filepath.Join(c.Dir, "probed"))
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	h, err := lock.Acquire(context.Background(), path, lock.WithPurpose("lend, then let go"))
	require.NoError(t, err, "Acquire(%q)", path)
	g := testkit.StartWith(t, 1, dir, testkit.Options{
		Args:    "child",
		Prepare: func(i int, cmd *exec.Cmd) error { return h.HandOver(cmd) },
	})
	g.WaitMark("tried-own")
	require.NoError(t, h.Release(), "Release()")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "released"), nil, 0o644))
	g.WaitMark("child-released")
	h2, err := lock.TryAcquire(path)
	require.NoError(t, err, "TryAcquire(%q) after the child released = %v, want nil", path, err)
	require.NoError(t, h2.Release())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "probed"), nil, 0o644))
	g.Wait()
}

// TestHandOverOfALockWithoutHolderRecord: a lock taken WithoutHolder can
// still be handed over (HandOver writes the record that carries the proof),
// and the parent's Release clears that record again.
func TestHandOverOfALockWithoutHolderRecord(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		path := filepath.Join(c.Dir, "x.lock")
		h, err := lock.TryAcquire(path)
		require.NoError(t, err, "child: TryAcquire(%q)", path)
		require.True(t, h.Borrowed(), "child: TryAcquire(%q).Borrowed() = false, want true", path)
		require.NoError(t, h.Release())
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	h, err := lock.Acquire(context.Background(), path, lock.WithoutHolder())
	require.NoError(t, err, "Acquire(%q, WithoutHolder)", path)
	testkit.StartWith(t, 1, dir, testkit.Options{
		Prepare: func(i int, cmd *exec.Cmd) error { return h.HandOver(cmd) },
	}).Wait()
	require.NoError(t, h.Release())
	rec, err := lock.ReadHolder(path)
	require.True(t, rec == nil && err == nil, "ReadHolder(%q) after Release = %v, %v, want nil, nil", path, rec, err)
}

// TestHandOverWithALongPurpose: a lock held with a purpose whose JSON
// encoding is longer than the holder record can hold (2,000 "<", six bytes
// each) is still lent to a child, which checks the hand-over's nonce in
// that record. Ablation (run): recording the whole purpose whatever its
// length makes it red: the child could not read the record, took the lock
// for not handed over, and TryAcquire answered ErrWouldBlock.
func TestHandOverWithALongPurpose(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		path := filepath.Join(c.Dir, "x.lock")
		h, err := lock.TryAcquire(path)
		if err != nil || !h.Borrowed() {
			t.Fatalf("child: TryAcquire(%q) = %v, %v, want a borrowed handle", path, h, err)
		}
		h.Release()
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	h, err := lock.Acquire(context.Background(), path, lock.WithPurpose(strings.Repeat("<", 2000)))
	if err != nil {
		t.Fatalf("Acquire(%q) = %v", path, err)
	}
	defer h.Release()
	testkit.StartWith(t, 1, dir, testkit.Options{
		Prepare: func(i int, cmd *exec.Cmd) error { return h.HandOver(cmd) },
	}).Wait()
}

//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package lock_test

import (
	"cmp"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// TestAcquireAllKeepsItsOrderWhenALockFileIsReplaced: two processes take
// the same two locks through AcquireAll, one asking for (one, two), the
// other for (two, one). The first fixes its order by identity (one, then
// two) and then, at the seam between ordering and acquiring, replaces one of
// the two lock files by a rename of a spare file whose identity sorts on the
// other side, so that the second process, which orders after the
// replacement, orders them the other way round. The steps are forced to the
// interleaving that deadlocks an AcquireAll that keeps its stale order: the
// second process holds its first lock, the first goes on. Both must finish
// (each ctx is bound) holding locks on the files at the paths.
//
// The cases: the file ordered first replaced by one that sorts last (the
// first process would hold the new file and wait for the other), and the
// file ordered second replaced by one that sorts first (it would hold the
// first and wait, inside Acquire, for the new file, which the other process
// holds).
//
// Ablations (run): acquireAs ignoring want (AcquireAll keeping its first
// order) deadlocks both cases until the contexts end. Comparing each
// handle's identity with the order only after Acquire returned (not before
// it waits) fixes the first case only: the second deadlocks inside Acquire.
func TestAcquireAllKeepsItsOrderWhenALockFileIsReplaced(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ranks   [3]string // the files whose identities sort first, second and third
		replace string    // the lock file that the first process replaces by spare
	}{
		{"first sorts last", [3]string{"one.lock", "two.lock", "spare"}, "one.lock"},
		{"second sorts first", [3]string{"spare", "one.lock", "two.lock"}, "two.lock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if c := testkit.Child(t); c != nil {
				acquireAllAcrossAReplacement(c, tc.replace)
				return
			}
			dir := t.TempDir()
			ranked(t, dir, tc.ranks)
			testkit.Start(t, 2, dir).Wait()
			for _, name := range []string{"one.lock", "two.lock"} {
				p := filepath.Join(dir, name)
				h, err := lock.TryAcquire(p)
				require.NoError(t, err, "TryAcquire(%s) after both processes = %v, want it free", p, err)
				require.NoError(t, h.Release())
			}
		})
	}
}

// acquireAllAcrossAReplacement is a child of
// TestAcquireAllKeepsItsOrderWhenALockFileIsReplaced: child 0 takes (one,
// two) and replaces the file at replace after ordering, child 1 takes (two,
// one) after that replacement.
func acquireAllAcrossAReplacement(c *testkit.C, replace string) {
	one, two := filepath.Join(c.Dir, "one.lock"), filepath.Join(c.Dir, "two.lock")
	mark := func(name string) string { return filepath.Join(c.Dir, name) }
	paths := []string{one, two}
	if c.Index == 0 {
		calls := 0
		onAcquireAll(c.T, func(k int, path string) {
			calls++
			switch calls {
			case 1: // the order is fixed, nothing is held
				if err := os.Rename(mark("spare"), mark(replace)); err != nil {
					c.T.Fatalf("child 0: replacing %s: %v", replace, err)
				}
				c.Mark("replaced")
				testkit.WaitFor(c.T, mark("second-holds-one"))
			case 2: // the next acquisition, of this round or of a new one
				c.Mark("first-goes-on")
			}
		})
	} else {
		paths = []string{two, one}
		testkit.WaitFor(c.T, mark("replaced"))
		onAcquireAll(c.T, func(k int, path string) {
			if k == 1 {
				c.Mark("second-holds-one")
				testkit.WaitFor(c.T, mark("first-goes-on"))
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	hs, err := lock.AcquireAll(ctx, paths)
	if err != nil {
		c.T.Fatalf("child %d: AcquireAll(%q) = %v, want both locks", c.Index, paths, err)
	}
	for i, h := range hs {
		cur, err := h.Current()
		if h.Path() != paths[i] || !cur || err != nil {
			c.T.Errorf("child %d: handle %d of AcquireAll(%q): Path() = %s, Current() = %v, %v; want %s, true, nil", c.Index, i, paths, h.Path(), cur, err, paths[i])
		}
	}
	for _, h := range hs {
		h.Release()
	}
}

// ranked creates three empty files in dir named by names, whose identities
// (device and inode) sort in the order of names.
func ranked(t *testing.T, dir string, names [3]string) {
	t.Helper()
	type file struct {
		path string
		ino  uint64
	}
	var files []file
	for _, tmp := range []string{"f0", "f1", "f2"} {
		p := filepath.Join(dir, tmp)
		require.NoError(t, os.WriteFile(p, nil, 0o600))
		fi, err := os.Stat(p)
		require.NoError(t, err)
		files = append(files, file{p, uint64(fi.Sys().(*syscall.Stat_t).Ino)})
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(a.ino, b.ino) })
	for i, f := range files {
		require.NoError(t, os.Rename(f.path, filepath.Join(dir, names[i])))
	}
}

// TestAcquireAllStartsAgainUntilCtxEnds: against a cleaner that replaces a
// lock file after every ordering, AcquireAll starts again each time, and
// once ctx is done it returns an error that matches ctx.Err() and names the
// replaced file, holding nothing. Ablation (run): starting again without
// looking at ctx ends only when the replacements stop (here after the
// fifth), with both locks held.
func TestAcquireAllStartsAgainUntilCtxEnds(t *testing.T) {
	dir := t.TempDir()
	one, two := filepath.Join(dir, "one.lock"), filepath.Join(dir, "two.lock")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rounds := 0
	onAcquireAll(t, func(k int, path string) {
		if k != 0 {
			return
		}
		if rounds++; rounds > 5 {
			return
		}
		spare := filepath.Join(dir, "spare")
		require.NoError(t, os.WriteFile(spare, nil, 0o600))
		require.NoError(t, os.Rename(spare, path))
		if rounds == 3 {
			cancel()
		}
	})
	hs, err := lock.AcquireAll(ctx, []string{one, two})
	require.ErrorIs(t, err, context.Canceled, "AcquireAll with a lock file replaced in every round = %v, want context.Canceled", err)
	require.Nil(t, hs)
	require.Equal(t, 3, rounds, "AcquireAll rounds = %d, want 3 (the third ends with ctx)", rounds)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	require.Contains(t, []string{one, two}, pe.Path, "AcquireAll error's Path = %q, want the replaced lock file", pe.Path)
	for _, p := range []string{one, two} {
		h, err := lock.TryAcquire(p)
		require.NoError(t, err, "TryAcquire(%s) after AcquireAll gave up = %v, want it free", p, err)
		require.NoError(t, h.Release())
	}
}

// onAcquireAll calls fn before AcquireAll acquires the k-th lock of its
// order (k from 0), on path, in every round, until t ends.
func onAcquireAll(t testing.TB, fn func(k int, path string)) {
	k := -1
	seam.Set(t, func(p seam.Point, path string) error {
		switch p {
		case seam.Ordered:
			k = -1
		case seam.Acquiring:
			k++
			fn(k, path)
		}
		return nil
	})
}

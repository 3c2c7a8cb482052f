package lock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTableForgetsThePathsOfEvictedEntries: after more lock files than the
// table keeps have been taken and released, the idle list is a well-linked
// list of at most maxIdle unused entries of the table, every path the table
// remembers names an entry still in the table (whose descriptor is open),
// and a lock file whose entry was evicted is taken again on the file at its
// path.
//
// Ablations that turn it red: unref evicting an entry without forgetPaths:
// table.paths keeps paths of entries whose descriptors are closed (and
// grows with every lock file the process has ever used); unlinkIdle not
// clearing the neighbour's back link (table.oldest's prev).
func TestTableForgetsThePathsOfEvictedEntries(t *testing.T) {
	dir := t.TempDir()
	files := 3*maxIdle + 2
	path := func(i int) string { return filepath.Join(dir, fmt.Sprintf("%d.lock", i)) }
	for i := range files {
		h, err := Acquire(context.Background(), path(i))
		require.NoError(t, err, "Acquire(%q)", path(i))
		require.NoError(t, h.Release(), "Release(%q)", path(i))
	}
	table.mu.Lock()
	var n int
	var prev *entry
	for e := table.oldest; e != nil; e = e.next {
		require.True(t, e.idle && e.prev == prev && e.refs == 0 && table.entries[e.id] == e,
			"idle list entry %d: idle %v, refs %d, in table %v, linked back %v, want an idle entry of the table linked to its neighbour",
			n, e.idle, e.refs, table.entries[e.id] == e, e.prev == prev)
		prev = e
		n++
	}
	require.True(t, prev == table.newest && n == table.idle && n <= maxIdle,
		"idle list: %d entries ending at the newest %v, table.idle %d, want table.idle entries, at most maxIdle %d", n, prev == table.newest, table.idle, maxIdle)
	for p, e := range table.paths {
		if filepath.Dir(p) != dir {
			continue // another test's
		}
		require.True(t, table.entries[e.id] == e, "table.paths[%q] names an entry no longer in the table", p)
	}
	mine := 0
	for p := range table.paths {
		if filepath.Dir(p) == dir {
			mine++
		}
	}
	table.mu.Unlock()
	require.LessOrEqual(t, mine, maxIdle, "paths remembered after %d lock files = %d, want at most maxIdle %d", files, mine, maxIdle)

	h, err := Acquire(context.Background(), path(0))
	require.NoError(t, err, "Acquire(%q) after its entry was evicted", path(0))
	defer h.Release()
	ok, err := h.Current()
	require.True(t, ok && err == nil, "Current() after re-acquiring an evicted lock file = %v, %v, want true, nil", ok, err)
}

// TestHeldOnlyAnswersFromTheTable: TryAcquire with lockopt's HeldOnly
// answers ErrReentrant, naming the path, for a lock the calling goroutine
// holds, through the spelling it took it by or another one, and nil for a
// lock another goroutine holds or nobody holds, or a missing file, which it
// does not create; it takes nothing, so another goroutine's TryAcquire of a
// free lock succeeds. Ablation: heldBy returning false once the path's hint
// says nothing (no stat for another spelling) turns the second spelling's
// case red; HeldOnly ignored (a real acquisition) turns the free lock's and
// the missing file's cases red.
func TestHeldOnlyAnswersFromTheTable(t *testing.T) {
	heldOnly := Option(func(o *options) { o.HeldOnly = true })
	dir := t.TempDir()
	path := filepath.Join(dir, "a.lock")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	other := dir + string(filepath.Separator) + "sub" + string(filepath.Separator) + ".." + string(filepath.Separator) + "a.lock"

	h, err := TryAcquire(path, heldOnly)
	require.True(t, h == nil && err == nil, "TryAcquire(%q, HeldOnly) of a missing file = %v, %v, want nil, nil", path, h, err)
	_, err = os.Stat(path)
	require.ErrorIs(t, err, fs.ErrNotExist, "Stat(%q) after HeldOnly = %v, want fs.ErrNotExist", path, err)

	held, err := Acquire(context.Background(), path)
	require.NoError(t, err, "Acquire(%q)", path)
	for _, p := range []string{path, other} {
		_, err = TryAcquire(p, heldOnly)
		var pe *fs.PathError
		require.True(t, errors.Is(err, ErrReentrant) && errors.As(err, &pe) && pe.Path == p,
			"TryAcquire(%q, HeldOnly) by the holder = %v, want ErrReentrant naming the path", p, err)
	}
	answer := make(chan error, 1)
	go func() { _, err := TryAcquire(path, heldOnly); answer <- err }()
	err = <-answer
	require.NoError(t, err, "TryAcquire(%q, HeldOnly) by another goroutine = %v, want nil", path, err)
	require.NoError(t, held.Release(), "Release(%q)", path)

	h, err = TryAcquire(path, heldOnly)
	require.True(t, h == nil && err == nil, "TryAcquire(%q, HeldOnly) of a free lock = %v, %v, want nil, nil", path, h, err)
	go func() {
		h, err := TryAcquire(path)
		if err == nil {
			err = h.Release()
		}
		answer <- err
	}()
	err = <-answer
	require.NoError(t, err, "TryAcquire(%q) after a HeldOnly check = %v, want nil", path, err)
}

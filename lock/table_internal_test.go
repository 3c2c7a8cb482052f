package lock

import (
	"context"
	"fmt"
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
	n := 3*maxIdle + 2
	path := func(i int) string { return filepath.Join(dir, fmt.Sprintf("%d.lock", i)) }
	for i := range n {
		h, err := Acquire(context.Background(), path(i))
		require.NoError(t, err, "Acquire(%q)", path(i))
		require.NoError(t, h.Release(), "Release(%q)", path(i))
	}
	table.mu.Lock()
	n, prev := 0, (*entry)(nil)
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
	require.LessOrEqual(t, mine, maxIdle, "paths remembered after %d lock files = %d, want at most maxIdle %d", n, mine, maxIdle)

	h, err := Acquire(context.Background(), path(0))
	require.NoError(t, err, "Acquire(%q) after its entry was evicted", path(0))
	defer h.Release()
	ok, err := h.Current()
	require.True(t, ok && err == nil, "Current() after re-acquiring an evicted lock file = %v, %v, want true, nil", ok, err)
}

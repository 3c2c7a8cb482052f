package lock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/proc"
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

// TestHeldAnswersFromTheTable: Held reports true for a lock the calling
// goroutine holds, through the spelling it took it by or another one, and
// false for a lock another goroutine holds or nobody holds, or a missing
// file, which it does not create; it takes nothing, so another goroutine's
// TryAcquire of a free lock succeeds. Ablation: heldAt returning false once
// the path's hint says nothing (no stat for another spelling) turns the
// second spelling's case red; Held as a real TryAcquire and Release turns
// the missing file's case red.
func TestHeldAnswersFromTheTable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.lock")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	other := dir + string(filepath.Separator) + "sub" + string(filepath.Separator) + ".." + string(filepath.Separator) + "a.lock"

	require.False(t, Held(path), "Held(%q) of a missing file = true, want false", path)
	_, err := os.Stat(path)
	require.ErrorIs(t, err, fs.ErrNotExist, "Stat(%q) after Held = %v, want fs.ErrNotExist", path, err)

	held, err := Acquire(context.Background(), path)
	require.NoError(t, err, "Acquire(%q)", path)
	for _, p := range []string{path, other} {
		require.True(t, Held(p), "Held(%q) by the holder = false, want true", p)
	}
	answer := make(chan bool, 1)
	go func() { answer <- Held(path) }()
	require.False(t, <-answer, "Held(%q) by another goroutine = true, want false", path)
	require.NoError(t, held.Release(), "Release(%q)", path)

	require.False(t, Held(path), "Held(%q) of a free lock = true, want false", path)
	errc := make(chan error, 1)
	go func() {
		h, err := TryAcquire(path)
		if err == nil {
			err = h.Release()
		}
		errc <- err
	}()
	err = <-errc
	require.NoError(t, err, "TryAcquire(%q) after a Held check = %v, want nil", path, err)
}

// TestLoanMakesItsBorrowerAHolder: a goroutine that acts for the holder of
// a lock (a proc.Loan, as the engine's group commit begins for a
// follower's fn) is told ErrReentrant by Acquire and TryAcquire at once and
// is Held, also for a lock the holder took by another spelling, and also
// through a chain of two loans; once the loan ends it waits as any other
// goroutine does. Ablation: entry.heldBy looking at the goroutine's own
// holds only makes the borrower's Acquire wait until its ctx ends, and this
// test goes red.
func TestLoanMakesItsBorrowerAHolder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.lock")
	h, err := Acquire(context.Background(), path)
	require.NoError(t, err, "Acquire(%q)", path)
	defer h.Release()
	holder := proc.ID()
	type result struct {
		who                 string
		acquire, tryAcquire error
		held                bool
	}
	var got []result // appended to by one goroutine at a time, each waited for
	check := func(who string, wait time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), wait) // bounds the ablation's wait
		defer cancel()
		r := result{who: who, held: Held(path)}
		if g, err := Acquire(ctx, path); err != nil {
			r.acquire = err
		} else {
			g.Release()
		}
		if g, err := TryAcquire(path); err != nil {
			r.tryAcquire = err
		} else {
			g.Release()
		}
		got = append(got, r)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var l proc.Loan
		l.Begin(holder)
		check("a borrower", 10*time.Second)
		middle := proc.ID()
		inner := make(chan struct{})
		go func() {
			defer close(inner)
			var l proc.Loan
			l.Begin(middle)
			check("a borrower from a borrower", 10*time.Second)
			l.End()
		}()
		<-inner
		l.End()
		check("a borrower whose loan ended", 0) // a done ctx: one attempt, no wait
	}()
	<-done
	require.Len(t, got, 3)
	for _, r := range got[:2] {
		require.True(t, r.held && errors.Is(r.acquire, ErrReentrant) && errors.Is(r.tryAcquire, ErrReentrant),
			"Held, Acquire, TryAcquire(%q) by %s = %v, %v, %v, want true and ErrReentrant twice", path, r.who, r.held, r.acquire, r.tryAcquire)
	}
	r := got[2]
	require.True(t, !r.held && errors.Is(r.acquire, context.DeadlineExceeded) && errors.Is(r.tryAcquire, ErrWouldBlock),
		"Held, Acquire, TryAcquire(%q) by %s = %v, %v, %v, want false, busy and busy", path, r.who, r.held, r.acquire, r.tryAcquire)
}

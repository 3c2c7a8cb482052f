package filetxn_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/ledger"
	"github.com/filetxn/filetxn/lock"
	"github.com/filetxn/filetxn/loopstate"
)

type counter struct{ N int }

// TestMutateAllPublishesEveryChangedFileAndLeavesNothingBehind runs a
// two-file commit and looks at the directory: both files new, no staged
// file and no intent record left.
func TestMutateAllPublishesEveryChangedFileAndLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	a, err := filetxn.NewStore[*counter](filepath.Join(dir, "a.json"), filetxn.JSON[counter]())
	require.NoError(t, err)
	b, err := filetxn.NewStore[*counter](filepath.Join(dir, "b.json"), filetxn.JSON[counter]())
	require.NoError(t, err)
	for i := 1; i <= 3; i++ {
		cs, err := filetxn.MutateAll(context.Background(), []filetxn.Member{a, b}, func(m *filetxn.Multi) error {
			filetxn.In(m, a).N++
			filetxn.In(m, b).N += 10
			return nil
		})
		require.NoError(t, err)
		require.Len(t, cs, 2)
		require.True(t, cs[0].Written)
		require.True(t, cs[1].Written)
	}
	da, _ := a.View(context.Background())
	db, _ := b.View(context.Background())
	require.Equal(t, 3, da.N)
	require.Equal(t, 30, db.N)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{"a.json", "b.json", "a.json.lock", "b.json.lock"}, names)
}

// twoStores returns two stores of fresh files in dir, a.json and b.json
// (N=1 each unless empty), each with its lock beside it.
func twoStores(t *testing.T, dir string, empty bool) (a, b *filetxn.Store[*counter]) {
	t.Helper()
	a = must(filetxn.NewStore[*counter](filepath.Join(dir, "a.json"), filetxn.JSON[counter]()))
	b = must(filetxn.NewStore[*counter](filepath.Join(dir, "b.json"), filetxn.JSON[counter]()))
	if !empty {
		for _, s := range []*filetxn.Store[*counter]{a, b} {
			_, err := s.Mutate(context.Background(), func(d *counter) error { d.N = 1; return nil })
			require.NoError(t, err)
		}
	}
	return a, b
}

// countSteps counts, until the test ends, the times each seam point is
// reached.
func countSteps(t *testing.T) func(p seam.Point) int {
	t.Helper()
	var mu sync.Mutex // protects n
	n := make(map[seam.Point]int)
	seam.Set(t, func(p seam.Point, _ string) error {
		mu.Lock()
		n[p]++
		mu.Unlock()
		return nil
	})
	return func(p seam.Point) int { mu.Lock(); defer mu.Unlock(); return n[p] }
}

// own is a store type of one's own, whose zero Membership stands for no
// store.
type own struct{ filetxn.Membership }

// TestMutateAllRefusesInvalidArgumentsBeforeAnyIO: a nil fn, no members, a
// member that stands for no store (nil, a nil *Store, a zero Membership)
// and two members of one file (one store twice, or two stores of one path
// however spelt) fail with ErrInvalidArgument, fn not run, and nothing is
// created: not even a lock file.
//
// Ablation seen red: Store.membership without its nil check (a nil *Store
// panics instead).
func TestMutateAllRefusesInvalidArgumentsBeforeAnyIO(t *testing.T) {
	dir := t.TempDir()
	a := must(filetxn.NewStore[*counter](filepath.Join(dir, "a.json"), filetxn.JSON[counter]()))
	a2 := must(filetxn.NewStore[*counter](filepath.Join(dir, "a.json"), filetxn.JSON[counter]()))
	a3 := must(filetxn.NewStore[*counter](dir+string(filepath.Separator)+"."+string(filepath.Separator)+"a.json", filetxn.JSON[counter]()))
	b := must(filetxn.NewStore[*counter](filepath.Join(dir, "b.json"), filetxn.JSON[counter]()))
	ran := false
	fn := func(*filetxn.Multi) error { ran = true; return nil }
	for _, tc := range []struct {
		name    string
		members []filetxn.Member
		fn      func(*filetxn.Multi) error
	}{
		{"nil fn", []filetxn.Member{a, b}, nil},
		{"nil members", nil, fn},
		{"no members", []filetxn.Member{}, fn},
		{"a nil member", []filetxn.Member{a, nil}, fn},
		{"a nil store", []filetxn.Member{a, (*filetxn.Store[*counter])(nil)}, fn},
		{"a zero Membership", []filetxn.Member{a, &own{}}, fn},
		{"a Join of nil", []filetxn.Member{a, &own{filetxn.Join[*counter](nil, nil, nil)}}, fn},
		{"one store twice", []filetxn.Member{a, b, a}, fn},
		{"two stores of one path", []filetxn.Member{a, a2}, fn},
		{"two spellings of one path", []filetxn.Member{a3, b, a}, fn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := filetxn.MutateAll(context.Background(), tc.members, tc.fn)
			require.ErrorIs(t, err, filetxn.ErrInvalidArgument, "MutateAll(%s) = %v, want ErrInvalidArgument", tc.name, err)
			require.Nil(t, cs)
			require.False(t, ran, "MutateAll(%s) ran fn", tc.name)
			es, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, es, "MutateAll(%s) created files", tc.name)
		})
	}
}

// TestMutateAllFnErrorOrPanicWritesNothingAndReleasesEveryLock: fn's error
// is returned unchanged, and fn's panic propagates with its value, after
// fn changed every document: nothing is staged or written, and every lock
// is free at once (a MutateAll with a done ctx, which takes only free
// locks, succeeds right after).
//
// Ablation seen red: MutateAll without its deferred release (the next
// MutateAll finds the locks still held: ErrReentrant).
func TestMutateAllFnErrorOrPanicWritesNothingAndReleasesEveryLock(t *testing.T) {
	errFn := errors.New("fn failed")
	for _, how := range []string{"error", "panic"} {
		t.Run(how, func(t *testing.T) {
			a, b := twoStores(t, t.TempDir(), false)
			steps := countSteps(t)
			fn := func(m *filetxn.Multi) error {
				filetxn.In(m, a).N = 7
				filetxn.In(m, b).N = 7
				if how == "panic" {
					panic(errFn)
				}
				return errFn
			}
			var err error
			if how == "panic" {
				require.PanicsWithValue(t, errFn, func() { _, _ = filetxn.MutateAll(context.Background(), []filetxn.Member{a, b}, fn) })
			} else {
				var cs []filetxn.Commit
				cs, err = filetxn.MutateAll(context.Background(), []filetxn.Member{a, b}, fn)
				require.Same(t, errFn, err, "MutateAll with fn failing = %v, want fn's error as it is", err)
				require.Nil(t, cs)
			}
			for _, p := range []seam.Point{seam.Create, seam.Intent, seam.Rename} {
				require.Zero(t, steps(p), "MutateAll whose fn failed reached %s", p)
			}
			done, cancel := context.WithCancel(context.Background())
			cancel()
			_, err = filetxn.MutateAll(done, []filetxn.Member{a, b}, func(m *filetxn.Multi) error {
				filetxn.In(m, a).N++
				filetxn.In(m, b).N++
				return nil
			})
			require.NoError(t, err, "MutateAll with a done ctx after one whose fn failed: a lock is still held")
			da, _ := a.View(context.Background())
			db, _ := b.View(context.Background())
			require.Equal(t, []int{2, 2}, []int{da.N, db.N})
		})
	}
}

// TestMutateAllRefusesReentry: a MutateAll inside the fn of a member's
// Mutate, a Mutate of a member inside MutateAll's fn, a Mutate of a store
// that shares a member's lock file, and a MutateAll inside a MutateAll over
// an overlapping set all fail at once with lock.ErrReentrant (no
// deadlock: ctx would end the wait), and the outer call goes on.
//
// Ablation seen red: package lock's table without its heldBy check (each
// inner call waits for its own caller's lock until ctx ends).
func TestMutateAllRefusesReentry(t *testing.T) {
	dir := t.TempDir()
	a, b := twoStores(t, dir, false)
	c := must(filetxn.NewStore[*counter](filepath.Join(dir, "c.json"), filetxn.JSON[counter](), filetxn.WithLockPath(filepath.Join(dir, "a.json.lock"))))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // ends a wait that re-entry would make endless
	defer cancel()
	inner := func(*filetxn.Multi) error { t.Error("the inner MutateAll ran its fn"); return nil }
	check := func(what string, err error) {
		t.Helper()
		require.ErrorIs(t, err, lock.ErrReentrant, "%s = %v, want ErrReentrant", what, err)
		require.NotErrorIs(t, err, context.DeadlineExceeded)
	}

	_, err := a.Mutate(ctx, func(d *counter) error {
		_, err := filetxn.MutateAll(ctx, []filetxn.Member{b, a}, inner)
		check("MutateAll inside Mutate's fn", err)
		d.N = 10
		return nil
	})
	require.NoError(t, err)

	_, err = filetxn.MutateAll(ctx, []filetxn.Member{a, b}, func(m *filetxn.Multi) error {
		_, err := b.Mutate(ctx, func(*counter) error { t.Error("the inner Mutate ran its fn"); return nil })
		check("Mutate of a member inside MutateAll's fn", err)
		_, err = c.Mutate(ctx, func(*counter) error { t.Error("the inner Mutate ran its fn"); return nil })
		check("Mutate of a store sharing a member's lock inside MutateAll's fn", err)
		_, err = filetxn.MutateAll(ctx, []filetxn.Member{c, b}, inner)
		check("MutateAll inside MutateAll's fn", err)
		filetxn.In(m, a).N++
		filetxn.In(m, b).N++
		return nil
	})
	require.NoError(t, err)
	da, _ := a.View(ctx)
	db, _ := b.View(ctx)
	require.Equal(t, []int{11, 2}, []int{da.N, db.N})
}

// TestMutateAllOfOneChangedFileIsAnOrdinaryWrite: a MutateAll whose fn
// changes one member's document writes that file as Mutate would, with no
// intent record (not one Intent, Committed or Retire step), and reports
// Written for it alone; one that changes nothing writes nothing at all
// and reports no member Written.
//
// Ablation seen red: run's case 1 removed (the one file goes through
// publish: Intent steps).
func TestMutateAllOfOneChangedFileIsAnOrdinaryWrite(t *testing.T) {
	for _, changed := range []int{0, 1} {
		t.Run(fmt.Sprint(changed, " changed"), func(t *testing.T) {
			dir := t.TempDir()
			a, b := twoStores(t, dir, false)
			before, err := os.ReadFile(filepath.Join(dir, "b.json"))
			require.NoError(t, err)
			steps := countSteps(t)
			cs, err := filetxn.MutateAll(context.Background(), []filetxn.Member{a, b}, func(m *filetxn.Multi) error {
				filetxn.In(m, a).N += changed
				_ = filetxn.In(m, b)
				return nil
			})
			require.NoError(t, err)
			require.Len(t, cs, 2)
			require.Equal(t, changed == 1, cs[0].Written)
			require.False(t, cs[1].Written)
			for _, p := range []seam.Point{seam.Intent, seam.Committed, seam.Retire, seam.Published} {
				require.Zero(t, steps(p), "MutateAll of %d changed files reached %s", changed, p)
			}
			require.Equal(t, changed, steps(seam.Create), "MutateAll of %d changed files: files staged", changed)
			require.Equal(t, changed, steps(seam.Rename), "MutateAll of %d changed files: files renamed", changed)
			da, _ := a.View(context.Background())
			require.Equal(t, 1+changed, da.N)
			after, err := os.ReadFile(filepath.Join(dir, "b.json"))
			require.NoError(t, err)
			require.Equal(t, before, after)
			_, ok := cs[1].Digest()
			require.False(t, ok)
			if changed == 1 {
				d, ok := cs[0].Digest()
				require.True(t, ok)
				data, err := os.ReadFile(filepath.Join(dir, "a.json"))
				require.NoError(t, err)
				require.Equal(t, filetxn.Digest(sha256.Sum256(data)), d)
			}
			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, ents, 4, "a.json, b.json and their locks")
		})
	}
}

// TestInPanicsOutsideItsMutateAll: In of a store that is not a member, and
// In after fn has returned, panic with a message that says so; the panic
// inside fn propagates out of MutateAll, which writes nothing and releases
// its locks.
func TestInPanicsOutsideItsMutateAll(t *testing.T) {
	dir := t.TempDir()
	a, b := twoStores(t, dir, false)
	otherPath := filepath.Join(dir, "other.json")
	other := must(filetxn.NewStore[*counter](otherPath, filetxn.JSON[counter]()))
	var kept *filetxn.Multi
	require.PanicsWithValue(t, "filetxn: In: the store of "+otherPath+" is not a member of this MutateAll", func() {
		_, _ = filetxn.MutateAll(context.Background(), []filetxn.Member{a, b}, func(m *filetxn.Multi) error {
			filetxn.In(m, a).N = 5
			_ = filetxn.In(m, other)
			return nil
		})
	})
	_, err := filetxn.MutateAll(context.Background(), []filetxn.Member{a, b}, func(m *filetxn.Multi) error {
		kept = m
		filetxn.In(m, a).N++
		return nil
	})
	require.NoError(t, err, "MutateAll after one whose fn panicked")
	require.PanicsWithValue(t, "filetxn: In called after its MutateAll's fn returned", func() { _ = filetxn.In(kept, a) })
	da, _ := a.View(context.Background())
	require.Equal(t, 2, da.N, "the panicking fn's change was written")
}

// TestACommitDigestOfAMultiFileCommitRestores: the Commit of each member
// of a multi-file commit has the digest of the bytes it published, so that
// Restore puts the old version back over it; a digest of another version
// is refused with ErrDiverged.
func TestACommitDigestOfAMultiFileCommitRestores(t *testing.T) {
	dir := t.TempDir()
	a, b := twoStores(t, dir, false)
	oldA, err := os.ReadFile(filepath.Join(dir, "a.json"))
	require.NoError(t, err)
	oldB, err := os.ReadFile(filepath.Join(dir, "b.json"))
	require.NoError(t, err)
	cs, err := filetxn.MutateAll(context.Background(), []filetxn.Member{a, b}, func(m *filetxn.Multi) error {
		filetxn.In(m, a).N = 5
		filetxn.In(m, b).N = 6
		return nil
	})
	require.NoError(t, err)
	da, ok := cs[0].Digest()
	require.True(t, ok, "the Commit of a multi-file commit's member has no digest")
	db, ok := cs[1].Digest()
	require.True(t, ok)
	_, err = a.Restore(context.Background(), oldA, da)
	require.NoError(t, err)
	_, err = b.Restore(context.Background(), oldB, da)
	require.ErrorIs(t, err, filetxn.ErrDiverged, "Restore with another file's digest")
	_, err = b.Restore(context.Background(), oldB, db)
	require.NoError(t, err)
	for name, want := range map[string][]byte{"a.json": oldA, "b.json": oldB} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), name)
	}
}

// TestMutateAllOverALedgerABoardAndALoop closes two deferred-work entries,
// advances a story and pauses a loop in one commit over the typed stores'
// documents (ledger.Store.In, board.Store.In, loopstate.Loop.In): each
// member is Written, and each store reads its change back.
func TestMutateAllOverALedgerABoardAndALoop(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	lp, bp := filepath.Join(dir, "deferred-work.md"), filepath.Join(dir, "sprint-status.yaml")
	require.NoError(t, os.WriteFile(lp, []byte("# Deferred Work\n\n### DW-1: one\nstatus: open\n\n### DW-2: two\nstatus: open\n\n### DW-3: three\nstatus: open\n"), 0o644))
	require.NoError(t, os.WriteFile(bp, []byte("development_status:\n  epic-3: in-progress\n  3-1-setup: done\n  3-2-login: review\n"), 0o644))
	led, err := ledger.Open(lp, filetxn.WithStateRoot(state))
	require.NoError(t, err)
	brd, err := board.Open(bp, filetxn.WithStateRoot(state))
	require.NoError(t, err)
	root, err := loopstate.NewRoot(filepath.Join(state, "loops-root"))
	require.NoError(t, err)
	loop, err := root.Create(context.Background(), "main", func(*loopstate.Doc) error { return nil })
	require.NoError(t, err)

	now := time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC)
	cs, err := filetxn.MutateAll(context.Background(), []filetxn.Member{led, brd, loop}, func(m *filetxn.Multi) error {
		if _, err := led.In(m).MarkDone([]string{"DW-1", "DW-3"}, "2026-12-02", "with 3-2-login"); err != nil {
			return err
		}
		if _, err := brd.In(m).Advance("3-2-login", board.Done); err != nil {
			return err
		}
		return loop.In(m).Pause(now, "faults", "the story is done")
	})
	require.NoError(t, err)
	require.Len(t, cs, 3)
	for i, c := range cs {
		require.True(t, c.Written, "member %d not Written", i)
	}
	ld, err := led.View(context.Background())
	require.NoError(t, err)
	var open []string
	for _, e := range ld.Entries() {
		if e.Open() {
			open = append(open, e.ID)
		}
	}
	require.Equal(t, []string{"DW-2"}, open)
	bd, err := brd.View(context.Background())
	require.NoError(t, err)
	st, _ := bd.Status("3-2-login")
	require.Equal(t, board.Done, st)
	d, err := loop.View(context.Background())
	require.NoError(t, err)
	require.Equal(t, loopstate.Paused, d.Status)
	require.NotNil(t, d.Paused)
	require.Equal(t, "faults", d.Paused.By)
}

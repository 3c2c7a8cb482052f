package filetxn_test

// Cases a review of the multi-file commit found, each a failure that the
// recovery rules of docs/formats/commit.md must handle.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/lock"
)

// openCounter opens the counter store name in dir.
func openCounter(t *testing.T, dir, name string, opts ...filetxn.Option) *filetxn.Store[*counter] {
	s, err := filetxn.NewStore[*counter](filepath.Join(dir, name), filetxn.JSON[counter](), opts...)
	require.NoError(t, err)
	return s
}

// failAt fails the step p at path with EIO until the returned remove.
func failAt(t *testing.T, p seam.Point, path string) func() {
	return seam.Set(t, func(q seam.Point, at string) error {
		if q == p && at == path {
			return syscall.EIO
		}
		return nil
	})
}

// leaveUnfinished runs a commit that sets N to n in every store, failing the
// rename of b's file (b.json in dir): the commit stands, with its record
// and b's staged file left for the next transaction.
func leaveUnfinished(t *testing.T, dir string, n int, ss ...*filetxn.Store[*counter]) {
	t.Helper()
	tb, err := filepath.EvalSymlinks(filepath.Join(dir, "b.json"))
	require.NoError(t, err)
	rm := failAt(t, seam.Rename, tb)
	defer rm()
	members := make([]filetxn.Member, len(ss))
	for i, s := range ss {
		members[i] = s
	}
	_, err = filetxn.MutateAll(context.Background(), members, func(m *filetxn.Multi) error { setN(m, n, ss...); return nil })
	require.ErrorContains(t, err, "committed")
}

// setN sets N of each store's document in m.
func setN(m *filetxn.Multi, n int, ss ...*filetxn.Store[*counter]) {
	for _, s := range ss {
		filetxn.In(m, s).N = n
	}
}

// TestAMutateAllAfterACommitOverMoreLocksTakesEachLockOnce: a commit over
// a, b and d left unfinished leaves copies beside a's and b's locks that both
// name d's; a MutateAll over a and b must take d's lock once to settle them.
// Ablation: the extra locks appended without removing duplicates (lockWith)
// fails it with a false lock.ErrReentrant.
func TestAMutateAllAfterACommitOverMoreLocksTakesEachLockOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b, d := openCounter(t, dir, "a.json"), openCounter(t, dir, "b.json"), openCounter(t, dir, "d.json")
	_, err := filetxn.MutateAll(ctx, []filetxn.Member{a, b, d}, func(m *filetxn.Multi) error { setN(m, 9, a, b, d); return nil })
	require.NoError(t, err)
	leaveUnfinished(t, dir, 1, a, b, d)
	_, err = filetxn.MutateAll(ctx, []filetxn.Member{a, b}, func(m *filetxn.Multi) error { setN(m, 2, a, b); return nil })
	require.NoError(t, err, "MutateAll(a, b) after a crashed commit over a, b, d")
}

// TestRecoveryCompletesACommitWhoseLaterRenameSurvivedAnEarlierOne: a
// power cut on a file system that does not keep the renames' order can keep
// b's rename and lose a's (whose staged file is then back). Recovery must
// rename a too. Ablation: deciding from the first file whose staged version
// is gone (renaming only the files after it) leaves a old for good.
func TestRecoveryCompletesACommitWhoseLaterRenameSurvivedAnEarlierOne(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := openCounter(t, dir, "a.json"), openCounter(t, dir, "b.json")
	_, err := filetxn.MutateAll(ctx, []filetxn.Member{a, b}, func(m *filetxn.Multi) error { setN(m, 1, a, b); return nil })
	require.NoError(t, err)
	aOld, _ := os.ReadFile(filepath.Join(dir, "a.json"))
	leaveUnfinished(t, dir, 2, a, b)
	raw, err := os.ReadFile(filepath.Join(dir, "a.json.lock.intent"))
	require.NoError(t, err)
	var rec struct {
		Files []struct{ Path, Staged string }
	}
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(string(raw), "\n", 2)[0]), &rec))
	aNew, _ := os.ReadFile(rec.Files[0].Path)
	require.NoError(t, os.WriteFile(rec.Files[0].Staged, aNew, 0o644)) // a's rename lost
	require.NoError(t, os.WriteFile(rec.Files[0].Path, aOld, 0o644))
	require.NoError(t, os.Rename(rec.Files[1].Staged, rec.Files[1].Path)) // b's kept
	_, err = b.Mutate(ctx, func(*counter) error { return nil })
	require.NoError(t, err)
	da, _ := a.View(ctx)
	db, _ := b.View(ctx)
	require.Equal(t, []int{2, 2}, []int{da.N, db.N}, "a, b after recovery")
}

// TestRecordsBroughtBackByAPowerCutAreRetired: the copies are removed
// without an fsync, so a power cut can bring them back after a later durable
// write of a. With no staged file left, nothing can be renamed: recovery
// must retire them, not refuse b (and a) with ErrDiverged for good.
// Ablation: no "no staged file is whole" case in settle's decision.
func TestRecordsBroughtBackByAPowerCutAreRetired(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := openCounter(t, dir, "a.json"), openCounter(t, dir, "b.json")
	saved := map[string][]byte{}
	rm := seam.Set(t, func(p seam.Point, at string) error {
		if p == seam.Retire {
			data, _ := os.ReadFile(at)
			saved[at] = data
		}
		return nil
	})
	_, err := filetxn.MutateAll(ctx, []filetxn.Member{a, b}, func(m *filetxn.Multi) error { setN(m, 1, a, b); return nil })
	require.NoError(t, err)
	rm()
	_, err = a.Mutate(ctx, func(d *counter) error { d.N = 5; return nil })
	require.NoError(t, err)
	for p, data := range saved {
		require.NoError(t, os.WriteFile(p, data, 0o600))
	}
	_, err = b.Mutate(ctx, func(*counter) error { return nil })
	require.NoError(t, err, "b after the records came back")
}

// TestWithNoWaitDoesNotWaitToRecover: a store made WithNoWait whose file
// has an unfinished commit whose other lock is busy fails at once, rather
// than wait for that lock. Ablation: settle not told of noWait (it waits in
// lock.AcquireAll until ctx ends).
func TestWithNoWaitDoesNotWaitToRecover(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := openCounter(t, dir, "a.json"), openCounter(t, dir, "b.json")
	_, err := filetxn.MutateAll(ctx, []filetxn.Member{a, b}, func(m *filetxn.Multi) error { setN(m, 9, a, b); return nil })
	require.NoError(t, err)
	leaveUnfinished(t, dir, 1, a, b)
	h, err := lock.Acquire(ctx, filepath.Join(dir, "b.json.lock"))
	require.NoError(t, err)
	defer h.Release()
	an := openCounter(t, dir, "a.json", filetxn.WithNoWait())
	done := make(chan error, 1)
	go func() {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := an.Mutate(c, func(*counter) error { return nil })
		done <- err
	}()
	start := time.Now()
	err = <-done
	require.ErrorIs(t, err, lock.ErrWouldBlock)
	require.Less(t, time.Since(start), time.Second, "WithNoWait waited")
}

// TestSettlingALeftoverCopyKeepsALaterCommitsStagedFileOfTheSameBytes: a
// retirement cut short leaves b's copy of a finished commit; a later commit
// over c and a, stopped between its renames, has staged a under the same
// name and with the same bytes. Settling the leftover (from b) must leave
// that file, and the later commit must complete. Ablation: undo without the
// check of the other commits' copies (the digest alone) removes it, and a
// stays split from c.
func TestSettlingALeftoverCopyKeepsALaterCommitsStagedFileOfTheSameBytes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b, c := openCounter(t, dir, "a.json"), openCounter(t, dir, "b.json"), openCounter(t, dir, "c.json")
	_, err := filetxn.MutateAll(ctx, []filetxn.Member{a, b, c}, func(m *filetxn.Multi) error { setN(m, 9, a, b, c); return nil })
	require.NoError(t, err)
	rm := failAt(t, seam.Retire, filepath.Join(dir, "b.json.lock.intent"))
	_, err = filetxn.MutateAll(ctx, []filetxn.Member{a, b}, func(m *filetxn.Multi) error { setN(m, 1, a, b); return nil })
	require.Error(t, err)
	rm()
	_, err = a.Mutate(ctx, func(d *counter) error { d.N = 2; return nil })
	require.NoError(t, err)
	ta, _ := filepath.EvalSymlinks(filepath.Join(dir, "a.json"))
	rm = failAt(t, seam.Rename, ta)
	_, err = filetxn.MutateAll(ctx, []filetxn.Member{c, a}, func(m *filetxn.Multi) error { setN(m, 1, c, a); return nil })
	require.Error(t, err)
	rm()
	_, err = b.Mutate(ctx, func(*counter) error { return nil })
	require.NoError(t, err, "b")
	_, err = a.Mutate(ctx, func(*counter) error { return nil })
	require.NoError(t, err, "a")
	da, _ := a.View(ctx)
	dc, _ := c.View(ctx)
	require.Equal(t, []int{1, 1}, []int{dc.N, da.N}, "c, a")
}

// TestRecoveryMakesAMissingLockFileOfTheCommitAgain: the lock file of
// another file of an unfinished commit was removed (a cleanup of the state
// root); recovery takes it on a new lock file rather than fail every
// transaction on a. Ablation: recovery's locks taken WithoutCreate.
func TestRecoveryMakesAMissingLockFileOfTheCommitAgain(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := openCounter(t, dir, "a.json"), openCounter(t, dir, "b.json")
	_, err := filetxn.MutateAll(ctx, []filetxn.Member{a, b}, func(m *filetxn.Multi) error { setN(m, 9, a, b); return nil })
	require.NoError(t, err)
	leaveUnfinished(t, dir, 1, a, b)
	require.NoError(t, os.Remove(filepath.Join(dir, "b.json.lock")))
	_, err = a.Mutate(ctx, func(*counter) error { return nil })
	require.NoError(t, err, "a with b's lock file gone")
}

// TestRecoveryAfterTheLastRenameFsyncsTheDirectories: a writer that died
// after its last rename and before its directory fsyncs, or whose
// directory fsync failed, leaves records whose every staged file is gone.
// The next transaction retires them, but first fsyncs the targets'
// directories: a power cut after a removal that reached the disk must not
// lose a rename that had not, with no record left to redo it. Ablation:
// the "no staged file is whole" case returning r.retire at once (no
// directory fsync before the copies go).
func TestRecoveryAfterTheLastRenameFsyncsTheDirectories(t *testing.T) {
	syncedBeforeRetire := func(t *testing.T, f *multiFixture, dirs ...string) {
		t.Helper()
		steps := f.record(t, []seam.Point{seam.SyncDir, seam.Retire}, func() {
			require.NoError(t, f.run(next{member: 0}))
		})
		synced := map[string]bool{}
		for _, s := range steps {
			if s.p == seam.SyncDir {
				synced[s.path] = true
			}
		}
		for _, d := range dirs {
			require.True(t, synced[d], "the recovery's steps %v: directory %q not fsynced", steps, d)
		}
		require.Empty(t, f.leftovers(t))
	}
	t.Run("crash after the last rename", func(t *testing.T) {
		f := multiLayouts[0].make(t)
		f.crash(t, step{seam.Published, "b.json", 1}, func() { _, _ = f.commit(1) })
		syncedBeforeRetire(t, f, ".")
		require.Equal(t, []int{2, 2}, f.values(t))
	})
	t.Run("a directory fsync failed", func(t *testing.T) {
		f := multiLayouts[2].make(t) // two directories
		_, remove := f.fail(t, step{seam.SyncDir, "two", 2}, syscall.EIO)
		_, err := f.commit(1)
		remove()
		require.ErrorIs(t, err, syscall.EIO)
		syncedBeforeRetire(t, f, "one", "two")
		require.Equal(t, []int{2, 1}, f.values(t))
	})
}

// TestALostLockOfAnUnchangedMemberPublishesNothing: fn may decide from a
// member it does not change, so a MutateAll that changes one file must
// still hold every lock when it writes, as one that changes two checks
// them all before its first rename. Ablation: the one-changed-file case
// writing with only its own lock checked (it publishes b with a's lock
// gone, and returns nil).
func TestALostLockOfAnUnchangedMemberPublishesNothing(t *testing.T) {
	for _, changed := range []int{1, 2} {
		f := multiLayouts[1].make(t) // a and b share a lock; c has its own
		before := f.values(t)
		_, err := filetxn.MutateAll(context.Background(), f.members(), func(m *filetxn.Multi) error {
			_ = filetxn.In(m, f.stores[2]).N // decide from c
			replaceLock(t, f.locks[f.lockOf[2]])
			filetxn.In(m, f.stores[0]).N += 5
			if changed == 2 {
				filetxn.In(m, f.stores[1]).N += 5
			}
			return nil
		})
		require.ErrorIs(t, err, lock.ErrLockLost, "%d changed files, c's lock replaced during fn", changed)
		require.Equal(t, before, f.values(t), "%d changed files: published with a lock lost", changed)
	}
}

// TestAnUndoLeavesAnotherCommitsCopy: once a lock is lost, the holder of
// the lock file now at its path may have removed this commit's copy (read
// as torn while it was written) and made its own there. The undo voids and
// removes only the copies this commit made. Ablation: the undo voiding and
// removing every copy by its path (the other's copy is emptied).
func TestAnUndoLeavesAnotherCommitsCopy(t *testing.T) {
	skipLockReplaceOnWindows(t)
	f := multiLayouts[0].make(t)
	ip := f.copyPath(0)
	other := []byte("another commit's copy\n")
	rm := seam.Set(t, func(p seam.Point, at string) error {
		if p == seam.Committed {
			replaceLock(t, f.locks[0])
			tmp := ip + ".other"
			require.NoError(t, os.WriteFile(tmp, other, 0o600))
			require.NoError(t, os.Rename(tmp, ip))
		}
		return nil
	})
	_, err := f.commit(1)
	rm()
	require.ErrorIs(t, err, lock.ErrLockLost)
	got, err := os.ReadFile(ip)
	require.NoError(t, err, "the other commit's copy at %s", ip)
	require.Equal(t, other, got, "the other commit's copy after the undo")
}

package filetxn_test

// Power cuts in a multi-file commit: each test fakes one by putting back
// the bytes of files whose removal no fsync had made durable (or, for a
// copy never fsynced, by keeping its length and not its bytes), and checks
// that the next transaction decides the files as the caller was told.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/seam"
)

type crashedPC struct{}

// skipCrashOnWindows skips a test that simulates a crash in process: see
// multiFixture.crash, which calls it too.
func skipCrashOnWindows(t *testing.T) {
	if runtime.GOOS == "windows" {
		// A panic leaves the staged files of the commit open, and Windows
		// renames and removes no open file: the recovery a real crash
		// allows (its handles closed by the kernel) cannot be had here.
		t.Skip("a crash simulated in-process leaves files open, which Windows does not rename")
	}
}

// crashWhen runs fn with a crash at the first seam point for which hit
// holds, as multiFixture.crash does for a fixture's numbered step: a panic
// out of the hook, recovered here; fn must reach it.
func crashWhen(t *testing.T, hit func(p seam.Point, at string) bool, fn func()) {
	t.Helper()
	rm := seam.Set(t, func(p seam.Point, at string) error {
		if hit(p, at) {
			panic(crashedPC{})
		}
		return nil
	})
	defer rm()
	defer func() { require.Equal(t, crashedPC{}, recover(), "fn did not reach the crash") }()
	fn()
}

// stagedOf returns the staged paths named by the copy at ip.
func stagedOf(t *testing.T, ip string) []string {
	raw, err := os.ReadFile(ip)
	require.NoError(t, err)
	var rec struct {
		Files []struct{ Staged string }
	}
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(string(raw), "\n", 2)[0]), &rec))
	var out []string
	for _, f := range rec.Files {
		out = append(out, f.Staged)
	}
	return out
}

func snapshot(paths ...string) map[string][]byte {
	m := map[string][]byte{}
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			m[p] = data
		}
	}
	return m
}

func restore(t *testing.T, m map[string][]byte) {
	for p, data := range m {
		require.NoError(t, os.WriteFile(p, data, 0o600))
	}
}

// atRemoval returns what each copy of a record held when it was removed,
// so that a test can bring back the removals that no fsync made durable
// (the bytes a copy held then are what the disk may keep).
func atRemoval(t *testing.T) (saved map[string][]byte, remove func()) {
	saved = map[string][]byte{}
	var mu sync.Mutex
	remove = seam.Set(t, func(p seam.Point, at string) error {
		if p == seam.Retire {
			data, err := os.ReadFile(at)
			if err == nil {
				mu.Lock()
				saved[at] = data
				mu.Unlock()
			}
		}
		return nil
	})
	return saved, remove
}

// syncs counts the fsyncs of each directory from now until remove, so that
// a test brings back only the removals that no later fsync of their
// directory made durable.
func syncs(t *testing.T) (n func(dir string) int, remove func()) {
	var mu sync.Mutex
	count := map[string]int{}
	remove = seam.Set(t, func(p seam.Point, at string) error {
		if p == seam.SyncDir {
			mu.Lock()
			count[at]++
			mu.Unlock()
		}
		return nil
	})
	return func(dir string) int { mu.Lock(); defer mu.Unlock(); return count[dir] }, remove
}

// TestAFailedCommitPointThenAPowerCutPublishesNothing: a fsync of the
// commit point fails, and the caller is told that nothing was published;
// every other fsync may have succeeded, so a power cut may keep the staged
// files, unless their directory was fsynced after their removal, and the
// copies as they were when removed: the next transaction must still not
// complete the commit. Ablation: publish's undo neither fsyncing the
// staged files' directory nor voiding the copies when the round failed
// (both come back whole and the commit is completed, [2 2]).
func TestAFailedCommitPointThenAPowerCutPublishesNothing(t *testing.T) {
	skipCrashOnWindows(t)
	ctx := context.Background()
	rdir, a, b := pcPair(t)
	ipA := filepath.Join(rdir, "a.json.lock.intent")
	var staged map[string][]byte
	var once sync.Once
	n, rmSyncs := syncs(t)
	rm := seam.Set(t, func(p seam.Point, at string) error {
		if p == seam.SyncDir && at == rdir {
			failed := false
			once.Do(func() {
				staged = snapshot(stagedOf(t, ipA)...)
				failed = true
			})
			if failed {
				return syscall.EIO
			}
		}
		return nil
	})
	removed, rmCopies := atRemoval(t)
	_, err := filetxn.MutateAll(ctx, []filetxn.Member{a, b}, func(m *filetxn.Multi) error { setN(m, 2, a, b); return nil })
	rm()
	rmCopies()
	require.ErrorContains(t, err, "fsync the directory")
	require.Len(t, staged, 2)
	require.Len(t, removed, 2)
	// The power cut: the undo's removals lost, but for those a later fsync
	// of their directory made durable. The failed fsync was the first of
	// rdir; any after it is the undo's.
	if n(rdir) < 2 {
		restore(t, staged)
	}
	rmSyncs()
	restore(t, removed)
	require.NoError(t, noop(ctx, a))
	require.Equal(t, []int{1, 1}, ns(t, a, b), "the caller was told the commit failed")
}

// TestAnUndoThatCannotBeMadeDurableSaysSo: the first rename fails after
// the commit point, and the undo cannot void the copies (their fsync
// fails): it must then leave them and say that the commit is not undone,
// and the next transaction decides it, all old or all new. Ablation: the
// undo ignoring its voiding's error (the caller is told the rename's error
// alone, as if nothing could be published).
func TestAnUndoThatCannotBeMadeDurableSaysSo(t *testing.T) {
	skipCrashOnWindows(t)
	ctx := context.Background()
	rdir, a, b := pcPair(t)
	var mu sync.Mutex
	renameFailed := false
	rm := seam.Set(t, func(p seam.Point, at string) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case p == seam.Rename && at == filepath.Join(rdir, "a.json"):
			renameFailed = true
			return syscall.EIO
		case p == seam.Intent && renameFailed: // the undo's voiding
			return syscall.EIO
		}
		return nil
	})
	_, err := filetxn.MutateAll(ctx, []filetxn.Member{a, b}, func(m *filetxn.Multi) error { setN(m, 2, a, b); return nil })
	rm()
	require.ErrorContains(t, err, "rename the staged file")
	require.ErrorIs(t, err, filetxn.ErrUndecided)
	require.ErrorIs(t, err, syscall.EIO)
	require.NoError(t, noop(ctx, a))
	require.Contains(t, [][]int{{1, 1}, {2, 2}}, ns(t, a, b), "the next transaction decides the commit: all old or all new")
}

// pcPair returns two counter stores, a.json and b.json with their locks
// beside them, in one directory (rdir, its links followed), both at 1
// after one MutateAll.
func pcPair(t *testing.T) (rdir string, a, b *filetxn.Store[*counter]) {
	dir := t.TempDir()
	a, b = openCounter(t, dir, "a.json"), openCounter(t, dir, "b.json")
	_, err := filetxn.MutateAll(context.Background(), []filetxn.Member{a, b}, func(m *filetxn.Multi) error { setN(m, 1, a, b); return nil })
	require.NoError(t, err)
	rdir, err = filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	return rdir, a, b
}

// noop is a Mutate of s that changes nothing: the next transaction.
func noop(ctx context.Context, s *filetxn.Store[*counter]) error {
	_, err := s.Mutate(ctx, func(*counter) error { return nil })
	return err
}

// ns returns the stores' N, read without the lock.
func ns(t *testing.T, ss ...*filetxn.Store[*counter]) []int {
	var out []int
	for _, s := range ss {
		d, err := s.View(context.Background())
		require.NoError(t, err)
		out = append(out, d.N)
	}
	return out
}

// pcStores: a in one/, b in two/, locks under a state root (state/locks/):
// a write of b fsyncs two/ only.
func pcStores(t *testing.T) (root string, a, b *filetxn.Store[*counter]) {
	root = t.TempDir()
	root, _ = filepath.EvalSymlinks(root)
	for _, d := range []string{"one", "two", "state"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	st := filetxn.WithStateRoot(filepath.Join(root, "state"))
	a, b = openCounter(t, filepath.Join(root, "one"), "a.json", st), openCounter(t, filepath.Join(root, "two"), "b.json", st)
	return root, a, b
}

func copies(t *testing.T, a, b *filetxn.Store[*counter]) (string, string) {
	la, err := a.LockPath()
	require.NoError(t, err)
	lb, err := b.LockPath()
	require.NoError(t, err)
	return la + ".intent", lb + ".intent"
}

// TestAnUndoneCommitStaysUndoneAcrossAPowerCut: a commit killed while it
// wrote b's staged file (a's staged file and both copies whole) is undone
// by Mutate(b), which then writes b durably (fsyncing two/ only). A power
// cut that loses the undo's removal of a's staged file (one/) and of the
// copies (state/locks/) must not make the next transaction refuse a and b
// as diverged, for good, though only filetxn wrote them. Ablation:
// recovery's undo neither fsyncing the staged file's directory nor voiding
// the copies (Mutate(a) fails with ErrDiverged).
func TestAnUndoneCommitStaysUndoneAcrossAPowerCut(t *testing.T) {
	skipCrashOnWindows(t)
	ctx := context.Background()
	root, a, b := pcStores(t)
	_, err := filetxn.MutateAll(ctx, []filetxn.Member{a, b}, func(m *filetxn.Multi) error { setN(m, 1, a, b); return nil })
	require.NoError(t, err)
	ipA, _ := copies(t, a, b)
	tb := filepath.Join(root, "two", "b.json")
	crashWhen(t, func(p seam.Point, at string) bool { return p == seam.Write && at == tb }, func() {
		_, _ = filetxn.MutateAll(ctx, []filetxn.Member{a, b}, func(m *filetxn.Multi) error { setN(m, 2, a, b); return nil })
	})
	st := stagedOf(t, ipA)
	staged := snapshot(st[0]) // a's staged file, whole
	require.Len(t, staged, 1)
	removed, rmCopies := atRemoval(t)
	n, rmSyncs := syncs(t)
	_, err = b.Mutate(ctx, func(d *counter) error { d.N = 7; return nil })
	rmCopies()
	rmSyncs()
	require.NoError(t, err)
	require.Len(t, removed, 2)
	// The power cut: the removals in one/ and state/locks/ lost, but for
	// those a later fsync of their directory made durable.
	if n(filepath.Join(root, "one")) == 0 {
		restore(t, staged)
	}
	restore(t, removed)
	_, err = a.Mutate(ctx, func(*counter) error { return nil })
	require.NoError(t, err, "Mutate(a) after the power cut")
	da, _ := a.View(ctx)
	db, _ := b.View(ctx)
	require.Equal(t, []int{1, 7}, []int{da.N, db.N})
}

// TestAZeroFilledCopyIsTorn: a copy written but never fsynced whose length
// reached the disk and whose bytes did not (zeros: ext4 data=writeback,
// and other file systems) is torn, since no commit point was reached, and
// not a record of another format that refuses the file for good.
// Ablation: readIntent without its NUL check.
func TestAZeroFilledCopyIsTorn(t *testing.T) {
	skipCrashOnWindows(t)
	ctx := context.Background()
	_, a, b := pcStores(t)
	_, err := filetxn.MutateAll(ctx, []filetxn.Member{a, b}, func(m *filetxn.Multi) error { setN(m, 1, a, b); return nil })
	require.NoError(t, err)
	ipA, _ := copies(t, a, b)
	n := 0
	crashWhen(t, func(p seam.Point, at string) bool {
		if p != seam.Intent || at != ipA {
			return false
		}
		n++
		return n == 2 // the copy's fsync: the staged files are written
	}, func() {
		_, _ = filetxn.MutateAll(ctx, []filetxn.Member{a, b}, func(m *filetxn.Multi) error { setN(m, 2, a, b); return nil })
	})
	raw, err := os.ReadFile(ipA)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(ipA, make([]byte, len(raw)), 0o600))
	_, err = a.Mutate(ctx, func(*counter) error { return nil })
	require.NoError(t, err, "Mutate(a) after a power cut before the commit point")
}

// TestADeathDuringAnUndoLeavesNoStagedFile: a process that dies as its
// undo voids the copies (after a failed fsync of the commit point) must
// leave what the next transactions undo, and no staged file that no record
// names: the staged files go before the copies are voided (the torture run
// found staged files left for good when the copies were voided first, and
// a SIGKILL came between: both copies empty, read as torn and removed).
// Ablation: the undo removing no staged file before it voids the copies
// (the next transaction completes the commit, whose caller was told that
// it failed). The order itself has no seam point between its steps to die
// at; the torture run's kills at random moments check it.
func TestADeathDuringAnUndoLeavesNoStagedFile(t *testing.T) {
	f := multiLayouts[0].make(t)
	want := f.values(t)
	_, remove := f.fail(t, step{seam.SyncDir, ".", 1}, syscall.EIO)
	f.crash(t, step{seam.Intent, f.rel(f.copyPath(0)), 3}, func() { _, _ = f.commit(1) })
	remove()
	for k := range f.stores {
		require.NoError(t, f.run(next{member: k}))
	}
	require.Equal(t, want, f.values(t))
	require.Empty(t, f.leftovers(t), "left behind after a death in the undo and a Mutate of each file")
}

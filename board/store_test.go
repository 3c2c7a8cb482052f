package board

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/fsys"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
	"github.com/stretchr/testify/require"
)

// newBoard writes src to a board file in a fresh directory and returns its path and a
// state root for the sidecar lock, outside that directory.
func newBoard(t *testing.T, src string) (path, stateRoot string) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "project")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "sprint-status.yaml")
	if src != "" {
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return path, filepath.Join(root, "state")
}

func open(t *testing.T, path string, opts ...filetxn.Option) *Store {
	t.Helper()
	s, err := Open(path, opts...)
	if err != nil {
		t.Fatalf("Open(%q) = %v", path, err)
	}
	return s
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// unlockable returns a state root under which no lock file can ever be created (it lies
// beneath a regular file), for checking that an operation takes no lock.
func unlockable(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(f, "state")
}

// dirNames lists a directory, for checking that no temporary file was left behind.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestStoreAdvanceWritesWhatAdvancedBytesSays(t *testing.T) {
	path, state := newBoard(t, sprint)
	s := open(t, path, filetxn.WithStateRoot(state))
	want, err := advancedBytes([]byte(sprint), "3-2-digest-delivery", InProgress, Stamp("02-06-2026 09:30"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Advance(context.Background(), "3-2-digest-delivery", InProgress, Stamp("02-06-2026 09:30"))
	if got != InProgress || err != nil {
		t.Fatalf("Advance = %q, %v, want %q, nil", got, err, InProgress)
	}
	if b := readString(t, path); b != string(want) {
		t.Errorf("board after Advance =\n%s\nwant\n%s", b, want)
	}
	lp, err := s.LockPath()
	if err != nil || !strings.HasPrefix(lp, filepath.Join(state, "locks")+string(filepath.Separator)) || !strings.HasSuffix(lp, "-sprint-status.yaml.lock") {
		t.Errorf("LockPath() = %q, %v, want a sidecar under %s/locks", lp, err, state)
	}
	if _, err := os.Stat(lp); err != nil {
		t.Errorf("the sidecar lock was not used: %v", err)
	}
	if names := dirNames(t, filepath.Dir(path)); !slices.Equal(names, []string{"sprint-status.yaml"}) {
		t.Errorf("project directory holds %q, want only the board (no lock, no temp file)", names)
	}
}

// TestStoreNoOpsTakeNoLock ports bmad-loop's "takes no lock" rows: a missing board, an
// absent row and a row at or past the target are answered from a lock-free read, so they
// are answered with a state root where no lock can be created, while a real write fails
// there and writes nothing. A missing board and an absent row are an error matching
// filetxn.ErrNotFound inside an *fs.PathError naming the board, whose message names the
// key (bmad-loop answers ""; a mistyped key must not look like
// success). Ablations: making Store.Advance call the engine's Mutate instead of
// MutateProbed makes every no-op row red (the lock error instead); answering an absent row
// with "" as before makes the first two red.
func TestStoreNoOpsTakeNoLock(t *testing.T) {
	tests := []struct {
		name, src, key string
		target, want   Status
		notFound       bool
	}{
		{"missing board", "", "3-1-login", Done, "", true},
		{"absent row", sprint, "9-9-ghost", Done, "", true},
		{"review is past in-progress", sprint, "4-1-thing", InProgress, Review, false},
		{"done is at done", sprint, "3-1-login", Done, Done, false},
		{"done does not regress without the option", sprint, "3-1-login", AwaitingOperator, Done, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, _ := newBoard(t, tt.src)
			s := open(t, path, filetxn.WithStateRoot(unlockable(t)))
			got, err := s.Advance(context.Background(), tt.key, tt.target, Stamp("x"))
			if tt.notFound {
				var pe *fs.PathError
				if !errors.Is(err, filetxn.ErrNotFound) || !errors.As(err, &pe) || pe.Path != path || !strings.Contains(err.Error(), tt.key) || got != "" {
					t.Fatalf("Advance(%q, %q) = %q, %v, want \"\" and an *fs.PathError naming %s, matching filetxn.ErrNotFound, naming the key", tt.key, tt.target, got, err, path)
				}
			} else if got != tt.want || err != nil {
				t.Fatalf("Advance(%q, %q) = %q, %v, want %q, nil", tt.key, tt.target, got, err, tt.want)
			}
			if tt.src == "" {
				if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("Advance on a missing board created it: %v", err)
				}
				return
			}
			if b := readString(t, path); b != tt.src {
				t.Errorf("Advance(%q, %q) changed the board", tt.key, tt.target)
			}
		})
	}
	// drafted reads as ready-for-dev, but the line already holds the target byte for byte:
	// a move that rewrites no line, so last_updated is not stamped either (Stamp's doc).
	// Ablations: a plan that compares statuses only, not the line's value, or that still
	// stamps last_updated for such a row, sends it to the lock.
	t.Run("drafted is already drafted", func(t *testing.T) {
		src := "last_updated: then\ndevelopment_status:\n  epic-1: in-progress\n  1-1-a: drafted\n"
		path, _ := newBoard(t, src)
		s := open(t, path, filetxn.WithStateRoot(unlockable(t)))
		if got, err := s.Advance(context.Background(), "1-1-a", "drafted", Stamp("now"), AllowUnordered()); got != "drafted" || err != nil {
			t.Fatalf("Advance(1-1-a, drafted) on a drafted row = %q, %v, want %q, nil", got, err, "drafted")
		}
		if b := readString(t, path); b != src {
			t.Errorf("Advance(1-1-a, drafted) on a drafted row changed the board to %q", b)
		}
	})
	t.Run("a real write needs the lock", func(t *testing.T) {
		path, _ := newBoard(t, sprint)
		s := open(t, path, filetxn.WithStateRoot(unlockable(t)))
		if got, err := s.Advance(context.Background(), "4-1-thing", Done); err == nil {
			t.Fatalf("Advance without a lock = %q, nil, want an error", got)
		}
		if b := readString(t, path); b != sprint {
			t.Errorf("Advance without a lock changed the board")
		}
		if names := dirNames(t, filepath.Dir(path)); !slices.Equal(names, []string{"sprint-status.yaml"}) {
			t.Errorf("project directory holds %q after a failed lock", names)
		}
	})
}

// TestStoreRefusesAMalformedBoardFromUnderTheLock: on a free lock the one parse, under
// the lock, reports the error; nothing is written.
func TestStoreRefusesAMalformedBoardFromUnderTheLock(t *testing.T) {
	src := "generated: x\ndevelopment_status: []\n"
	path, state := newBoard(t, src)
	var decodes []bool // whether the lock was held at each Decode
	s := mustOpenWith(path, codec{}, filetxn.WithStateRoot(state))
	lp, _ := s.LockPath()
	touchLock(t, lp) // the lock file exists: a probed call on a missing one probes first, to create nothing
	onPoint(t, seam.BoardDecode, func() { decodes = append(decodes, lockHeld(t, lp)) })
	s = mustOpenWith(path, codec{}, filetxn.WithStateRoot(state))
	_, err := s.Advance(context.Background(), "1-1-a", Done)
	var pe *fs.PathError
	var fe *filetxn.FormatError
	if !errors.As(err, &pe) || pe.Path != path || !errors.As(err, &fe) || fe.Line != 2 || !strings.Contains(err.Error(), "board: "+kindNotBoard) {
		t.Fatalf("Advance on development_status: [] = %v, want an *fs.PathError naming %s around a *filetxn.FormatError for line 2 saying %q", err, path, kindNotBoard)
	}
	if !slices.Equal(decodes, []bool{true}) {
		t.Errorf("Decode calls (lock held?) = %v, want [true]: the lock is free, so one decision under it", decodes)
	}
	if b := readString(t, path); b != src {
		t.Errorf("Advance on a malformed board changed it")
	}
}

// touchLock creates the lock file lp and its directories, as a first
// transaction under the lock would.
func touchLock(t *testing.T, lp string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(lp), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// lockHeld reports whether some other goroutine holds the lock file lp: a TryAcquire from
// a fresh goroutine fails with ErrWouldBlock exactly then.
func lockHeld(t *testing.T, lp string) bool {
	t.Helper()
	res := make(chan error, 1)
	go func() {
		h, err := lock.TryAcquire(lp)
		if err == nil {
			h.Release()
		}
		res <- err
	}()
	err := <-res
	if err != nil && !errors.Is(err, lock.ErrWouldBlock) {
		t.Fatalf("TryAcquire(%s) = %v", lp, err)
	}
	return err != nil
}

// TestStoreDecidesUnderTheLock ports bmad-loop's lock-order row: the read that decides the
// published bytes happens under the lock, and then the write; on a free lock it is the
// only read (the engine's MutateProbed probes only a busy lock, or a missing lock file). Ablation: deciding on the probe's read and publishing its
// bytes under the lock (View, then Locked and Write) turns this test, the malformed-board
// test above and the two rival tests below red.
func TestStoreDecidesUnderTheLock(t *testing.T) {
	path, state := newBoard(t, sprint)
	var decodes []bool
	s := mustOpenWith(path, codec{}, filetxn.WithStateRoot(state))
	lp, _ := s.LockPath()
	touchLock(t, lp) // the lock file exists: a probed call on a missing one probes first, to create nothing
	onPoint(t, seam.BoardDecode, func() { decodes = append(decodes, lockHeld(t, lp)) })
	s = mustOpenWith(path, codec{}, filetxn.WithStateRoot(state))
	if got, err := s.Advance(context.Background(), "3-2-digest-delivery", InProgress); got != InProgress || err != nil {
		t.Fatalf("Advance = %q, %v", got, err)
	}
	if !slices.Equal(decodes, []bool{true}) {
		t.Errorf("Decode calls (lock held?) = %v, want [true]", decodes)
	}
	decodes = nil
	if got, err := s.Advance(context.Background(), "3-2-digest-delivery", InProgress); got != InProgress || err != nil {
		t.Fatalf("second Advance = %q, %v", got, err)
	}
	if !slices.Equal(decodes, []bool{true}) {
		t.Errorf("no-op Decode calls (lock held?) = %v, want [true]: the lock is free, so no probe", decodes)
	}
}

// rivalAtProbe returns a Store on path whose lock is held (by another goroutine) until
// its first read, which is therefore the lock-free probe: that read lets the lock go and
// runs rival first, as if another process had written between our probe and our lock.
func rivalAtProbe(t *testing.T, path, state string, rival func()) *Store {
	t.Helper()
	s := mustOpenWith(path, codec{}, filetxn.WithStateRoot(state))
	lp, _ := s.LockPath()
	held := make(chan *lock.Handle)
	go func() {
		h, err := lock.Acquire(context.Background(), lp)
		if err != nil {
			t.Errorf("lock.Acquire(%s) = %v, want the lock", lp, err)
		}
		held <- h
	}()
	h := <-held
	if h == nil {
		t.FailNow()
	}
	t.Cleanup(func() { h.Release() })
	n := 0
	onPoint(t, seam.BoardDecode, func() { // the first Decode of the process after this: the probe's
		if n++; n == 1 {
			h.Release()
			rival()
		}
	})
	return mustOpenWith(path, codec{}, filetxn.WithStateRoot(state))
}

// TestStoreKeepsARivalsFlip: a rival moves 4-1-thing from review to done between our
// probe and our lock, while we move 3-2 to in-progress; both survive. Ablation: publishing
// the bytes computed from the probe's read loses the rival's flip.
func TestStoreKeepsARivalsFlip(t *testing.T) {
	path, state := newBoard(t, sprint)
	rival := open(t, path, filetxn.WithStateRoot(state))
	s := rivalAtProbe(t, path, state, func() {
		if got, err := rival.Advance(context.Background(), "4-1-thing", Done); got != Done || err != nil {
			t.Errorf("rival Advance = %q, %v", got, err)
		}
	})
	if got, err := s.Advance(context.Background(), "3-2-digest-delivery", InProgress); got != InProgress || err != nil {
		t.Fatalf("Advance = %q, %v", got, err)
	}
	want := strings.NewReplacer(
		"  epic-3: backlog\n", "  epic-3: in-progress\n",
		"delivery: backlog  #", "delivery: in-progress  #",
		"4-1-thing: review", "4-1-thing: done",
	).Replace(sprint)
	if b := readString(t, path); b != want {
		t.Errorf("board =\n%s\nwant\n%s", b, want)
	}
}

// TestStoreNeverRegressIsDecidedUnderTheLock: we ask for awaiting-operator while the row
// is at review; a rival moves it to done before we hold the lock. We answer done and the
// row stays done. Ablation: trusting the probe's decision (writing target without
// re-reading) turns this red.
func TestStoreNeverRegressIsDecidedUnderTheLock(t *testing.T) {
	path, state := newBoard(t, sprint)
	rival := open(t, path, filetxn.WithStateRoot(state))
	s := rivalAtProbe(t, path, state, func() {
		if _, err := rival.Advance(context.Background(), "4-1-thing", Done); err != nil {
			t.Error(err)
		}
	})
	if got, err := s.Advance(context.Background(), "4-1-thing", AwaitingOperator); got != Done || err != nil {
		t.Fatalf("Advance(awaiting-operator) after a rival's done = %q, %v, want done", got, err)
	}
	if st, _, _ := statusInBytes([]byte(readString(t, path)), "4-1-thing"); st != Done {
		t.Errorf("4-1-thing = %q, want done", st)
	}
}

func TestStoreRefusesAReadOnlyBoard(t *testing.T) {
	path, state := newBoard(t, sprint)
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	s := open(t, path, filetxn.WithStateRoot(state))
	_, err := s.Advance(context.Background(), "4-1-thing", Done)
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Advance on a 0444 board = %v, want an error wrapping fs.ErrPermission", err)
	}
	if b := readString(t, path); b != sprint {
		t.Errorf("Advance on a 0444 board changed it")
	}
	if names := dirNames(t, filepath.Dir(path)); !slices.Equal(names, []string{"sprint-status.yaml"}) {
		t.Errorf("project directory holds %q, want no temporary file", names)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Advance(context.Background(), "4-1-thing", Done); got != Done || err != nil {
		t.Errorf("Advance on a writable board = %q, %v, want done", got, err)
	}
}

func TestStoreKeepsASymlinkedBoard(t *testing.T) {
	path, state := newBoard(t, sprint)
	link := filepath.Join(t.TempDir(), "link.yaml")
	testkit.Skip(t, testkit.NoSymlinks)
	if err := os.Symlink(path, link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	s := open(t, link, filetxn.WithStateRoot(state))
	direct := open(t, path, filetxn.WithStateRoot(state))
	lpLink, err1 := s.LockPath()
	lpDirect, err2 := direct.LockPath()
	if err1 != nil || err2 != nil || lpLink != lpDirect {
		t.Errorf("LockPath via link = %q, %v; direct = %q, %v; want one sidecar", lpLink, err1, lpDirect, err2)
	}
	if got, err := s.Advance(context.Background(), "4-1-thing", Done); got != Done || err != nil {
		t.Fatalf("Advance via a symlink = %q, %v", got, err)
	}
	fi, err := os.Lstat(link)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("after Advance, %s is %v, %v; want still a symlink", link, fi.Mode(), err)
	}
	if st, _, _ := statusInBytes([]byte(readString(t, path)), "4-1-thing"); st != Done {
		t.Errorf("the link's target reads %q, want done", st)
	}
}

// TestStoreLockExcludesASecondAcquirer: while a Mutate holds the board's lock, a
// non-blocking acquisition of the same sidecar fails.
func TestStoreLockExcludesASecondAcquirer(t *testing.T) {
	path, state := newBoard(t, sprint)
	s := open(t, path, filetxn.WithStateRoot(state))
	lp, err := s.LockPath()
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Mutate(context.Background(), func(*Doc) error {
		if !lockHeld(t, lp) {
			t.Errorf("TryAcquire(%s) succeeded while Mutate held the lock", lp)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if lockHeld(t, lp) {
		t.Errorf("the lock is still held after Mutate returned")
	}
}

func TestStoreMutateBatchesAdvances(t *testing.T) {
	path, state := newBoard(t, sprint)
	s := open(t, path, filetxn.WithStateRoot(state))
	// The serial result, computed on bytes.
	want := []byte(sprint)
	for _, step := range [][2]string{{"3-2-digest-delivery", string(InProgress)}, {"4-1-thing", string(Done)}, {"3-1-login", string(Review)}} {
		next, err := advancedBytes(want, step[0], Status(step[1]))
		if err != nil {
			t.Fatal(err)
		}
		want = next
	}
	c, err := s.Mutate(context.Background(), func(d *Doc) error {
		for _, step := range [][2]string{{"3-2-digest-delivery", string(InProgress)}, {"4-1-thing", string(Done)}, {"3-1-login", string(Review)}} {
			if _, err := d.Advance(step[0], Status(step[1])); err != nil {
				return err
			}
		}
		return nil
	})
	if d, ok := c.Digest(); err != nil || !c.Written || !ok || d != filetxn.Digest(sha256.Sum256(want)) {
		t.Fatalf("Mutate = %+v, %v, want one write of the serial result", c, err)
	}
	if b := readString(t, path); b != string(want) {
		t.Errorf("board =\n%s\nwant\n%s", b, want)
	}
	// An error from fn writes nothing, even after an edit, and comes back unchanged.
	boom := errors.New("boom")
	c, err = s.Mutate(context.Background(), func(d *Doc) error {
		if _, err := d.Advance("epic-4", Done); err != nil {
			return err
		}
		return boom
	})
	if err != boom || c.Written {
		t.Errorf("Mutate with a failing fn = %+v, %v, want boom and no write", c, err)
	}
	if b := readString(t, path); b != string(want) {
		t.Errorf("a failing fn changed the board")
	}
	// A row refusal from fn comes back inside an *fs.PathError naming the board, and one
	// that names a file already comes back unchanged. Ablation: returning fn's error
	// unchanged (no named in Store.mutate) turns the first check red.
	var inner error
	_, err = s.Mutate(context.Background(), func(d *Doc) error {
		_, inner = d.Advance("4-1-thing", InProgress, AllowRegression())
		return inner
	})
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != path || pe.Op != "Mutate" || pe.Err != inner || !errors.Is(err, ErrIllegalTransition) {
		t.Errorf("Mutate with an illegal regression = %v, want an *fs.PathError{Mutate %s} around Doc.Advance's error", err, path)
	}
	// So does an absent row. Ablation: dropping filetxn.ErrNotFound from named turns
	// this red (Store.Advance names the board itself, so only Mutate grades it).
	_, err = s.Mutate(context.Background(), func(d *Doc) error {
		_, err := d.Advance("9-9-absent", Done)
		return err
	})
	if !errors.As(err, &pe) || pe.Path != path || pe.Op != "Mutate" || !errors.Is(err, filetxn.ErrNotFound) {
		t.Errorf("Mutate advancing an absent row = %v, want an *fs.PathError{Mutate %s} matching filetxn.ErrNotFound", err, path)
	}
	other := &fs.PathError{Op: "Advance", Path: "other.yaml", Err: inner}
	if _, err := s.Mutate(context.Background(), func(*Doc) error { return other }); err != other {
		t.Errorf("Mutate returning an error that names a file = %v, want it unchanged", err)
	}
	// And a row whose line cannot be rewritten (a quoted key): its *filetxn.FormatError
	// comes inside an *fs.PathError naming the board. Ablation: dropping the FormatError
	// from named turns this red.
	qpath, qstate := newBoard(t, "development_status:\n  \"3-1-a\": backlog\n")
	_, err = open(t, qpath, filetxn.WithStateRoot(qstate)).Advance(context.Background(), "3-1-a", Done)
	if fe, re := refusedRow(err); !errors.As(err, &pe) || pe.Path != qpath || pe.Op != "Advance" || fe == nil || fe.Key != "3-1-a" || re.reason != reasonKeyNotPlain {
		t.Errorf("Advance of a quoted key = %v, want an *fs.PathError{Advance %s} around a *filetxn.FormatError for the row (key-not-plain)", err, qpath)
	}
}

// TestStoreMutateProbedNoOpTakesNoLock: a MutateProbed whose advances move nothing (rows at or past
// their targets) succeeds on a state root where no lock can ever be taken, and writes
// nothing; one that moves a row fails there and writes nothing either. Ablation: making
// Store.MutateProbed call the engine's Mutate instead of MutateProbed turns the no-op red
// (the lock's error instead). Store.Mutate, which runs fn once under the lock, fails there
// at once.
func TestStoreMutateProbedNoOpTakesNoLock(t *testing.T) {
	path, _ := newBoard(t, sprint)
	s := open(t, path, filetxn.WithStateRoot(unlockable(t)))
	var got []Status
	c, err := s.MutateProbed(context.Background(), func(d *Doc) error {
		got = nil
		for _, step := range []struct {
			key    string
			target Status
		}{{"3-1-login", Review}, {"4-1-thing", InProgress}} {
			st, err := d.Advance(step.key, step.target, Stamp("now"))
			if err != nil {
				return err
			}
			got = append(got, st)
		}
		return nil
	})
	require.NoError(t, err, "MutateProbed(advances past their targets) on an unlockable root = %v, want nil", err)
	require.Equal(t, []Status{Done, Review}, got, "MutateProbed(advances past their targets) ended at %v, want [done review]", got)
	require.False(t, c.Written, "MutateProbed(advances past their targets) = %+v, want no write", c)
	require.Equal(t, sprint, readString(t, path), "board after a no-op MutateProbed")

	_, err = s.MutateProbed(context.Background(), func(d *Doc) error { _, err := d.Advance("4-1-thing", Done); return err })
	require.Error(t, err, "MutateProbed(4-1-thing to done) on an unlockable root = nil, want the lock's error")
	require.Equal(t, sprint, readString(t, path), "board after a MutateProbed that could not lock")

	runs := 0
	_, err = s.Mutate(context.Background(), func(d *Doc) error { runs++; _, err := d.Advance("3-1-login", Review); return err })
	require.Error(t, err, "Mutate(3-1-login to review, a no-op) on an unlockable root = nil, want the lock's error")
	require.Zero(t, runs, "Mutate on an unlockable root ran fn %d times, want 0", runs)
}

func TestStoreViewAndStatus(t *testing.T) {
	path, state := newBoard(t, sprint)
	s := open(t, path, filetxn.WithStateRoot(unlockable(t)))
	d, err := s.View(context.Background())
	if err != nil || d.Bytes() == nil {
		t.Fatalf("View = %v, %v", d, err)
	}
	if st, ok, err := storeStatus(context.Background(), s, "4-1-thing"); st != Review || !ok || err != nil {
		t.Errorf("Status(4-1-thing) = %q, %v, %v, want review, true, nil", st, ok, err)
	}
	missing := open(t, filepath.Join(filepath.Dir(path), "none.yaml"), filetxn.WithStateRoot(state))
	if d, err := missing.View(context.Background()); err != nil || d.Bytes() != nil {
		t.Errorf("View of a missing board = %v, %v, want an empty Doc", d, err)
	}
	if st, ok, err := storeStatus(context.Background(), missing, "4-1-thing"); st != "" || ok || err != nil {
		t.Errorf("Status on a missing board = %q, %v, %v", st, ok, err)
	}
}

func TestStoreChecksArgumentsBeforeAnyIO(t *testing.T) {
	// The board path is a directory: any read would fail. Invalid arguments must be
	// refused before that.
	s := open(t, t.TempDir(), filetxn.WithStateRoot(unlockable(t)))
	for _, tt := range []struct {
		key    string
		target Status
		now    string
	}{
		{"", Done, ""}, {"1-1-a", "completed", ""}, {"1-1-a", Done, "a: b"},
	} {
		if _, err := s.Advance(context.Background(), tt.key, tt.target, Stamp(tt.now)); !errors.Is(err, filetxn.ErrInvalidArgument) {
			t.Errorf("Advance(%q, %q, %q) = %v, want filetxn.ErrInvalidArgument", tt.key, tt.target, tt.now, err)
		}
	}
	if _, err := Open(""); !errors.Is(err, filetxn.ErrInvalidArgument) || err.Error() != "board: Open: empty path: filetxn: invalid argument" {
		t.Errorf("Open(\"\") = %v, want filetxn.ErrInvalidArgument naming Open", err)
	}
	// An engine option the engine refuses is the same argument error, once.
	_, err := Open(filepath.Join(t.TempDir(), "sprint-status.yaml"), filetxn.WithStateRoot("relative/state"))
	if !errors.Is(err, filetxn.ErrInvalidArgument) || strings.Count(err.Error(), "invalid argument") != 1 {
		t.Errorf("Open(path, WithStateRoot(relative)) = %v, want filetxn.ErrInvalidArgument said once", err)
	}
}

// TestStoreSteadyStateAdvanceParsesNothing counts parses through a Store's own Codec:
// once the board has been parsed, a run of Advances that each write (a lock-free probe
// and a locked pass on the same bytes) parses nothing more, nor does a View of the board
// this process wrote; a board written by someone else is parsed once, and only once.
// Ablations: Encode not remembering the bytes it returns makes this red (every probe
// parses); so does a cache of one slot (every locked read of the old bytes parses), and
// a probe that decides on a remembered board without matching it against the bytes read
// (the rival's review is taken for the done this process wrote, and nothing is written).
func TestStoreSteadyStateAdvanceParsesNothing(t *testing.T) {
	path, state := newBoard(t, "development_status:\n  epic-1: in-progress\n  1-1-a: done\n  1-2-b: done\n")
	parses := 0
	c := newCodec()
	onPoint(t, seam.BoardParse, func() { parses++ })
	s := mustOpenWith(path, c, filetxn.WithStateRoot(state))
	ctx := context.Background()
	advance := func(key string, target Status) {
		t.Helper()
		if got, err := s.Advance(ctx, key, target, AllowRegression()); got != target || err != nil {
			t.Fatalf("Advance(%q, %q) = %q, %v, want %q, nil", key, target, got, err, target)
		}
	}
	advance("1-1-a", AwaitingOperator)
	if parses != 1 {
		t.Fatalf("parses after the first Advance = %d, want 1", parses)
	}
	at := map[string]Status{"1-1-a": AwaitingOperator, "1-2-b": Done}
	for i := range 40 {
		key, target := []string{"1-1-a", "1-2-b"}[i%2], Done
		if at[key] == Done {
			target = AwaitingOperator
		}
		advance(key, target)
		at[key] = target
	}
	if _, err := s.View(ctx); err != nil {
		t.Fatal(err)
	}
	if parses != 1 {
		t.Fatalf("parses after 40 more Advances and a View = %d, want 1", parses)
	}
	// A rival's write is new bytes: parsed once, by the probe; the locked pass reuses it.
	if err := os.WriteFile(path, []byte("development_status:\n  epic-1: in-progress\n  1-1-a: done\n  1-2-b: review\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	advance("1-2-b", Done)
	if parses != 2 {
		t.Fatalf("parses after a rival's write and one Advance = %d, want 2", parses)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "1-2-b: done\n") {
		t.Fatalf("board after Advance(1-2-b, done) over a rival's review = %q, want 1-2-b done", b)
	}
}

// TestStoreAdvanceReportsRefusals: a refusal found on the lock-free probe is decided again
// under the lock and returned, never swallowed; nothing is written. Ablation: letting the
// probe answer whenever its Doc is unchanged, error or not, makes this red.
func TestStoreAdvanceReportsRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, src, key string
		target         Status
		opts           []AdvanceOption
		want           error
	}{
		{"illegal regression", sprint, "3-1-login", Backlog, []AdvanceOption{AllowRegression()}, ErrIllegalTransition},
		{"unordered status", "development_status:\n  1-1-a: blocked\n", "1-1-a", Done, nil, ErrUnorderedStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, state := newBoard(t, tc.src)
			s, err := Open(path, filetxn.WithStateRoot(state))
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Advance(context.Background(), tc.key, tc.target, tc.opts...)
			if !errors.Is(err, tc.want) || got != "" {
				t.Fatalf("Advance(%q, %q) = %q, %v, want \"\", %v", tc.key, tc.target, got, err, tc.want)
			}
			if b, _ := os.ReadFile(path); string(b) != tc.src {
				t.Errorf("board after a refused Advance = %q, want it unchanged", b)
			}
		})
	}
}

// TestStoreProbeBuffersAreNotShared runs probes of several boards at once, from
// several goroutines, through Stores that parse on every call (no codec cache): were a
// probe to read into a buffer that another store's probe reuses while the first is
// still deciding, a Doc that kept a reference to those bytes would answer with another
// board's statuses. Every no-op answer must be the status of its own board. Ablation:
// one read buffer shared by every store (handed to Decode, and back to the next read
// at once) turns it red.
func TestStoreProbeBuffersAreNotShared(t *testing.T) {
	statuses := []Status{Backlog, ReadyForDev, InProgress, Review, Done}
	var stores []*Store
	for i, st := range statuses {
		src := fmt.Sprintf("development_status:\n  epic-1: in-progress\n  1-1-story-%d: %s\n", i, st)
		path, stateRoot := newBoard(t, src)
		s := mustOpenWith(path, codec{}, filetxn.WithStateRoot(stateRoot))
		stores = append(stores, s)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 200 {
				i := (g + n) % len(stores)
				key := fmt.Sprintf("1-1-story-%d", i)
				got, err := stores[i].Advance(context.Background(), key, Backlog)
				if err != nil || got != statuses[i] {
					errs <- fmt.Errorf("Advance(board %d, %s, backlog) = %q, %v; want %q", i, key, got, err, statuses[i])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// mustOpenWith is openWith for arguments that are valid.
func mustOpenWith(path string, codec codec, opts ...filetxn.Option) *Store {
	s, err := openWith(path, codec, opts...)
	if err != nil {
		panic(err)
	}
	return s
}

// TestOpenPlacesTheLockWhereBmadLoopDoes: with no placement among the options, the lock
// is bmad-loop's sidecar under its state root, the ledger's default too, so that a Go
// process and a bmad-loop process exclude each other without configuration; a caller's
// filetxn.WithLockPath wins over that default; a relative state root is refused at Open;
// and without a derivable state root the board still answers a no-op while a write fails
// with an error naming the board that says what to set, writing nothing. Ablation: applying the board's default after the
// caller's options (so that it wins) turns the second check red.
func TestOpenPlacesTheLockWhereBmadLoopDoes(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	t.Setenv("BMAD_LOOP_STATE_DIR", root)
	path, _ := newBoard(t, sprint)
	want, err := lock.SidecarPath(root, path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := open(t, path).LockPath(); got != want || err != nil {
		t.Errorf("Open(%s).LockPath() = %q, %v, want %q", path, got, err, want)
	}
	if got, err := open(t, path, filetxn.WithLockPath(path+".lock")).LockPath(); got != path+".lock" || err != nil {
		t.Errorf("Open(%s, WithLockPath).LockPath() = %q, %v, want %q", path, got, err, path+".lock")
	}
	if _, err := Open(path, filetxn.WithStateRoot("relative")); !errors.Is(err, filetxn.ErrInvalidArgument) {
		t.Errorf("Open(%s, WithStateRoot(relative)) = %v, want filetxn.ErrInvalidArgument", path, err)
	}

	t.Setenv("BMAD_LOOP_STATE_DIR", "relative")
	s := open(t, path)
	if _, err := s.LockPath(); !errors.Is(err, fsys.ErrNoStateRoot) || !strings.Contains(err.Error(), "set it to an absolute path") {
		t.Errorf("LockPath() without a state root = %v, want fsys.ErrNoStateRoot saying what to set", err)
	}
	if got, err := s.Advance(ctx, "3-1-login", Review); got != Done || err != nil {
		t.Errorf("Advance(no-op) without a state root = %q, %v, want %q, nil", got, err, Done)
	}
	var pe *fs.PathError
	if _, err := s.Advance(ctx, "3-2-digest-delivery", InProgress); !errors.Is(err, fsys.ErrNoStateRoot) || !errors.As(err, &pe) || pe.Path != path {
		t.Errorf("Advance(write) without a state root = %v, want fsys.ErrNoStateRoot naming %s", err, path)
	}
	if b := readString(t, path); b != sprint {
		t.Errorf("board changed by a refused Advance")
	}
}

// onPoint calls fn each time a board codec of the process (or any code)
// passes point, until t ends.
func onPoint(t testing.TB, point seam.Point, fn func()) {
	seam.Set(t, func(p seam.Point, _ string) error {
		if p == point {
			fn()
		}
		return nil
	})
}

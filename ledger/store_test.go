package ledger

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/fsys"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// newStore writes text (unless it is "<missing>") as deferred-work.md in a
// fresh directory and opens it with a sidecar lock under a private state root.
func newStore(t *testing.T, text string, opts ...filetxn.Option) *Store {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "artifacts", "deferred-work.md")
	if text != "<missing>" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return must(Open(path, append([]filetxn.Option{filetxn.WithStateRoot(filepath.Join(dir, "state"))}, opts...)...))
}

func readOrNil(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// holdLock takes the store's lock in another goroutine (so that this
// goroutine's calls contend rather than re-enter) until the test ends.
func holdLock(t *testing.T, s *Store) {
	t.Helper()
	lp, err := s.LockPath()
	if err != nil {
		t.Fatal(err)
	}
	held, release, done := make(chan error), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		h, err := lock.Acquire(context.Background(), lp)
		held <- err
		if err == nil {
			<-release
			h.Release()
		}
	}()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(release); <-done })
}

// reopenableSeed is the fixture with DW-1 and DW-3 closed reopenably.
func reopenableSeed(t *testing.T) string {
	d := mustParse(t, ledgerFixture)
	d.MarkDone([]string{"DW-1", "DW-3"}, "2026-06-11", "by dw-a", Reopenable(operationID))
	return d.textString()
}

// viaMutate is a Store call that runs op in Mutate.
func viaMutate(op func(*Doc)) func(context.Context, *Store) error {
	return func(ctx context.Context, s *Store) error {
		_, err := s.Mutate(ctx, func(d *Doc) error { op(d); return nil })
		return err
	}
}

// mutators are the Store's write paths, each seeded so that it writes
// (bmad-loop's LOCKED_MUTATORS), with the Doc operation that must produce the
// same bytes.
func mutators(t *testing.T) []struct {
	name, seed string
	call       func(context.Context, *Store) error
	doc        func(*Doc)
} {
	spec := Spec{Title: "new", Origin: "o-new", SourceSpec: "s.md", Reason: "r"}
	return []struct {
		name, seed string
		call       func(context.Context, *Store) error
		doc        func(*Doc)
	}{
		{"Append", ledgerFixture,
			func(ctx context.Context, s *Store) error { _, err := s.Append(ctx, spec); return err },
			func(d *Doc) { d.Append(spec) }},
		{"Append creates", "<missing>",
			func(ctx context.Context, s *Store) error { _, err := s.Append(ctx, spec); return err },
			func(d *Doc) { d.Append(spec) }},
		{"MarkDone per-id notes", ledgerFixture,
			viaMutate(func(d *Doc) {
				d.MarkDone([]string{"DW-1"}, "2026-06-11", "a")
				d.MarkDone([]string{"DW-3"}, "2026-06-11", "b")
			}),
			func(d *Doc) {
				d.MarkDone([]string{"DW-1"}, "2026-06-11", "a")
				d.MarkDone([]string{"DW-3"}, "2026-06-11", "b")
			}},
		{"MarkDone reopenable", ledgerFixture,
			viaMutate(func(d *Doc) { d.MarkDone([]string{"DW-1"}, "2026-06-11", "n", Reopenable(operationID)) }),
			func(d *Doc) { d.MarkDone([]string{"DW-1"}, "2026-06-11", "n", Reopenable(operationID)) }},
		{"MarkOpen", reopenableSeed(t),
			viaMutate(func(d *Doc) { d.MarkOpen([]string{"DW-1", "DW-2", "DW-3"}, "by dw-a", operationID) }),
			func(d *Doc) { d.MarkOpen([]string{"DW-1", "DW-2", "DW-3"}, "by dw-a", operationID) }},
		{"RecordDecision and close", ledgerFixture,
			viaMutate(func(d *Doc) {
				d.RecordDecision("DW-1", "2026-06-11", "fix now", "worth it")
				d.MarkDone([]string{"DW-1"}, "2026-06-11", "closed")
			}),
			func(d *Doc) {
				d.RecordDecision("DW-1", "2026-06-11", "fix now", "worth it")
				d.MarkDone([]string{"DW-1"}, "2026-06-11", "closed")
			}},
		{"MarkSeenAgain", ledgerFixture,
			viaMutate(func(d *Doc) { d.MarkSeenAgain([]string{"DW-1"}, "2026-06-11", "again") }),
			func(d *Doc) { d.MarkSeenAgain([]string{"DW-1"}, "2026-06-11", "again") }},
		{"Merge", "### DW-1: kept\nstatus: open\n",
			viaMutate(func(d *Doc) {
				d.Merge(mustParse(t, "### DW-1: kept\nstatus: open\n\n### DW-2: lost\nstatus: open\n"))
			}),
			func(d *Doc) { d.Merge(mustParse(t, "### DW-1: kept\nstatus: open\n\n### DW-2: lost\nstatus: open\n")) }},
		{"Archive", ledgerFixture,
			func(ctx context.Context, s *Store) error {
				_, err := s.Archive(ctx, "", "2026-08-24")
				return err
			},
			func(d *Doc) { d.ArchiveInto(mustParse(t, ""), "", "2026-08-24") }},
		{"Archive dry run", ledgerFixture,
			func(ctx context.Context, s *Store) error {
				_, err := archivable(ctx, s, "")
				return err
			},
			func(d *Doc) {}},
	}
}

func TestStoreWritesWhatTheDocOperationWrites(t *testing.T) {
	ctx := context.Background()
	for _, m := range mutators(t) {
		t.Run(m.name, func(t *testing.T) {
			s := newStore(t, m.seed)
			if err := m.call(ctx, s); err != nil {
				t.Fatalf("call: %v", err)
			}
			seed := m.seed
			if seed == "<missing>" {
				seed = ""
			}
			want := mustParse(t, seed)
			m.doc(want)
			if got := string(readOrNil(t, s.path)); got != want.textString() {
				t.Errorf("file = %q\nwant   %q", got, want.textString())
			}
		})
	}
}

// TestEveryWriteNeedsTheLock: with the lock held elsewhere and waiting
// disabled, every write path fails with ErrWouldBlock and leaves both files
// as they were (bmad-loop's test_lock_acquisition_failure_raises_and_writes_nothing).
// Ablation: making Store.MutateProbed write without the lock when its probe
// would write turned every row but Archive red (Archive goes through
// MutateAll).
func TestEveryWriteNeedsTheLock(t *testing.T) {
	ctx := context.Background()
	for _, m := range mutators(t) {
		if m.name == "Archive dry run" {
			continue // an eligible dry run does take the lock, but writes nothing either way
		}
		t.Run(m.name, func(t *testing.T) {
			s := newStore(t, m.seed, filetxn.WithNoWait())
			holdLock(t, s)
			before := readOrNil(t, s.path)
			err := m.call(ctx, s)
			if !errors.Is(err, lock.ErrWouldBlock) {
				t.Errorf("call with the lock held elsewhere = %v, want ErrWouldBlock", err)
			}
			if after := readOrNil(t, s.path); string(after) != string(before) || (after == nil) != (before == nil) {
				t.Errorf("the ledger changed without the lock")
			}
			if readOrNil(t, s.archive) != nil {
				t.Errorf("an archive was written without the lock")
			}
		})
	}
}

// TestNoOpsTakeNoLock: operations that write nothing succeed while another
// holder has the lock and waiting is disabled (bmad-loop's NOOP_MUTATORS,
// the #736 probes). Ablation: making Store.MutateProbed
// call the engine's Mutate instead of its MutateProbed turns every
// MutateProbed row red; Append and Archive probe for themselves.
func TestNoOpsTakeNoLock(t *testing.T) {
	ctx := context.Background()
	closed := mustParse(t, ledgerFixture)
	closed.MarkDone([]string{"DW-1", "DW-3"}, "2026-06-11", "n")
	archived := mustParse(t, ledgerFixture)
	archived.ArchiveInto(mustParse(t, ""), "", "2026-08-24")
	// mutate runs op in one Store.MutateProbed and returns what op returned.
	mutate := func(s *Store, op func(*Doc) (any, error)) (any, error) {
		var got any
		_, err := s.MutateProbed(ctx, func(d *Doc) (err error) { got, err = op(d); return err })
		return got, err
	}
	for _, tc := range []struct {
		name, seed string
		call       func(*Store) (any, error)
		want       any
	}{
		{"Append nothing", ledgerFixture, func(s *Store) (any, error) { return s.Append(ctx) }, []string(nil)},
		{"Append filed twin", "### DW-1: t\norigin: o\nsource_spec: `s`\nstatus: open\n",
			func(s *Store) (any, error) { return s.Append(ctx, Spec{Title: "t", Origin: "o", SourceSpec: "s"}) }, []string{""}},
		{"MarkDone nothing", ledgerFixture, func(s *Store) (any, error) {
			return mutate(s, func(d *Doc) (any, error) { return d.MarkDone(nil, "2026-06-11", "n") })
		}, []string(nil)},
		{"MarkDone done", ledgerFixture, func(s *Store) (any, error) {
			return mutate(s, func(d *Doc) (any, error) { return d.MarkDone([]string{"DW-2"}, "2026-06-11", "n") })
		}, []string(nil)},
		{"MarkDone reopenable on done", closed.textString(), func(s *Store) (any, error) {
			return mutate(s, func(d *Doc) (any, error) {
				return d.MarkDone([]string{"DW-1"}, "2026-06-11", "n", Reopenable(operationID))
			})
		}, []string(nil)},
		{"MarkOpen nothing", ledgerFixture, func(s *Store) (any, error) {
			return mutate(s, func(d *Doc) (any, error) { return d.MarkOpen(nil, "n", operationID) })
		}, []string(nil)},
		{"MarkOpen none eligible", closed.textString(), func(s *Store) (any, error) {
			return mutate(s, func(d *Doc) (any, error) { return d.MarkOpen([]string{"DW-1", "DW-2", "DW-3"}, "n", operationID) })
		}, []string(nil)},
		{"MarkSeenAgain replay", ledgerFixture, func(s *Store) (any, error) {
			return mutate(s, func(d *Doc) (any, error) {
				return d.MarkSeenAgain([]string{"DW-3"}, "2026-06-08", "code review of spec-2-3.md")
			})
		}, []string(nil)},
		{"Merge nothing lost", ledgerFixture, func(s *Store) (any, error) {
			return mutate(s, func(d *Doc) (any, error) { return d.Merge(mustParse(t, ledgerFixture)).Carried, nil })
		}, []string(nil)},
		{"Archive nothing eligible", archived.textString(), func(s *Store) (any, error) { return s.Archive(ctx, "", "") }, []string(nil)},
		{"Archive dry run nothing eligible", archived.textString(), func(s *Store) (any, error) { return archivable(ctx, s, "") }, []string(nil)},
		{"Archive before cutoff", ledgerFixture, func(s *Store) (any, error) { return s.Archive(ctx, "2026-05-25", "") }, []string(nil)},
		{"Archive missing ledger", "<missing>", func(s *Store) (any, error) { return s.Archive(ctx, "", "") }, []string(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, tc.seed, filetxn.WithNoWait())
			holdLock(t, s)
			before := readOrNil(t, s.path)
			got, err := tc.call(s)
			if err != nil {
				t.Fatalf("no-op with the lock held elsewhere = %v", err)
			}
			if !equalAny(got, tc.want) {
				t.Errorf("result = %#v, want %#v", got, tc.want)
			}
			if after := readOrNil(t, s.path); string(after) != string(before) || (after == nil) != (before == nil) {
				t.Errorf("a no-op changed (or created) the ledger")
			}
			if readOrNil(t, s.archive) != nil {
				t.Errorf("a no-op created the archive")
			}
		})
	}
}

func equalAny(a, b any) bool {
	switch x := a.(type) {
	case []string:
		y, ok := b.([]string)
		return ok && slices.Equal(x, y)
	case []bool:
		y, ok := b.([]bool)
		return ok && slices.Equal(x, y)
	}
	return a == b
}

// TestNoStateRoot: without a derivable bmad-loop state root (the default lock
// placement), MutateProbed's no-ops still succeed, a real write fails with
// fsys.ErrNoStateRoot, writing nothing, and Mutate, which needs the lock, fails
// without running fn.
func TestNoStateRoot(t *testing.T) {
	ctx := context.Background()
	t.Setenv("BMAD_LOOP_STATE_DIR", "relative/state")
	path := filepath.Join(t.TempDir(), "deferred-work.md")
	if err := os.WriteFile(path, []byte(ledgerFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	s := must(Open(path))
	if _, err := s.LockPath(); !errors.Is(err, fsys.ErrNoStateRoot) {
		t.Errorf("LockPath() = %v, want fsys.ErrNoStateRoot", err)
	}
	closeID := func(id string) error {
		_, err := s.MutateProbed(ctx, func(d *Doc) error { _, err := d.MarkDone([]string{id}, "2026-06-11", "n"); return err })
		return err
	}
	if err := closeID("DW-2"); err != nil {
		t.Errorf("MutateProbed(close DW-2, done already) = %v, want nil", err)
	}
	if got, err := s.Archive(ctx, "2026-01-01", ""); err != nil || len(got) != 0 {
		t.Errorf("no-op Archive = %v, %v", got, err)
	}
	if err := closeID("DW-1"); !errors.Is(err, fsys.ErrNoStateRoot) {
		t.Errorf("MutateProbed(close DW-1) = %v, want fsys.ErrNoStateRoot", err)
	}
	if _, err := s.Archive(ctx, "", ""); !errors.Is(err, fsys.ErrNoStateRoot) {
		t.Errorf("Archive = %v, want fsys.ErrNoStateRoot", err)
	}
	if _, err := s.MutateProbed(ctx, func(*Doc) error { return nil }); err != nil {
		t.Errorf("MutateProbed(no change) = %v, want nil", err)
	}
	runs := 0
	if _, err := s.Mutate(ctx, func(*Doc) error { runs++; return nil }); !errors.Is(err, fsys.ErrNoStateRoot) || runs != 0 {
		t.Errorf("Mutate(no change) = %v after %d runs of fn, want fsys.ErrNoStateRoot and none", err, runs)
	}
	if got := string(readOrNil(t, path)); got != ledgerFixture {
		t.Errorf("the ledger changed")
	}
}

func TestBmadLoopStateRoot(t *testing.T) {
	abs := t.TempDir()
	for _, tc := range []struct {
		name                   string
		env                    map[string]string
		want                   string
		fail                   bool
		posixOnly, windowsOnly bool
	}{
		{name: "explicit", env: map[string]string{"BMAD_LOOP_STATE_DIR": abs}, want: abs},
		{name: "explicit relative", env: map[string]string{"BMAD_LOOP_STATE_DIR": "rel"}, fail: true},
		{name: "xdg", env: map[string]string{"BMAD_LOOP_STATE_DIR": "", "XDG_STATE_HOME": abs}, want: filepath.Join(abs, "bmad-loop"), posixOnly: true},
		{name: "xdg relative falls back to home", env: map[string]string{"BMAD_LOOP_STATE_DIR": "", "XDG_STATE_HOME": "rel", "HOME": abs}, want: filepath.Join(abs, ".local", "state", "bmad-loop"), posixOnly: true},
		{name: "home is root", env: map[string]string{"BMAD_LOOP_STATE_DIR": "", "XDG_STATE_HOME": "", "HOME": "/"}, fail: true, posixOnly: true},
		{name: "nothing", env: map[string]string{"BMAD_LOOP_STATE_DIR": "", "XDG_STATE_HOME": "", "HOME": ""}, fail: true, posixOnly: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.posixOnly && filepath.Separator != '/' {
				t.Skip("POSIX rule")
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			got, err := BmadLoopStateRoot()
			if tc.fail {
				if !errors.Is(err, fsys.ErrNoStateRoot) {
					t.Errorf("BmadLoopStateRoot() = %q, %v; want fsys.ErrNoStateRoot", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("BmadLoopStateRoot() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestLockPathIsBmadLoopsSidecar: the lock is <root>/locks/<16 hex>-deferred-work.md.lock,
// shared by every spelling of the ledger's path, outside the project, and
// created by nobody until a write.
func TestLockPathIsBmadLoopsSidecar(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "state")
	art := filepath.Join(dir, "project", "artifacts")
	if err := os.MkdirAll(art, 0o755); err != nil {
		t.Fatal(err)
	}
	direct := must(Open(filepath.Join(art, "deferred-work.md"), filetxn.WithStateRoot(root)))
	dotted := must(Open(filepath.Join(art, "..", "artifacts", "deferred-work.md"), filetxn.WithStateRoot(root)))
	a, err1 := direct.LockPath()
	b, err2 := dotted.LockPath()
	want, err3 := lock.SidecarPath(root, filepath.Join(art, "deferred-work.md"))
	if err1 != nil || err2 != nil || err3 != nil || a != b || a != want {
		t.Fatalf("LockPath() = %q, %q; want %q (%v %v %v)", a, b, want, err1, err2, err3)
	}
	if filepath.Dir(a) != filepath.Join(root, "locks") || !strings.HasSuffix(a, "-deferred-work.md.lock") || len(filepath.Base(a)) != 16+len("-deferred-work.md.lock") {
		t.Errorf("LockPath() = %q", a)
	}
	if _, err := os.Stat(filepath.Join(root, "locks")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LockPath created the locks directory")
	}
	t.Setenv("BMAD_LOOP_STATE_DIR", root)
	if c, _ := must(Open(filepath.Join(art, "deferred-work.md"))).LockPath(); c != a {
		t.Errorf("default LockPath() = %q, want %q", c, a)
	}
}

func TestStoreValidatesBeforeAnyIO(t *testing.T) {
	ctx := context.Background()
	// A store whose every I/O would fail: the ledger path is under a file.
	dir := t.TempDir()
	block := filepath.Join(dir, "file")
	os.WriteFile(block, nil, 0o644)
	s := must(Open(filepath.Join(block, "deferred-work.md"), filetxn.WithStateRoot(filepath.Join(block, "state"))))
	type refusal struct{ op, arg, value string }
	checks := map[refusal]error{}
	_, checks[refusal{"Append", "specs[0].Origin", ""}] = s.Append(ctx, Spec{Title: "a"}, Spec{Title: "b", Severity: "urgent"})
	_, checks[refusal{"Append", "specs[1].Severity", "urgent"}] = s.Append(ctx, Spec{Title: "a", Origin: "o"}, Spec{Title: "b", Origin: "o", Severity: "urgent"})
	_, checks[refusal{"Archive", "before", "yesterday"}] = s.Archive(ctx, "yesterday", "")
	_, checks[refusal{"Archive", "stamp", "2026-13-01"}] = s.Archive(ctx, "", "2026-13-01")
	for r, err := range checks {
		if !isArg(err, r.op, r.arg, r.value) {
			t.Errorf("%s(%s %q) = %v, want filetxn.ErrInvalidArgument naming them, before any I/O", r.op, r.arg, r.value, err)
		}
	}
}

// TestStoreDuplicateIDFailsAndWritesNothing: a Mutate whose MarkDone names
// an id two entries carry fails with a *filetxn.FormatError keyed by the id,
// naming the lines, inside an *fs.PathError naming
// the ledger, and writes nothing; the other id then closes.
// Ablation: returning fn's error without Store.named loses the path.
func TestStoreDuplicateIDFailsAndWritesNothing(t *testing.T) {
	ctx := context.Background()
	text := "### DW-1: a\nstatus: open\n\n### DW-2: b\nstatus: open\n\n### DW-1: c\nstatus: open\n"
	s := newStore(t, text)
	closeIDs := func(ids ...string) ([]string, error) {
		var closed []string
		_, err := s.Mutate(ctx, func(d *Doc) (err error) { closed, err = d.MarkDone(ids, "2026-06-11", "n"); return err })
		return closed, err
	}
	_, err := closeIDs("DW-2", "DW-1")
	require.True(t, isDuplicate(err, "DW-1"), "MarkDone(DW-2, DW-1) = %v, want a FormatError keyed DW-1", err)
	require.ErrorContains(t, err, "DW-1: carried by 2 entries (lines 1, 7)", "MarkDone(DW-2, DW-1) = %v, want the lines named", err)
	var pe *fs.PathError
	require.True(t, errors.As(err, &pe) && pe.Path == s.path, "MarkDone(DW-2, DW-1) = %v, want an *fs.PathError naming %s", err, s.path)
	require.Equal(t, text, string(readOrNil(t, s.path)), "ledger after a refused MarkDone")
	got, err := closeIDs("DW-2")
	require.NoError(t, err, "MarkDone(DW-2) = %v, %v", got, err)
	require.Equal(t, []string{"DW-2"}, got, "MarkDone(DW-2) = %v, want [DW-2]", got)
}

// TestArchiveOfADuplicatedIDNamesTheLedger: Store.Archive refuses an eligible
// entry whose id two entries carry with a *filetxn.FormatError keyed by the
// id inside an *fs.PathError naming the ledger, and writes neither file.
func TestArchiveOfADuplicatedIDNamesTheLedger(t *testing.T) {
	text := "### DW-1: a\nstatus: done 2026-01-01\n\n### DW-1: b\nstatus: open\n"
	s := newStore(t, text)
	_, err := s.Archive(context.Background(), "", "2026-08-24")
	var pe *fs.PathError
	require.True(t, isDuplicate(err, "DW-1"), "Archive() = %v, want a FormatError keyed DW-1", err)
	require.True(t, errors.As(err, &pe) && pe.Path == s.path, "Archive() = %v, want an *fs.PathError naming %s", err, s.path)
	require.Equal(t, text, string(readOrNil(t, s.path)), "ledger after a refused Archive")
	require.Nil(t, readOrNil(t, s.archive), "archive after a refused Archive")
}

// TestArchiveOfAReadOnlyLedgerWritesNeitherFile: a ledger the write would
// refuse (read-only) fails Archive before the archive is written, with an
// error wrapping fs.ErrPermission that names the ledger; both files stay as
// they were. (Ablation: two writes, the archive's first, without the check
// before them: the archive gets the bodies and the call fails between the
// writes. Within the one commit the check only names the step: without it,
// the ledger's staging refuses the file before anything is published.)
func TestArchiveOfAReadOnlyLedgerWritesNeitherFile(t *testing.T) {
	text := "### DW-1: a\nstatus: done 2026-01-01\n"
	s := newStore(t, text)
	require.NoError(t, os.Chmod(s.path, 0o444))
	t.Cleanup(func() { os.Chmod(s.path, 0o644) })
	ids, err := s.Archive(context.Background(), "", "2026-08-24")
	var pe *fs.PathError
	require.ErrorIs(t, err, fs.ErrPermission, "Archive() of a read-only ledger = %v, %v, want fs.ErrPermission", ids, err)
	require.True(t, errors.As(err, &pe) && pe.Path == s.path, "Archive() = %v, want an *fs.PathError naming %s", err, s.path)
	require.Empty(t, ids, "Archive() of a read-only ledger moved %v", ids)
	require.Equal(t, text, string(readOrNil(t, s.path)), "ledger after a refused Archive")
	require.Nil(t, readOrNil(t, s.archive), "archive after a refused Archive")
}

// TestMutateFromInsideMutateIsAnError: a write the Store is asked for while
// fn runs under its lock fails with ErrReentrant instead of deadlocking. (On
// Mutate's lock-free run nothing is held: fn must not call the Store.)
func TestMutateFromInsideMutateIsAnError(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, ledgerFixture)
	var inner error
	_, err := s.eng.Mutate(ctx, func(d *Doc) error { // fn once, under the lock
		_, inner = s.Mutate(ctx, func(d *Doc) error { _, err := d.MarkDone([]string{"DW-1"}, "2026-06-11", "n"); return err })
		return nil
	})
	if err != nil || !errors.Is(inner, lock.ErrReentrant) {
		t.Errorf("nested Mutate = %v (outer %v), want ErrReentrant", inner, err)
	}
}

func TestRestoreOnlyOverOwnedVersions(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, ledgerFixture)
	snapshot := readOrNil(t, s.path)
	var c filetxn.Commit
	c, err := s.Mutate(ctx, func(d *Doc) error { _, err := d.MarkDone([]string{"DW-1"}, "2026-06-11", "n"); return err })
	if err != nil || !c.Written {
		t.Fatal(c, err)
	}
	// Nobody else wrote: the snapshot goes back.
	if _, err := s.Restore(ctx, snapshot, digest(c)); err != nil || string(readOrNil(t, s.path)) != ledgerFixture {
		t.Fatalf("Restore over our own write = %v", err)
	}
	// A rival appended after our write: the restore is refused.
	c, _ = s.Mutate(ctx, func(d *Doc) error { _, err := d.MarkDone([]string{"DW-1"}, "2026-06-11", "n"); return err })
	rival := newStoreAt(t, s)
	rival.Append(ctx, Spec{Title: "rival", Origin: "r"})
	if _, err := s.Restore(ctx, snapshot, digest(c)); !errors.Is(err, filetxn.ErrDiverged) {
		t.Errorf("Restore over a rival's write = %v, want ErrDiverged", err)
	}
	if !strings.Contains(string(readOrNil(t, s.path)), "### DW-4: rival") {
		t.Errorf("the rival's entry is gone")
	}
	// Merge puts back what was lost without removing the rival's entry.
	os.WriteFile(s.path, []byte("# Deferred Work\n"), 0o644)
	var rep MergeReport
	_, err = s.Mutate(ctx, func(d *Doc) error { rep = d.Merge(mustParse(t, string(snapshot))); return nil })
	if err != nil || !slices.Equal(rep.Carried, []string{"DW-1", "DW-2", "DW-3"}) {
		t.Errorf("Merge = %+v, %v", rep, err)
	}
}

func newStoreAt(t *testing.T, s *Store) *Store {
	lp, err := s.LockPath()
	if err != nil {
		t.Fatal(err)
	}
	return must(Open(s.path, filetxn.WithLockPath(lp)))
}

// TestArchiveWritesBothFilesUnderOneHold: between the archive's rename
// and the ledger's the lock is held, the archive already has the bodies,
// the ledger is still whole and the commit's intent record is beside the
// lock (bmad-loop's lock-enter, write-archive, write-ledger, lock-exit, made
// one commit); afterwards the record is gone.
func TestArchiveWritesBothFilesUnderOneHold(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, ledgerFixture)
	lp, _ := s.LockPath()
	var checked bool
	seam.Set(t, func(p seam.Point, path string) error {
		if p != seam.Published || path != s.archive {
			return nil
		}
		checked = true
		errc := make(chan error)
		go func() {
			h, err := lock.TryAcquire(lp)
			if err == nil {
				h.Release()
			}
			errc <- err
		}()
		if err := <-errc; !errors.Is(err, lock.ErrWouldBlock) {
			t.Errorf("between the renames, TryAcquire = %v; want ErrWouldBlock", err)
		}
		if !strings.Contains(string(readOrNil(t, s.archive)), "archived: 2026-08-24") {
			t.Errorf("the archive was not published first")
		}
		if string(readOrNil(t, s.path)) != ledgerFixture {
			t.Errorf("the ledger was published before the archive")
		}
		if readOrNil(t, lp+".intent") == nil {
			t.Errorf("no intent record beside the lock between the renames")
		}
		return nil
	})
	ids, err := s.Archive(ctx, "", "2026-08-24")
	if err != nil || !slices.Equal(ids, []string{"DW-2"}) || !checked {
		t.Fatalf("Archive = %v, %v (hook ran: %v)", ids, err, checked)
	}
	if !strings.Contains(string(readOrNil(t, s.path)), "### DW-2: Old closed item\n\nstatus: done 2026-05-25\n") {
		t.Errorf("no stub in the ledger")
	}
	if readOrNil(t, lp+".intent") != nil {
		t.Errorf("the intent record outlived the commit")
	}
	// An eligible preview reports and writes nothing.
	s2 := newStore(t, ledgerFixture)
	if ids, err := archivable(ctx, s2, ""); err != nil || !slices.Equal(ids, []string{"DW-2"}) || readOrNil(t, s2.archive) != nil {
		t.Errorf("archivable(%q) = %v, %v", "", ids, err)
	}
}

func TestStoreView(t *testing.T) {
	s := newStore(t, "<missing>")
	d, err := s.View(context.Background())
	if err != nil || len(d.Entries()) != 0 || d.Bytes() != nil {
		t.Errorf("View of a missing ledger = %v, %v", d, err)
	}
	s = newStore(t, "\xff")
	if _, err := s.View(context.Background()); !isInvalidUTF8(err, 0) {
		t.Errorf("View of invalid bytes = %v, want a FormatError for invalid UTF-8", err)
	}
	if _, err := s.Mutate(context.Background(), func(*Doc) error { return nil }); !isInvalidUTF8(err, 0) {
		t.Errorf("Mutate on invalid bytes = %v, want a FormatError for invalid UTF-8", err)
	}
}

// TestAFailedAcquisitionLeavesNothingBehind: after a write fails on a lock
// held elsewhere, the same Store writes normally once it is free.
func TestAFailedAcquisitionLeavesNothingBehind(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, ledgerFixture, filetxn.WithNoWait())
	closeDW1 := func(d *Doc) error { _, err := d.MarkDone([]string{"DW-1"}, "2026-06-11", "n"); return err }
	t.Run("held", func(t *testing.T) {
		holdLock(t, s)
		if _, err := s.Mutate(ctx, closeDW1); !errors.Is(err, lock.ErrWouldBlock) {
			t.Fatalf("Mutate(close DW-1) = %v, want ErrWouldBlock", err)
		}
	})
	if c, err := s.Mutate(ctx, closeDW1); err != nil || !c.Written {
		t.Errorf("Mutate(close DW-1) after the holder left = %+v, %v, want a write", c, err)
	}
}

// TestLockPathFollowsSymlinkedDirectories: a path through a symlinked
// directory and the direct path share one lock (bmad-loop resolves the path).
func TestLockPathFollowsSymlinkedDirectories(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	testkit.Skip(t, testkit.NoSymlinks)
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	root := filepath.Join(dir, "state")
	a, _ := must(Open(filepath.Join(real, "deferred-work.md"), filetxn.WithStateRoot(root))).LockPath()
	b, _ := must(Open(filepath.Join(dir, "link", "deferred-work.md"), filetxn.WithStateRoot(root))).LockPath()
	if a != b || a == "" {
		t.Errorf("LockPath via the link = %q, direct = %q", b, a)
	}
	other, _ := must(Open(filepath.Join(real, archiveName), filetxn.WithStateRoot(root))).LockPath()
	if other == a {
		t.Errorf("the archive file has the ledger's lock name %q", other)
	}
}

// TestAFailingProbeReadFallsThroughToTheLock: when Archive's lock-free read
// fails, it decides under the lock instead (the lock file appears) and still
// answers its no-op without writing (bmad-loop's
// test_a_failing_probe_read_falls_through_to_the_locked_path). Archive is the
// operation with a probe of its own; Append and Mutate use the engine's
// MutateProbed, whose tests check the same. Ablation: a Store.probe that
// reads past the seam (os.ReadFile) turns it red (the probe answers, and no
// lock is taken).
func TestAFailingProbeReadFallsThroughToTheLock(t *testing.T) {
	archived := mustParse(t, ledgerFixture)
	archived.ArchiveInto(mustParse(t, ""), "", "2026-08-24")
	s := newStore(t, archived.textString())
	lp, _ := s.LockPath()
	faults := 1
	seam.Set(t, func(p seam.Point, path string) error { // the first read of the ledger is the probe's
		if p == seam.Read && path == s.path && faults > 0 {
			faults--
			return os.ErrPermission
		}
		return nil
	})
	before := readOrNil(t, s.path)
	ids, err := s.Archive(context.Background(), "", "")
	if err != nil || len(ids) != 0 {
		t.Errorf("Archive = %v, %v; want the no-op", ids, err)
	}
	if _, err := os.Stat(lp); err != nil {
		t.Errorf("the lock was not taken after the probe failed: %v", err)
	}
	if string(readOrNil(t, s.path)) != string(before) {
		t.Errorf("the ledger changed")
	}
}

// TestAppendCreatesTheLedgersDirectory: Append to a ledger whose directory is
// missing creates the directory (mode 0777 under the umask, as Python's
// appender does, even with the lock beside the ledger) and the ledger, on the
// plain path and on the CrossSpecDedupe path that skips the probe. Ablation:
// dropping either makeDir call turns it red.
func TestAppendCreatesTheLedgersDirectory(t *testing.T) {
	for _, cross := range []bool{false, true} {
		t.Run(fmt.Sprintf("CrossSpecDedupe=%v", cross), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a", "b", "deferred-work.md")
			s := must(Open(path, filetxn.WithLockPath(path+".lock")))
			spec := Spec{Title: "t", Origin: "o", SourceSpec: "s.md", Reason: "r", CrossSpecDedupe: cross}
			ids, err := s.Append(context.Background(), spec)
			if err != nil || len(ids) != 1 || ids[0] == "" {
				t.Fatalf("Append into a missing directory = %v, %v; want one id", ids, err)
			}
			ref := filepath.Join(t.TempDir(), "ref")
			if err := os.MkdirAll(ref, 0o777); err != nil {
				t.Fatal(err)
			}
			want, _ := os.Stat(ref)
			fi, err := os.Stat(filepath.Dir(path))
			if err != nil || fi.Mode() != want.Mode() {
				t.Errorf("Stat(ledger directory) = %v, %v; want %v, as MkdirAll(0777) makes it", fi.Mode(), err, want.Mode())
			}
			if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), ids[0]) {
				t.Errorf("ledger after Append = %q, %v; want %s in it", b, err, ids[0])
			}
		})
	}
}

// TestUnknownIDsAndIdentitylessSpecsAreRefused: closing an id that no entry
// carries (a typo, or any id on a missing ledger) fails with filetxn.ErrNotFound
// naming the id and the ledger, and writes nothing; an id already closed is a replay that
// succeeds. Append of a spec with neither Origin nor SourceSpec fails with
// filetxn.ErrInvalidArgument before any I/O and writes nothing. Ablations: dropping
// the unknown-id check in Doc.MarkDone makes it answer [] as if it had
// replayed; dropping the identity check appends the spec (and would skip
// every later identityless one as its duplicate, answering [""]).
func TestUnknownIDsAndIdentitylessSpecsAreRefused(t *testing.T) {
	ctx := context.Background()
	closeIDs := func(s *Store, ids ...string) ([]string, error) {
		var closed []string
		_, err := s.Mutate(ctx, func(d *Doc) (err error) { closed, err = d.MarkDone(ids, "2026-06-11", "n"); return err })
		return closed, err
	}
	for _, seed := range []string{ledgerFixture, "<missing>"} {
		s := newStore(t, seed)
		before := readOrNil(t, s.path)
		got, err := closeIDs(s, "DW-2", "DW-99")
		require.ErrorIs(t, err, filetxn.ErrNotFound, "MarkDone(DW-2, DW-99) on %.20q = %v, %v, want filetxn.ErrNotFound", seed, got, err)
		unknown := "DW-99"
		if seed == "<missing>" {
			unknown = "DW-2, DW-99"
		}
		require.ErrorContains(t, err, unknown, "MarkDone(DW-2, DW-99) = %v, want the unknown ids named", err)
		var pe *fs.PathError
		require.True(t, errors.As(err, &pe) && pe.Path == s.path, "MarkDone(DW-2, DW-99) = %v, want an *fs.PathError naming %s", err, s.path)
		require.Equal(t, string(before), string(readOrNil(t, s.path)), "ledger after a refused MarkDone")
	}
	s := newStore(t, ledgerFixture)
	got, err := closeIDs(s, "DW-2")
	require.NoError(t, err, "MarkDone(DW-2, already done) = %v, want a replay", err)
	require.Empty(t, got, "MarkDone(DW-2, already done) = %v, want nothing closed", got)
	first, err := s.Append(ctx, Spec{Title: "first", Origin: "o", SourceSpec: "s.md"})
	require.NoError(t, err)
	before := readOrNil(t, s.path)
	ids, err := s.Append(ctx, Spec{Title: "second, unrelated"})
	require.ErrorIs(t, err, filetxn.ErrInvalidArgument, "Append(spec without Origin and SourceSpec) = %v, %v, want filetxn.ErrInvalidArgument", ids, err)
	require.True(t, isArg(err, "Append", "specs[0].Origin", ""), "Append(spec without identity) = %v, want its Origin named", err)
	require.Equal(t, string(before), string(readOrNil(t, s.path)), "ledger after a refused Append (first was %v)", first)
}

// TestMutateNamesOnlyTheLedgersRefusals: an error of fn that does not come
// from the ledger's content (fn's own, an argument a Doc operation refuses)
// and one that names a file already come back from Store.Mutate unchanged,
// and nothing is written. Ablations: wrapping every error in named, or
// wrapping one that is an *fs.PathError already, turns it red.
func TestMutateNamesOnlyTheLedgersRefusals(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, ledgerFixture)
	before := readOrNil(t, s.path)
	boom := errors.New("boom")
	var bad error
	other := &fs.PathError{Op: "Read", Path: "other.md", Err: filetxn.ErrNotFound}
	for _, tc := range []struct {
		name string
		fn   func(*Doc) error
		want func() error
	}{
		{"fn's own", func(d *Doc) error {
			d.Append(Spec{Title: "t", Origin: "o", SourceSpec: "s.md"})
			return boom
		}, func() error { return boom }},
		{"a refused argument", func(d *Doc) error {
			_, bad = d.MarkDone([]string{"DW-1"}, "2026-02-30", "n")
			return bad
		}, func() error { return bad }},
		{"one naming a file", func(*Doc) error { return other }, func() error { return other }},
	} {
		if _, err := s.Mutate(ctx, tc.fn); err == nil || err != tc.want() {
			t.Errorf("Mutate with %s error = %v, want %v unchanged", tc.name, err, tc.want())
		}
	}
	require.Equal(t, string(before), string(readOrNil(t, s.path)), "ledger after failing fns")
}

// TestEditsThatKeepTheLengthAreWritten: a batch whose edits in the middle
// leave the text as long as the file, but different (a reopenable close of
// DW-1 and the undo of DW-3's, which add and remove the same bytes), is a
// change: Bytes returns it and Mutate writes it. Ablation: Doc.changed
// comparing only lengths returns the parsed bytes, the write is lost, and
// this goes red.
func TestEditsThatKeepTheLengthAreWritten(t *testing.T) {
	const date, note = "2026-06-11", "n"
	seed := mustParse(t, ledgerFixture)
	_, err := seed.MarkDone([]string{"DW-3"}, date, note, Reopenable(operationID))
	require.NoError(t, err)
	want := mustParse(t, ledgerFixture)
	_, err = want.MarkDone([]string{"DW-1"}, date, note, Reopenable(operationID))
	require.NoError(t, err)
	require.Len(t, want.Bytes(), len(seed.Bytes()), "the two closes = texts of different lengths; the test needs equal ones")
	swap := func(d *Doc) error {
		if _, err := d.MarkDone([]string{"DW-1"}, date, note, Reopenable(operationID)); err != nil {
			return err
		}
		_, err := d.MarkOpen([]string{"DW-3"}, note, operationID)
		return err
	}
	d := mustParse(t, seed.textString())
	require.NoError(t, swap(d))
	require.Equal(t, want.textString(), string(d.Bytes()), "Bytes after the swap")
	s := newStore(t, seed.textString())
	c, err := s.Mutate(context.Background(), swap)
	require.NoError(t, err)
	require.True(t, c.Written, "Mutate(swap).Written = false, want a write")
	require.Equal(t, want.textString(), string(readOrNil(t, s.path)), "ledger after Mutate(swap)")
}

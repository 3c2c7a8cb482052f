package filetxn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/ledger"
	"github.com/filetxn/filetxn/lock"
)

// The cross-process proof of MutateAll: processes of the test binary
// (internal/testkit) commit over a pair of files and are SIGKILLed at each
// point of the commit and of its recovery; other processes then run the
// next transaction, wait for a recovery behind a busy lock, commit over
// the pair in opposite orders beside single-file writers, and read the
// pair without a lock while it is committed.

// xpDoc is the document of the JSON files of these tests.
type xpDoc struct {
	N     int // the commits over the pair (the crash tests' commit: 0 before, 1 after)
	Pair  int // the multi-file commits over the pair (TestMutateAllInOppositeOrders...)
	Extra int // the changes of this file alone
}

func xpStore(t testing.TB, path string, opts ...filetxn.Option) *filetxn.Store[*xpDoc] {
	t.Helper()
	s, err := filetxn.NewStore[*xpDoc](path, filetxn.JSON[xpDoc](), opts...)
	require.NoError(t, err, "NewStore(%s)", path)
	return s
}

func xpWrite(t testing.TB, path, data string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}

// xpFiles is a pair of stores that a commit changes together, and a third
// store outside the pair, opened alike in the parent and in every child
// from the shared directory. A member's state is 0 while its document is
// the version before the commit under test, 1 once it is the version after
// (a later change of its own part, by touch, leaves the state as it is).
type xpFiles struct {
	pair  [2]filetxn.Member
	third *filetxn.Store[*xpDoc]
	locks [3]string // the lock files of pair[0], pair[1] and third
	dirs  []string  // every directory a staged file or an intent record may be left in
	// commit changes both documents of the pair in m: the commit under test.
	commit func(m *filetxn.Multi)
	// inMulti returns the state of pair[i]'s document in m; touch changes
	// that document in a part the commit does not change.
	inMulti func(t testing.TB, m *filetxn.Multi, i int) int
	touch   func(m *filetxn.Multi, i int)
	// mutate runs a plain Mutate on pair[i], which touches the document if
	// change, and returns the state fn read.
	mutate func(t testing.TB, ctx context.Context, i int, change bool) (int, error)
	// view returns the state of pair[i] as a lock-free reader sees it.
	view func(t testing.TB, i int) int
}

// An xpFixture makes the old versions of a pair's files in a fresh
// directory (prepare, in the parent) and opens them there (in every
// process).
type xpFixture struct {
	name    string
	prepare func(t testing.TB, root string)
	open    func(t testing.TB, root string) *xpFiles
}

func xpState(t testing.TB, what string, ok0, ok1 bool) int {
	t.Helper()
	switch {
	case ok0 && !ok1:
		return 0
	case ok1 && !ok0:
		return 1
	}
	t.Fatalf("%s is neither the version before the commit nor the one after", what)
	return -1
}

// xpJSON is two JSON stores in two directories, each with its lock beside it.
var xpJSON = xpFixture{
	name: "json",
	prepare: func(t testing.TB, root string) {
		for _, n := range []string{"a", "b", "c"} {
			xpWrite(t, filepath.Join(root, n, n+".json"), "{\"N\": 0, \"Pair\": 0, \"Extra\": 0}\n")
		}
	},
	open: func(t testing.TB, root string) *xpFiles {
		var s [3]*filetxn.Store[*xpDoc]
		var path [3]string
		f := &xpFiles{}
		for i, n := range []string{"a", "b", "c"} {
			path[i] = filepath.Join(root, n, n+".json")
			s[i] = xpStore(t, path[i])
			lp, err := s[i].LockPath()
			require.NoError(t, err)
			f.locks[i] = lp
			f.dirs = append(f.dirs, filepath.Join(root, n))
		}
		f.pair, f.third = [2]filetxn.Member{s[0], s[1]}, s[2]
		state := func(t testing.TB, d *xpDoc, what string) int { return xpState(t, what, d.N == 0, d.N == 1) }
		f.commit = func(m *filetxn.Multi) { filetxn.In(m, s[0]).N++; filetxn.In(m, s[1]).N++ }
		f.inMulti = func(t testing.TB, m *filetxn.Multi, i int) int { return state(t, filetxn.In(m, s[i]), path[i]) }
		f.touch = func(m *filetxn.Multi, i int) { filetxn.In(m, s[i]).Extra++ }
		f.mutate = func(t testing.TB, ctx context.Context, i int, change bool) (int, error) {
			seen := -1
			_, err := s[i].Mutate(ctx, func(d *xpDoc) error {
				seen = state(t, d, path[i])
				if change {
					d.Extra++
				}
				return nil
			})
			return seen, err
		}
		f.view = func(t testing.TB, i int) int {
			d, err := s[i].View(context.Background())
			require.NoError(t, err, "View(%s)", path[i])
			return state(t, d, path[i])
		}
		return f
	},
}

// The commit of xpLedgerBoard adds this entry to the ledger and advances
// this story on the board.
const (
	xpEntry = "crash commit"
	xpStory = "1-1-a"
)

// xpLedgerBoard is a ledger and a board in two directories, with their
// locks under one state root.
var xpLedgerBoard = xpFixture{
	name: "ledger-board",
	prepare: func(t testing.TB, root string) {
		xpWrite(t, filepath.Join(root, "board", "sprint-status.yaml"), "development_status:\n  1-1-a: backlog\n  1-2-b: backlog\n")
		xpWrite(t, filepath.Join(root, "c", "c.json"), "{}\n")
		require.NoError(t, os.MkdirAll(filepath.Join(root, "ledger"), 0o755))
	},
	open: func(t testing.TB, root string) *xpFiles {
		state := filetxn.WithStateRoot(filepath.Join(root, "state"))
		l, err := ledger.Open(filepath.Join(root, "ledger", "deferred-work.md"), state)
		require.NoError(t, err)
		b, err := board.Open(filepath.Join(root, "board", "sprint-status.yaml"), state)
		require.NoError(t, err)
		c := xpStore(t, filepath.Join(root, "c", "c.json"))
		f := &xpFiles{pair: [2]filetxn.Member{l, b}, third: c}
		for i, lp := range []func() (string, error){l.LockPath, b.LockPath, c.LockPath} {
			f.locks[i], err = lp()
			require.NoError(t, err)
		}
		f.dirs = []string{filepath.Join(root, "ledger"), filepath.Join(root, "board"), filepath.Join(root, "c"), filepath.Dir(f.locks[0])}
		ledgerState := func(t testing.TB, d *ledger.Doc) int {
			n := 0
			for _, e := range d.Entries() {
				if e.Title == xpEntry {
					n++
				}
			}
			return xpState(t, fmt.Sprintf("the ledger (%d entries %q)", n, xpEntry), n == 0, n == 1)
		}
		boardState := func(t testing.TB, d *board.Doc) int {
			st, _ := d.Status(xpStory)
			return xpState(t, fmt.Sprintf("the board (%s at %q)", xpStory, st), st == board.Backlog, st == board.ReadyForDev)
		}
		touchLedger := func(d *ledger.Doc) {
			n := len(d.Entries())
			_, err := d.Append(ledger.Spec{Title: "touch", Origin: fmt.Sprintf("touch %d", n), SourceSpec: "spec.md", Reason: "a change of the ledger alone"})
			if err != nil {
				panic(err)
			}
		}
		touchBoard := func(d *board.Doc) {
			order := []board.Status{board.Backlog, board.ReadyForDev, board.InProgress, board.Review, board.Done}
			st, _ := d.Status("1-2-b")
			for k, s := range order[:len(order)-1] {
				if s == st {
					if _, err := d.Advance("1-2-b", order[k+1]); err != nil {
						panic(err)
					}
					return
				}
			}
			panic("the board's 1-2-b is done: too many touches")
		}
		f.commit = func(m *filetxn.Multi) {
			if _, err := l.In(m).Append(ledger.Spec{Title: xpEntry, Origin: "crash", SourceSpec: "spec.md", Reason: "the commit under test"}); err != nil {
				panic(err)
			}
			if _, err := b.In(m).Advance(xpStory, board.ReadyForDev); err != nil {
				panic(err)
			}
		}
		f.inMulti = func(t testing.TB, m *filetxn.Multi, i int) int {
			if i == 0 {
				return ledgerState(t, l.In(m))
			}
			return boardState(t, b.In(m))
		}
		f.touch = func(m *filetxn.Multi, i int) {
			if i == 0 {
				touchLedger(l.In(m))
			} else {
				touchBoard(b.In(m))
			}
		}
		f.mutate = func(t testing.TB, ctx context.Context, i int, change bool) (int, error) {
			seen := -1
			var err error
			if i == 0 {
				_, err = l.Mutate(ctx, func(d *ledger.Doc) error {
					if seen = ledgerState(t, d); change {
						touchLedger(d)
					}
					return nil
				})
			} else {
				_, err = b.Mutate(ctx, func(d *board.Doc) error {
					if seen = boardState(t, d); change {
						touchBoard(d)
					}
					return nil
				})
			}
			return seen, err
		}
		f.view = func(t testing.TB, i int) int {
			if i == 0 {
				d, err := l.View(context.Background())
				require.NoError(t, err)
				return ledgerState(t, d)
			}
			d, err := b.View(context.Background())
			require.NoError(t, err)
			return boardState(t, d)
		}
		return f
	},
}

// xpNoLeftovers fails t if an intent record ("<lock>.intent") is left in
// f's directories, other than beside the lock files in except, or a staged
// file (".<name>.<hex>-<n>.tmp") that no record left names: a commit that
// never reached its commit point leaves its staged files until a
// transaction on a file whose lock has its record settles it.
func xpNoLeftovers(t testing.TB, f *xpFiles, except ...string) {
	t.Helper()
	named := map[string]bool{}
	var staged []string
	for _, dir := range f.dirs {
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range ents {
			n, p := e.Name(), filepath.Join(dir, e.Name())
			switch {
			case strings.HasPrefix(n, ".") && strings.HasSuffix(n, ".tmp"):
				staged = append(staged, p)
			case strings.HasSuffix(n, ".intent") && slices.Contains(except, strings.TrimSuffix(p, ".intent")):
				data, err := os.ReadFile(p)
				require.NoError(t, err)
				var rec struct{ Files []struct{ Staged string } }
				line, _, _ := strings.Cut(string(data), "\n")
				require.NoError(t, json.Unmarshal([]byte(line), &rec), "the intent record %s", p)
				for _, f := range rec.Files {
					named[f.Staged] = true
				}
			case strings.HasSuffix(n, ".intent"):
				t.Errorf("intent record left behind: %s", p)
			}
		}
	}
	for _, p := range staged {
		if !named[p] {
			t.Errorf("staged file left behind: %s", p)
		}
	}
}

// xpLocksFree fails t unless every lock of f can be taken at once.
func xpLocksFree(t testing.TB, f *xpFiles) {
	t.Helper()
	for _, lp := range f.locks {
		h, err := lock.TryAcquire(lp)
		require.NoError(t, err, "TryAcquire(%s) after the run = got, want the lock free", lp)
		h.Release()
	}
}

// xpExists reports whether the file name is in dir.
func xpExists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// An xpStep is one child of a crash scenario: it runs role (commit: the
// commit under test; recover: a plain Mutate of pair[0] that changes
// nothing; recoverall: a MutateAll over the pair that changes nothing) and
// blocks at the nth time its process reaches point, where the parent kills
// it. mayFinish: it may also end without reaching it.
type xpStep struct {
	role      string
	point     seam.Point
	n         int32
	mayFinish bool
}

func (s xpStep) args(stage int) string {
	return fmt.Sprintf("%d %s %s %d", stage, s.role, s.point, s.n)
}

func parseStep(t testing.TB, args string) (stage int, s xpStep) {
	var point string
	if _, err := fmt.Sscanf(args, "%d %s %s %d", &stage, &s.role, &point, &s.n); err != nil {
		t.Fatalf("child arguments %q: %v", args, err)
	}
	s.point = seam.Point(point)
	return stage, s
}

// xpRunStep is a child's part in a crash scenario.
func xpRunStep(c *testkit.C, fx xpFixture) {
	stage, s := parseStep(c.T, c.Args)
	f := fx.open(c.T, c.Dir)
	var hits atomic.Int32 // the fsyncs of a commit reach their points from several goroutines
	seam.Set(c.T, func(p seam.Point, path string) error {
		if p == s.point && hits.Add(1) == s.n {
			c.Mark(fmt.Sprintf("reached-%d", stage))
			time.Sleep(time.Hour) // killed here by the parent
		}
		return nil
	})
	ctx := context.Background()
	var err error
	switch s.role {
	case "commit":
		_, err = filetxn.MutateAll(ctx, f.pair[:], func(m *filetxn.Multi) error { f.commit(m); return nil })
	case "recover":
		_, err = f.mutate(c.T, ctx, 0, false)
	case "recoverall":
		_, err = filetxn.MutateAll(ctx, f.pair[:], func(*filetxn.Multi) error { return nil })
	default:
		c.T.Fatalf("unknown role %q", s.role)
	}
	if err != nil {
		c.T.Fatalf("%s: %v", s.role, err)
	}
	c.Mark(fmt.Sprintf("finished-%d", stage))
	c.Mark(fmt.Sprintf("reached-%d", stage))
}

func xpSkipKills(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the SIGKILL tests are Unix-only")
	}
}

// The next transactions a crash test runs, in the parent, after its kills.
var xpNexts = []string{"mutate-first", "mutate-second", "mutateall-second-and-third"}

// TestMutateAllKilledAtEachPointIsAllOrNothing: a child process runs a
// two-file MutateAll (two JSON stores in two directories; a ledger and a
// board with one state root) and is SIGKILLed at each point of the commit:
// between the writes of the two copies of the intent record (Intent),
// between the two staged files (Create), in the commit point's fsyncs
// (Sync, everything written), with everything staged and durable and
// nothing renamed (Committed), after the first rename (Published),
// before the removal of the first and of the last copy (Retire); or a second
// child, recovering that commit with a Mutate or a MutateAll, is killed in
// its turn (Recovering, Published or Retire inside the recovery), once
// after the second copy was lost as a power cut during the commit's fsyncs
// may lose it. A lock-free reader first sees the pair as the kills left it
// (mixed after a first rename). Then another process runs the next
// transaction: a plain Mutate of either file, or a MutateAll of the second
// file and a third one. Its fn must read the pair settled (its file as the
// other file is afterwards); the pair must be all old or all new (all new
// once a rename happened), with no lock held, no intent record beside the
// locks it took, and no staged file that no record names; then each file
// takes a change of its own, and nothing is left anywhere.
//
// Ablations seen red: Mutate's leader without its settle (group.go's lead);
// MutateAll's lock without settleHeld (the "mutateall" variants and the
// MutateAll recovery); the intent records removed before the renames, as if
// renamed before the records were durable ("published"); and, before the
// fix in intentRecord.settle, "retire-last" and "recovery-retire-last" (a
// kill between the removals of the copies left one that, once the other
// file had changed, made every transaction on its own file fail with
// ErrDiverged) and "lost-copy-then-recovery-published" (a recovery that
// completed a commit with a copy missing, killed after its first rename,
// let a Mutate of the file without a copy read it old beside the other
// file new); and each staged file written in its fsync's goroutine instead
// of before the fsyncs ("fsync-commit-point", red in some of its variants
// each run: a file not yet written when the kill came, the commit undone).
func TestMutateAllKilledAtEachPointIsAllOrNothing(t *testing.T) {
	xpSkipKills(t)
	commit := func(p seam.Point, n int32) xpStep { return xpStep{role: "commit", point: p, n: n} }
	scenarios := []struct {
		name    string
		steps   []xpStep
		before  []int // the pair as a lock-free reader sees it after the kills; nil: either
		wantNew bool  // the pair must be the new versions after the next transaction
	}{
		{"committed", []xpStep{commit(seam.Committed, 1)}, []int{0, 0}, true},
		{"published", []xpStep{commit(seam.Published, 1)}, []int{1, 0}, true},
		{"retire-first", []xpStep{commit(seam.Retire, 1)}, []int{1, 1}, true},
		{"retire-last", []xpStep{commit(seam.Retire, 2)}, []int{1, 1}, true},
		{"intent-second-copy", []xpStep{commit(seam.Intent, 2)}, []int{0, 0}, false},
		{"recovering", []xpStep{commit(seam.Committed, 1), {role: "recover", point: seam.Recovering, n: 1}}, []int{0, 0}, true},
		{"recovery-published", []xpStep{commit(seam.Committed, 1), {role: "recover", point: seam.Published, n: 1}}, []int{1, 0}, true},
		{"recovery-retire-last", []xpStep{commit(seam.Committed, 1), {role: "recover", point: seam.Retire, n: 2}}, []int{1, 1}, true},
		{"mutateall-recovery-published", []xpStep{commit(seam.Published, 1), {role: "recoverall", point: seam.Published, n: 1}}, []int{1, 1}, true},
		{"staging-second", []xpStep{commit(seam.Create, 2)}, []int{0, 0}, false},
		{"intent-then-recovery-published", []xpStep{commit(seam.Intent, 2), {role: "recover", point: seam.Published, n: 1, mayFinish: true}}, []int{0, 0}, false},
		{"lost-copy-then-recovery-published", []xpStep{commit(seam.Committed, 1), {role: "lose-second-copy"}, {role: "recover", point: seam.Published, n: 1, mayFinish: true}}, []int{0, 0}, false},
		// Killed in the commit point's fsyncs, at the first staged
		// file's: every copy and staged file is whole in the page cache,
		// which a kill does not lose, so the next transaction completes it.
		{"fsync-commit-point", []xpStep{commit(seam.Sync, 1)}, []int{0, 0}, true},
	}
	for _, fx := range []xpFixture{xpJSON, xpLedgerBoard} {
		for k, sc := range scenarios {
			nexts := xpNexts
			if fx.name != xpJSON.name {
				nexts = xpNexts[k%len(xpNexts) : k%len(xpNexts)+1]
			}
			for _, next := range nexts {
				t.Run(fx.name+"/"+sc.name+"/"+next, func(t *testing.T) {
					if c := testkit.Child(t); c != nil {
						xpRunStep(c, fx)
						return
					}
					t.Parallel()
					root := t.TempDir()
					fx.prepare(t, root)
					for stage, s := range sc.steps {
						if s.role == "lose-second-copy" {
							// What a power loss during the commit's fsyncs may
							// do: the second copy of the record is not on disk.
							require.NoError(t, os.Remove(fx.open(t, root).locks[1]+".intent"))
							continue
						}
						g := testkit.StartWith(t, 1, root, testkit.Options{Args: s.args(stage)})
						g.WaitMark(fmt.Sprintf("reached-%d", stage))
						g.Kill(0)
						if xpExists(root, fmt.Sprintf("finished-%d", stage)) && !s.mayFinish {
							t.Fatalf("child %d (%s) finished without reaching %s #%d", stage, s.role, s.point, s.n)
						}
					}
					f := fx.open(t, root)
					if sc.before != nil {
						got := []int{f.view(t, 0), f.view(t, 1)}
						require.Equal(t, sc.before, got, "the pair as View sees it after the kills = got, want want")
					}
					xpNext(t, f, next, sc.wantNew)
				})
			}
		}
	}
}

// xpNext runs the next transaction after the kills and checks the pair.
func xpNext(t *testing.T, f *xpFiles, next string, wantNew bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var seen, other int
	var took []string
	switch next {
	case "mutate-first", "mutate-second":
		i := map[string]int{"mutate-first": 0, "mutate-second": 1}[next]
		var err error
		seen, err = f.mutate(t, ctx, i, true)
		require.NoError(t, err, "the next transaction, a Mutate of pair[%d]", i)
		other = f.view(t, 1-i)
		took = []string{f.locks[i]}
	case "mutateall-second-and-third":
		_, err := filetxn.MutateAll(ctx, []filetxn.Member{f.pair[1], f.third}, func(m *filetxn.Multi) error {
			seen = f.inMulti(t, m, 1)
			f.touch(m, 1)
			filetxn.In(m, f.third).Extra++
			return nil
		})
		require.NoError(t, err, "the next transaction, a MutateAll of pair[1] and a third file")
		other = f.view(t, 0)
		took = []string{f.locks[1], f.locks[2]}
	}
	require.Equal(t, other, seen, "the state the next transaction's fn read = got, want the other file's after it (the pair settled before the read)")
	pair := []int{f.view(t, 0), f.view(t, 1)}
	require.Equal(t, pair[0], pair[1], "the pair after the next transaction = %v, want all old or all new", pair)
	if wantNew {
		require.Equal(t, 1, pair[0], "the pair after the next transaction = %v, want all new", pair)
	}
	var except []string
	for _, lp := range f.locks {
		if lp != took[0] && (len(took) == 1 || lp != took[1]) {
			except = append(except, lp)
		}
	}
	xpNoLeftovers(t, f, except...)
	xpLocksFree(t, f)
	for i := range 2 {
		if _, err := f.mutate(t, ctx, i, true); err != nil {
			t.Fatalf("a Mutate of pair[%d] after the next transaction = %v, want it to succeed", i, err)
		}
	}
	require.Equal(t, pair, []int{f.view(t, 0), f.view(t, 1)}, "the pair after a change of each file = got, want as after the next transaction")
	xpNoLeftovers(t, f)
	xpLocksFree(t, f)
}

// xpQuiet is how long a process must stay blocked before a test believes it
// is blocked. It is no timing assertion: a slow machine only makes the test
// slower.
const xpQuiet = 100 * time.Millisecond

// xpWriteSeen and xpReadSeen pass the state a child's fn read to the parent.
func xpWriteSeen(c *testkit.C, seen int) {
	c.T.Helper()
	require.NoError(c.T, os.WriteFile(filepath.Join(c.Dir, fmt.Sprintf("seen-%d", c.Index)), []byte(strconv.Itoa(seen)), 0o644))
}

func xpReadSeen(t testing.TB, root string, i int) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, fmt.Sprintf("seen-%d", i)))
	require.NoError(t, err)
	n, err := strconv.Atoi(string(data))
	require.NoError(t, err)
	return n
}

// xpKilledAtTheCommitPoint returns a directory of xpJSON's files in which a
// child was killed at the commit point of a MutateAll over the pair
// (xpRunStep runs it, in the calling test's children).
func xpKilledAtTheCommitPoint(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	xpJSON.prepare(t, root)
	g := testkit.StartWith(t, 1, root, testkit.Options{Args: xpStep{role: "commit", point: seam.Committed, n: 1}.args(0)})
	g.WaitMark("reached-0")
	g.Kill(0)
	return root
}

// TestMutateAllRecoveryWaitsForTheCommitsOtherLocks: a child is killed at
// the commit point of a MutateAll over a and b (nothing renamed).
//
// behind-a-busy-lock: the parent holds b's lock (a plain lock.Acquire);
// another child runs a Mutate of a. It must neither read a before the
// commit over a and b is settled, nor wait for b while it holds a out of
// order: it gets as far as AcquireAll's wait for b, and stays there; once
// b is released it completes the commit and its fn reads a new. Ablation
// seen red: Mutate's leader without its settle (group.go's lead) reads a
// old at once.
//
// two-recoveries-at-once: two children run a Mutate, one of a and one of
// b, and each finds the record holding its own lock while the other holds
// the other one. Both must end (within their ctx) having read the commit
// completed. Ablation seen red: settle waiting for the other lock with its
// own held (lock.Acquire in place of lock.TryAcquire) deadlocks the two
// until their ctx ends.
func TestMutateAllRecoveryWaitsForTheCommitsOtherLocks(t *testing.T) {
	xpSkipKills(t)
	t.Run("behind-a-busy-lock", func(t *testing.T) {
		if c := testkit.Child(t); c != nil {
			if c.Args != "waiter" {
				xpRunStep(c, xpJSON)
				return
			}
			f := xpJSON.open(c.T, c.Dir)
			seam.Set(c.T, func(p seam.Point, path string) error {
				if p == seam.Acquiring && path == f.locks[1] {
					c.Mark("waiting")
					c.Mark("progress")
				}
				return nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout)
			defer cancel()
			seen, err := f.mutate(c.T, ctx, 0, true)
			require.NoError(c.T, err)
			xpWriteSeen(c, seen)
			c.Mark("done")
			c.Mark("progress")
			return
		}
		root := xpKilledAtTheCommitPoint(t)
		f := xpJSON.open(t, root)
		h, err := lock.Acquire(context.Background(), f.locks[1])
		require.NoError(t, err)
		defer h.Release()
		w := testkit.StartWith(t, 1, root, testkit.Options{Args: "waiter"})
		w.WaitMark("progress")
		require.False(t, xpExists(root, "done"), "Mutate(a) with b's lock held by another process = returned, want it to wait for the commit over a and b to be settled")
		time.Sleep(xpQuiet)
		require.False(t, xpExists(root, "done"), "Mutate(a) with b's lock held by another process = returned after a while, want it still waiting")
		require.NoError(t, h.Release())
		w.Wait()
		require.Equal(t, 1, xpReadSeen(t, root, 0), "the state Mutate(a)'s fn read once b was released = got, want the commit completed")
		require.Equal(t, []int{1, 1}, []int{f.view(t, 0), f.view(t, 1)}, "the pair after the recovery = got, want all new")
		xpNoLeftovers(t, f)
		xpLocksFree(t, f)
	})
	t.Run("two-recoveries-at-once", func(t *testing.T) {
		if c := testkit.Child(t); c != nil {
			if c.Args != "racer" {
				xpRunStep(c, xpJSON)
				return
			}
			f := xpJSON.open(c.T, c.Dir)
			var once atomic.Bool
			seam.Set(c.T, func(p seam.Point, path string) error {
				if p == seam.Recovering && once.CompareAndSwap(false, true) {
					// Holding its own lock, about to try the other's: it
					// goes on once the other process is at the same point.
					c.Mark(fmt.Sprintf("recovering-%d", c.Index))
					testkit.WaitFor(c.T, filepath.Join(c.Dir, fmt.Sprintf("recovering-%d", 1-c.Index)))
				}
				return nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			seen, err := f.mutate(c.T, ctx, c.Index, true)
			require.NoError(c.T, err, "Mutate of pair[%d] beside a recovery from the other file", c.Index)
			xpWriteSeen(c, seen)
			return
		}
		root := xpKilledAtTheCommitPoint(t)
		r := testkit.StartWith(t, 2, root, testkit.Options{Args: "racer"})
		r.Wait()
		f := xpJSON.open(t, root)
		for i := range 2 {
			require.Equal(t, 1, xpReadSeen(t, root, i), "the state Mutate of pair[%d] read = got, want the commit completed", i)
		}
		require.Equal(t, []int{1, 1}, []int{f.view(t, 0), f.view(t, 1)}, "the pair after the recoveries = got, want all new")
		xpNoLeftovers(t, f)
		xpLocksFree(t, f)
	})
}

// The workload of TestMutateAllsInOppositeOrdersBesideSingleWritersLoseNothing.
const (
	xpPairWriters = 4 // MutateAll over the pair: the first half as {a, b}, the others as {b, a}
	xpIterations  = 20
)

// TestMutateAllsInOppositeOrdersBesideSingleWritersLoseNothing: four
// processes commit over a and b (two as {a, b}, two as {b, a}) while two
// more run single-file Mutates, one of a and one of b, 20 times each, every
// call within one ctx. Each call adds 1 to N of each file it changes; a
// MutateAll adds 1 to Pair of both, a Mutate 1 to Extra of its file, and
// every MutateAll's fn finds a.Pair == b.Pair. At the end each N is the
// number of calls that changed its file (100), each Pair 80, each Extra 20,
// and no process failed: no deadlock, nothing lost. Ablation seen red:
// lock.AcquireAll taking the locks in the callers' order (no sort) deadlocks
// {a, b} against {b, a}, and the children fail at their ctx.
func TestMutateAllsInOppositeOrdersBesideSingleWritersLoseNothing(t *testing.T) {
	root := t.TempDir()
	open := func(t testing.TB, root string) (a, b *filetxn.Store[*xpDoc]) {
		return xpStore(t, filepath.Join(root, "a", "a.json"), filetxn.WithoutSync()), xpStore(t, filepath.Join(root, "b", "b.json"), filetxn.WithoutSync())
	}
	if c := testkit.Child(t); c != nil {
		a, b := open(c.T, c.Dir)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c.Barrier()
		for k := range xpIterations {
			var err error
			switch i := c.Index; {
			case i < xpPairWriters:
				members := []filetxn.Member{a, b}
				if i >= xpPairWriters/2 {
					members = []filetxn.Member{b, a}
				}
				_, err = filetxn.MutateAll(ctx, members, func(m *filetxn.Multi) error {
					da, db := filetxn.In(m, a), filetxn.In(m, b)
					if da.Pair != db.Pair {
						return fmt.Errorf("a.Pair = %d, b.Pair = %d under both locks, want them equal", da.Pair, db.Pair)
					}
					da.N++
					db.N++
					da.Pair++
					db.Pair++
					return nil
				})
			default:
				s := []*filetxn.Store[*xpDoc]{a, b}[i-xpPairWriters]
				_, err = s.Mutate(ctx, func(d *xpDoc) error { d.N++; d.Extra++; return nil })
			}
			require.NoError(c.T, err, "call %d of process %d", k, c.Index)
		}
		return
	}
	g := testkit.Start(t, xpPairWriters+2, root)
	g.Release()
	g.Wait()
	a, b := open(t, root)
	for _, s := range []*filetxn.Store[*xpDoc]{a, b} {
		d, err := s.View(context.Background())
		require.NoError(t, err)
		want := xpDoc{N: (xpPairWriters + 1) * xpIterations, Pair: xpPairWriters * xpIterations, Extra: xpIterations}
		require.Equal(t, want, *d, "a file after the run = got, want want")
	}
}

// xpCommits is the number of commits TestViewDuringMutateAllsNeverSeesATornFile
// makes while its reader reads.
const xpCommits = 200

// TestViewDuringMutateAllsNeverSeesATornFile: one process commits over a
// and b 200 times (each commit adds 1 to N of both, a renamed first) while
// another reads the pair with View in a loop, a then b, without a lock.
// Every View returns a whole document: the reader never sees a torn file.
// What it may see is documented here, not asserted: a pair mixed during a
// commit's publish window, a.N == b.N+1 (a renamed, b not yet), since a
// lock-free reader is not excluded by the commit (read in the other order,
// b then a, a mix is indistinguishable from a commit between the two
// reads). The test logs how many mixed pairs it saw. Ablation seen red:
// publishing a multi-file commit by writing each target in place (truncated,
// then written a byte per write, as a large file is written in many) instead
// of renaming its staged file makes View fail on a cut file. Written in
// place in one write, the window is too narrow for 200 commits to hit.
func TestViewDuringMutateAllsNeverSeesATornFile(t *testing.T) {
	testkit.Skip(t, testkit.NoPOSIXRename)
	root := t.TempDir()
	open := func(t testing.TB, root string) (a, b *filetxn.Store[*xpDoc]) {
		return xpStore(t, filepath.Join(root, "a", "a.json"), filetxn.WithoutSync()), xpStore(t, filepath.Join(root, "b", "b.json"), filetxn.WithoutSync())
	}
	if c := testkit.Child(t); c != nil {
		a, b := open(c.T, c.Dir)
		ctx := context.Background()
		c.Barrier()
		if c.Index == 0 {
			for k := range xpCommits {
				_, err := filetxn.MutateAll(ctx, []filetxn.Member{a, b}, func(m *filetxn.Multi) error {
					filetxn.In(m, a).N++
					filetxn.In(m, b).N++
					return nil
				})
				require.NoError(c.T, err, "commit %d", k)
			}
			c.Mark("writer-done")
			return
		}
		views, mixed := 0, 0
		for !xpExists(c.Dir, "writer-done") {
			da, err := a.View(ctx)
			require.NoError(c.T, err, "View(a) during the commits = got, want a whole document")
			db, err := b.View(ctx)
			require.NoError(c.T, err, "View(b) during the commits = got, want a whole document")
			views++
			if da.N > db.N {
				mixed++
			}
		}
		require.NoError(c.T, os.WriteFile(filepath.Join(c.Dir, "reader-counts"), fmt.Appendf(nil, "%d %d", views, mixed), 0o644))
		return
	}
	xpWrite(t, filepath.Join(root, "a", "a.json"), "{\"N\": 0}\n")
	xpWrite(t, filepath.Join(root, "b", "b.json"), "{\"N\": 0}\n")
	g := testkit.Start(t, 2, root)
	g.Release()
	g.Wait()
	var views, mixed int
	data, err := os.ReadFile(filepath.Join(root, "reader-counts"))
	require.NoError(t, err)
	_, err = fmt.Sscanf(string(data), "%d %d", &views, &mixed)
	require.NoError(t, err)
	t.Logf("the lock-free reader read the pair %d times during %d commits; %d of its reads saw the pair mixed (a new, b old)", views, xpCommits, mixed)
}

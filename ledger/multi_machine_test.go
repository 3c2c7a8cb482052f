package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"pgregory.net/rapid"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/ledger"
)

// The multi-file machine drives a ledger and a board in one state root
// through single-file operations (each store's own Append or Mutate) and
// multi-file ones (filetxn.MutateAll over both), some whose fn fails midway
// and some with a fault injected at a drawn step of the commit, and checks
// the files against a plain model after every action.

// mmEntry is a ledger entry as the model sees it.
type mmEntry struct {
	id   string
	done string // the close date; "" for an open entry
}

// mmState is the model: the ledger's entries in file order, and the
// board's rows.
type mmState struct {
	entries []mmEntry
	rows    map[string]board.Status // story and epic keys
	maxNum  int                     // the highest DW-<n> minted
}

func (s mmState) clone() mmState {
	return mmState{entries: slices.Clone(s.entries), rows: maps.Clone(s.rows), maxNum: s.maxNum}
}

func (s *mmState) entry(id string) *mmEntry {
	for i := range s.entries {
		if s.entries[i].id == id {
			return &s.entries[i]
		}
	}
	return nil
}

// close closes the open entries among ids, as MarkDone does: the ids
// closed, in the order given; false when an id is unknown (nothing closes).
func (s *mmState) close(ids []string, date string) ([]string, bool) {
	for _, id := range ids {
		if s.entry(id) == nil {
			return nil, false
		}
	}
	var closed []string
	for _, id := range ids {
		if e := s.entry(id); e.done == "" {
			e.done = date
			closed = append(closed, id)
		}
	}
	return closed, true
}

// reopen reopens the closed entries among ids, as MarkOpen does for closes
// made Reopenable with the same operation and note.
func (s *mmState) reopen(ids []string) ([]string, bool) {
	for _, id := range ids {
		if s.entry(id) == nil {
			return nil, false
		}
	}
	var opened []string
	for _, id := range ids {
		if e := s.entry(id); e.done != "" {
			e.done = ""
			opened = append(opened, id)
		}
	}
	return opened, true
}

// add appends an open entry: the id minted.
func (s *mmState) add() string {
	s.maxNum++
	id := "DW-" + strconv.Itoa(s.maxNum)
	s.entries = append(s.entries, mmEntry{id: id})
	return id
}

// advance moves story key towards target, as board.Doc.Advance does
// (never back; a story moved to in-progress lifts its epic from backlog):
// whether a row changed.
func (s *mmState) advance(key string, target board.Status) bool {
	cur := s.rows[key]
	if board.Rank(cur) >= board.Rank(target) {
		return false
	}
	s.rows[key] = target
	epic := "epic-" + key[:strings.IndexByte(key, '-')]
	if target == board.InProgress && s.rows[epic] == board.Backlog {
		s.rows[epic] = board.InProgress
	}
	return true
}

var (
	mmStories  = []string{"1-1-login", "1-2-logout", "2-1-search"}
	mmStatuses = []board.Status{board.Backlog, board.ReadyForDev, board.InProgress, board.Review, board.AwaitingOperator, board.Done}
	mmDates    = []string{"2026-06-10", "2026-06-11", "2026-06-12"}
	mmBoard    = "# sprint status\ndevelopment_status:\n  epic-1: backlog\n  1-1-login: backlog\n  1-2-logout: backlog\n  epic-2: backlog\n  2-1-search: backlog\n"
)

const (
	mmOp   = "run-1/close" // every close is reopenable with this operation id
	mmNote = "closed by the machine"
)

// multiMachine is the system under test, the model and what the last
// action left to settle.
type multiMachine struct {
	dir, state string
	durable    bool
	ls         *ledger.Store
	bs         *board.Store

	model mmState
	// pre is the model before a commit that a fault split (or left its
	// record of): until a transaction completes it, each file may be either.
	pre *mmState
	// stray[i]: a copy of that commit's intent record may be left beside
	// the lock of file i (0 the ledger, 1 the board) after the transaction
	// that completed it took the other file's lock alone: a commit whose
	// other copy was removed already is done, and the next transaction on
	// file i removes it.
	stray [2]bool
}

func (m *multiMachine) open(t *rapid.T) {
	opts := []filetxn.Option{filetxn.WithStateRoot(m.state)}
	if !m.durable {
		opts = append(opts, filetxn.WithoutSync())
	}
	var err error
	if m.ls, err = ledger.Open(filepath.Join(m.dir, "deferred-work.md"), opts...); err != nil {
		t.Fatal(err)
	}
	if m.bs, err = board.Open(filepath.Join(m.dir, "sprint-status.yaml"), opts...); err != nil {
		t.Fatal(err)
	}
}

// drawIDs draws a few ids: known ones, possibly repeated, and (when
// unknown) one no entry carries.
func (m *multiMachine) drawIDs(t *rapid.T, label string, unknown bool) []string {
	pool := []string{}
	for _, e := range m.model.entries {
		pool = append(pool, e.id)
	}
	if unknown || len(pool) == 0 {
		pool = append(pool, "DW-99")
	}
	ids := rapid.SliceOfN(rapid.SampledFrom(pool), 1, 3).Draw(t, label)
	if !unknown {
		ids = slices.DeleteFunc(ids, func(id string) bool { return id == "DW-99" })
	}
	return ids
}

func (m *multiMachine) spec(id string) ledger.Spec {
	return ledger.Spec{Title: "work " + id, Origin: "origin of " + id, SourceSpec: "spec.md", Reason: "r"}
}

// settled marks the split commit, if any, completed by a transaction that
// took the locks of the files in took (0 the ledger, 1 the board), and
// their records removed.
func (m *multiMachine) settled(took ...int) {
	m.pre = nil
	for _, i := range took {
		m.stray[i] = false
	}
}

// Append files one entry through the ledger's own Append.
func (m *multiMachine) Append(t *rapid.T) {
	want := m.model.clone()
	id := want.add()
	got, err := m.ls.Append(context.Background(), m.spec(id))
	if err != nil || !slices.Equal(got, []string{id}) {
		t.Fatalf("Append = %v, %v, want [%s]", got, err, id)
	}
	m.model = want
	m.settled(0)
}

// Close closes entries through the ledger's Mutate; an unknown id fails it,
// writing nothing.
func (m *multiMachine) Close(t *rapid.T) {
	ids := m.drawIDs(t, "close ids", true)
	date := rapid.SampledFrom(mmDates).Draw(t, "close date")
	var got []string
	c, err := m.ls.Mutate(context.Background(), func(d *ledger.Doc) (err error) {
		got, err = d.MarkDone(ids, date, mmNote, ledger.Reopenable(mmOp))
		return err
	})
	m.settled(0)
	want := m.model.clone()
	closed, ok := want.close(ids, date)
	if !ok {
		if !errors.Is(err, filetxn.ErrNotFound) || c.Written {
			t.Fatalf("Mutate(MarkDone(%v)) = %+v, %v, want ErrNotFound and nothing written", ids, c, err)
		}
		return
	}
	if err != nil || !slices.Equal(got, closed) || c.Written != (len(closed) > 0) {
		t.Fatalf("Mutate(MarkDone(%v)) = %v, %+v, %v, want %v", ids, got, c, err, closed)
	}
	m.model = want
}

// ReopenEntries reopens closed entries through the ledger's Mutate.
func (m *multiMachine) ReopenEntries(t *rapid.T) {
	ids := m.drawIDs(t, "reopen ids", false)
	var got []string
	c, err := m.ls.Mutate(context.Background(), func(d *ledger.Doc) (err error) {
		got, err = d.MarkOpen(ids, mmNote, mmOp)
		return err
	})
	m.settled(0)
	want := m.model.clone()
	opened, ok := want.reopen(ids)
	if !ok {
		if !errors.Is(err, filetxn.ErrNotFound) || c.Written {
			t.Fatalf("Mutate(MarkOpen(%v)) = %+v, %v, want ErrNotFound and nothing written", ids, c, err)
		}
		return
	}
	if err != nil || !slices.Equal(got, opened) || c.Written != (len(opened) > 0) {
		t.Fatalf("Mutate(MarkOpen(%v)) = %v, %+v, %v, want %v", ids, got, c, err, opened)
	}
	m.model = want
}

// Advance moves a story through the board's Mutate.
func (m *multiMachine) Advance(t *rapid.T) {
	key := rapid.SampledFrom(mmStories).Draw(t, "advance key")
	target := rapid.SampledFrom(mmStatuses).Draw(t, "advance target")
	c, err := m.bs.Mutate(context.Background(), func(d *board.Doc) error {
		_, err := d.Advance(key, target)
		return err
	})
	m.settled(1)
	want := m.model.clone()
	changed := want.advance(key, target)
	if err != nil || c.Written != changed {
		t.Fatalf("Mutate(Advance(%s, %s)) = %+v, %v, want Written %v", key, target, c, err, changed)
	}
	m.model = want
}

// multiOp is a drawn multi-file operation: its fn, and the model after it.
type multiOp struct {
	name string
	fn   func(*filetxn.Multi) error
	want mmState
	// changed says which files the model says fn changes: the ledger's,
	// the board's.
	changed [2]bool
	err     error // the error fn returns, nil if none
}

// drawMulti draws a commit that closes entries and advances a story, or
// files an entry and advances a story; fail makes its fn fail after it
// changed both documents.
func (m *multiMachine) drawMulti(t *rapid.T, fail bool) multiOp {
	key := rapid.SampledFrom(mmStories).Draw(t, "multi key")
	target := rapid.SampledFrom(mmStatuses).Draw(t, "multi target")
	op := multiOp{want: m.model.clone()}
	var ledgerOp func(*ledger.Doc) error
	if rapid.Bool().Draw(t, "multi close") || fail {
		ids := m.drawIDs(t, "multi close ids", false)
		date := rapid.SampledFrom(mmDates).Draw(t, "multi close date")
		closed, _ := op.want.close(ids, date)
		op.name = fmt.Sprintf("close %v and advance %s to %s", ids, key, target)
		op.changed[0] = len(closed) > 0
		ledgerOp = func(d *ledger.Doc) error {
			got, err := d.MarkDone(ids, date, mmNote, ledger.Reopenable(mmOp))
			if err == nil && !slices.Equal(got, closed) {
				err = fmt.Errorf("MarkDone(%v) = %v, model %v", ids, got, closed)
			}
			return err
		}
	} else {
		id := op.want.add()
		op.name = fmt.Sprintf("add %s and advance %s to %s", id, key, target)
		op.changed[0] = true
		spec := m.spec(id)
		ledgerOp = func(d *ledger.Doc) error {
			got, err := d.Append(spec)
			if err == nil && !slices.Equal(got, []string{id}) {
				err = fmt.Errorf("Append = %v, model [%s]", got, id)
			}
			return err
		}
	}
	op.changed[1] = op.want.advance(key, target)
	ls, bs := m.ls, m.bs
	if fail {
		// The fn changes both documents, then fails: one way with its own
		// error, the other with a refusal of the ledger's after a change of
		// the board.
		if rapid.Bool().Draw(t, "fail with a refusal") {
			op.name = fmt.Sprintf("advance %s to %s, then close DW-99", key, target)
			op.err = filetxn.ErrNotFound
			op.fn = func(mu *filetxn.Multi) error {
				if _, err := bs.In(mu).Advance(key, target); err != nil {
					return err
				}
				if err := ledgerOp(ls.In(mu)); err != nil {
					return err
				}
				_, err := ls.In(mu).MarkDone([]string{"DW-99"}, mmDates[0], mmNote)
				return err
			}
			return op
		}
		op.name += ", then fail"
		op.err = errMidway
		op.fn = func(mu *filetxn.Multi) error {
			if err := ledgerOp(ls.In(mu)); err != nil {
				return err
			}
			if _, err := bs.In(mu).Advance(key, target); err != nil {
				return err
			}
			return errMidway
		}
		return op
	}
	op.fn = func(mu *filetxn.Multi) error {
		if err := ledgerOp(ls.In(mu)); err != nil {
			return err
		}
		_, err := bs.In(mu).Advance(key, target)
		return err
	}
	return op
}

var errMidway = errors.New("the fn fails midway")

// members are the machine's stores in one MutateAll, the ledger first.
func (m *multiMachine) members() []filetxn.Member { return []filetxn.Member{m.ls, m.bs} }

// checkWritten checks a MutateAll's Commits against the files op changes.
func checkWritten(t *rapid.T, op multiOp, cs []filetxn.Commit) {
	if len(cs) != 2 || cs[0].Written != op.changed[0] || cs[1].Written != op.changed[1] {
		t.Fatalf("MutateAll(%s) Commits = %+v, want Written %v", op.name, cs, op.changed)
	}
}

// Commit closes entries or files one, and advances a story, in one
// MutateAll.
func (m *multiMachine) Commit(t *rapid.T) {
	op := m.drawMulti(t, false)
	cs, err := filetxn.MutateAll(context.Background(), m.members(), op.fn)
	m.settled(0, 1)
	if err != nil {
		t.Fatalf("MutateAll(%s) = %v", op.name, err)
	}
	checkWritten(t, op, cs)
	m.model = op.want
}

// FailMidway runs a MutateAll whose fn changes both documents and then
// fails: its error comes back, and nothing is written anywhere.
func (m *multiMachine) FailMidway(t *rapid.T) {
	op := m.drawMulti(t, true)
	ledgerBefore, boardBefore := m.bytes(t)
	split := m.pre != nil
	cs, err := filetxn.MutateAll(context.Background(), m.members(), op.fn)
	m.settled(0, 1)
	if !errors.Is(err, op.err) || cs != nil {
		t.Fatalf("MutateAll(%s) = %+v, %v, want %v and no Commits", op.name, cs, err, op.err)
	}
	if split {
		// Its locks taken, it completed the split commit before fn ran,
		// and wrote nothing of its own.
		m.checkFiles(t, "after a failed MutateAll completed a split commit")
		return
	}
	if l, b := m.bytes(t); l != ledgerBefore || b != boardBefore {
		t.Fatalf("MutateAll(%s) failed, but wrote: ledger %q -> %q, board %q -> %q", op.name, ledgerBefore, l, boardBefore, b)
	}
}

// checkFiles checks both files against the model, strictly.
func (m *multiMachine) checkFiles(t *rapid.T, when string) {
	ld, err := m.ls.View(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	bd, err := m.bs.View(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := ledgerMatches(ld, m.model); diff != "" {
		t.Fatalf("ledger %s: %s", when, diff)
	}
	if diff := boardMatches(bd, m.model); diff != "" {
		t.Fatalf("board %s: %s", when, diff)
	}
}

// mmFaults are the file-system steps a fault is drawn among: the reads
// and the lock, each file's staging (create, write, fsync), the intent
// record's write and fsync (both are seam.Intent), the directory fsyncs,
// each rename and the removal of each copy of the record.
var mmFaults = []seam.Point{seam.Read, seam.Lock, seam.Create, seam.Write, seam.Sync, seam.Intent, seam.SyncDir, seam.Rename, seam.Retire}

// Fault runs a commit with an EIO injected at the n-th call of a drawn
// step. Either it fails with nothing published and nothing left behind,
// or (a fault after the commit point) with an error that says the commit
// stands: the files may then be split, and the next transaction, whatever
// it is, must see the whole commit. Without a fault that fires, it is an
// ordinary commit.
func (m *multiMachine) Fault(t *rapid.T) {
	if m.pre != nil {
		t.Skip("a split commit is still to be completed") // a fault in its recovery is another test's
	}
	op := m.drawMulti(t, false)
	point := rapid.SampledFrom(mmFaults).Draw(t, "fault step")
	nth := rapid.IntRange(0, 2).Draw(t, "fault at call")
	var mu sync.Mutex
	calls, fired := 0, false
	remove := seam.Set(t, func(p seam.Point, path string) error {
		if p != point {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls-1 == nth {
			fired = true
			return syscall.EIO
		}
		return nil
	})
	ledgerBefore, boardBefore := m.bytes(t)
	cs, err := filetxn.MutateAll(context.Background(), m.members(), op.fn)
	remove()
	written := slices.ContainsFunc(cs, func(c filetxn.Commit) bool { return c.Written })
	switch {
	case err == nil:
		checkWritten(t, op, cs)
		m.model = op.want
	case !fired || !errors.Is(err, syscall.EIO):
		t.Fatalf("MutateAll(%s) with a fault at %s #%d (fired: %v) = %v", op.name, point, nth, fired, err)
	case !written:
		// Nothing published: both files as they were, nothing left.
		if l, b := m.bytes(t); l != ledgerBefore || b != boardBefore {
			t.Fatalf("MutateAll(%s) failed at %s #%d with nothing written (%v), but ledger %q -> %q, board %q -> %q",
				op.name, point, nth, err, ledgerBefore, l, boardBefore, b)
		}
		m.checkNoLeftovers(t)
	default:
		// After the commit point: the commit stands.
		both := op.changed[0] && op.changed[1]
		if both && !cs[1].Written && !strings.Contains(err.Error(), "committed") {
			t.Fatalf("MutateAll(%s) split at %s #%d = %v, want an error that says the commit stands", op.name, point, nth, err)
		}
		pre := m.model
		m.pre, m.model, m.stray = &pre, op.want, [2]bool{true, true}
	}
}

// Reopen drops both stores and opens them again: nothing in memory
// carries over.
func (m *multiMachine) Reopen(t *rapid.T) { m.open(t) }

// bytes returns both files' bytes ("" for a missing file).
func (m *multiMachine) bytes(t *rapid.T) (string, string) {
	var out [2]string
	for i, p := range []string{filepath.Join(m.dir, "deferred-work.md"), filepath.Join(m.dir, "sprint-status.yaml")} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out[0], out[1]
}

// checkNoLeftovers checks that no staged file and no intent record is
// left beside the files or their locks, but for the stray copies of a
// completed commit's record (see stray).
func (m *multiMachine) checkNoLeftovers(t *rapid.T) {
	for _, dir := range []string{m.dir, filepath.Join(m.state, "locks")} {
		ents, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		for _, e := range ents {
			n := e.Name()
			stray := m.stray[0] && strings.HasSuffix(n, "deferred-work.md.lock.intent") ||
				m.stray[1] && strings.HasSuffix(n, "sprint-status.yaml.lock.intent")
			if strings.HasSuffix(n, ".tmp") || strings.HasSuffix(n, ".intent") && !stray {
				t.Fatalf("left behind: %s", filepath.Join(dir, n))
			}
		}
	}
}

// ledgerMatches reports how the ledger's entries differ from s's, "" if
// they do not.
func ledgerMatches(d *ledger.Doc, s mmState) string {
	es := d.Entries()
	if len(es) != len(s.entries) {
		return fmt.Sprintf("%d entries, model %d", len(es), len(s.entries))
	}
	for i, e := range es {
		w := s.entries[i]
		want := "open"
		if w.done != "" {
			want = "done " + w.done
		}
		if e.ID != w.id || e.Status != want {
			return fmt.Sprintf("entry %d is %s %q, model %s %q", i, e.ID, e.Status, w.id, want)
		}
	}
	return ""
}

// boardMatches reports how the board's rows differ from s's, "" if they
// do not.
func boardMatches(d *board.Doc, s mmState) string {
	for key, want := range s.rows {
		if got, ok := d.Status(key); !ok || got != want {
			return fmt.Sprintf("%s is %q, model %q", key, got, want)
		}
	}
	return ""
}

// Check: (1) the ledger's entries, in order, with their states, are the
// model's; (2) so are the board's rows; (3) no staged file or intent
// record is left (but a stray copy of a completed commit's record). While
// a split commit waits for the next transaction, each file may instead be
// as it was before the commit, and (3) waits.
func (m *multiMachine) Check(t *rapid.T) {
	ctx := context.Background()
	ld, err := m.ls.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bd, err := m.bs.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := ledgerMatches(ld, m.model); diff != "" && (m.pre == nil || ledgerMatches(ld, *m.pre) != "") {
		t.Fatalf("ledger: %s", diff)
	}
	if diff := boardMatches(bd, m.model); diff != "" && (m.pre == nil || boardMatches(bd, *m.pre) != "") {
		t.Fatalf("board: %s", diff)
	}
	if m.pre == nil {
		m.checkNoLeftovers(t)
	}
}

// TestLedgerAndBoardMultiFileStateMachine runs the machine, a fresh ledger
// (missing at first) and board in one state root per run, durable in one
// run of four (so that the fsync steps can fail too).
// Ablations: no recovery (readIntent finding no record) is red on the
// board after the next transaction following a split Fault ("completed a
// split commit", or Check); MutateAll publishing the files one Tx.Write
// each is red on Fault at the second file's step ("want an error that says
// the commit stands": the first file published, the commit not durable).
func TestLedgerAndBoardMultiFileStateMachine(t *testing.T) {
	root := t.TempDir()
	var n atomic.Int64
	rapid.Check(t, func(t *rapid.T) {
		m := &multiMachine{dir: filepath.Join(root, strconv.FormatInt(n.Add(1), 10))}
		m.state = filepath.Join(m.dir, "state")
		m.durable = rapid.IntRange(0, 3).Draw(t, "durable") == 0
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(m.dir, "sprint-status.yaml"), []byte(mmBoard), 0o644); err != nil {
			t.Fatal(err)
		}
		m.model = mmState{rows: map[string]board.Status{"epic-1": board.Backlog, "epic-2": board.Backlog}}
		for _, k := range mmStories {
			m.model.rows[k] = board.Backlog
		}
		m.open(t)
		t.Repeat(rapid.StateMachineActions(m))
	})
}

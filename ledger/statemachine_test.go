package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/seam"

	"pgregory.net/rapid"
)

// The state machine drives one Doc (and its archive Doc) through random
// operations and checks it against a plain model: an ordered list of entries
// with their status, their last close and whether they are archived stubs.

type mState int

const (
	mOpen mState = iota
	mDone
	mMalformed
)

type mClose struct {
	reopenable bool
	opID, note string // note as written (before one-line hygiene)
	blocked    bool   // a decision line now sits between the status and the resolution
}

type mEntry struct {
	id        string
	state     mState
	closeDate string
	close     *mClose // the last close this machine made; nil for a seed's own status
	archived  bool    // the entry is currently an archive stub
	seen      map[string]bool
}

type ledgerMachine struct {
	tgt     target
	model   []*mEntry
	byID    map[string]*mEntry
	maxNum  int // highest DW-<n> number the text mentions
	markers map[string]markerKey
	blocks  int // entries appended to the archive so far

	prevBodies map[string]string
	prevProse  []string
	touched    map[string]bool // ids the last action may have changed
}

var (
	smSeeds = []string{
		"",
		ledgerFixture,
		strings.ReplaceAll(ledgerFixture, "\n", "\r\n"),
		"# Deferred Work\n\n## Deferred from: review (2026-06-01)\n\n- bullet one\n- bullet two\n\n" +
			"### DW-4: canonical\norigin: o1\nsource_spec: `s1`\nstatus:   open # annotated\n- source_spec: `flat.md`\n  summary: flat block\n\n" +
			"```\n### DW-9: quoted example\nstatus: open\n```\n\n### DW-5: legacy\nstatus: closed\n\n## DW-N1 — variant\nprose\n",
	}
	smDates   = []string{"2026-06-10", "2026-06-11", "2026-06-12", "2026-06-13"}
	smTitles  = []string{"t", "two words", "a\nb", "\n", "`tick`", "ünï 中文", "see DW-%d"}
	smOrigins = []string{"o1", "o2", "review of x", "multi\nline", "multi line"}
	smSpecs   = []string{"s1", "s2", "spec x.md"}
	smNotes   = []string{"n1", "two\nlines", "  padded ", "ünï"}
	smOps     = []string{"op-a", "op-b"}
	smLabels  = []string{"fix now", "defer", "a\u2028b"}
)

func (m *ledgerMachine) init(t *rapid.T, newTarget func(*rapid.T, string) target) {
	seed := rapid.SampledFrom(smSeeds).Draw(t, "seed")
	m.tgt = newTarget(t, seed)
	d := m.tgt.Ledger(t)
	m.byID = make(map[string]*mEntry)
	m.markers = make(map[string]markerKey)
	for _, e := range d.Entries() {
		var k markerKey
		for _, l := range strings.Split(e.Body, "\n") {
			if v, ok := strings.CutPrefix(l, "origin: "); ok {
				k.origin = v
			}
			if v, ok := strings.CutPrefix(l, "source_spec: "); ok {
				k.spec = strings.Trim(v, "`")
			}
		}
		m.markers[e.ID] = k
		me := &mEntry{id: e.ID, state: mMalformed, seen: map[string]bool{}}
		switch {
		case e.Open():
			me.state = mOpen
		case e.Done():
			me.state, me.closeDate = mDone, e.closeDate()
		}
		m.model = append(m.model, me)
		m.byID[e.ID] = me
	}
	m.maxNum = int(d.nextSeq()) - 1
	m.touched = map[string]bool{}
}

// drawIDs draws a batch of ids: known ones, possibly repeated, and unknown ones.
func (m *ledgerMachine) drawIDs(t *rapid.T, label string) []string {
	pool := []string{"DW-99", "DW-0"}
	for _, e := range m.model {
		pool = append(pool, e.id)
	}
	ids := rapid.SliceOfN(rapid.SampledFrom(pool), 0, 4).Draw(t, label)
	for _, id := range ids {
		m.touched[id] = true
	}
	return ids
}

func modelNote(n string) string { return trimSpace(oneLine(n)) }

// Append adds a batch of entries, some of which dedupe.
func (m *ledgerMachine) Append(t *rapid.T) {
	n := rapid.IntRange(0, 3).Draw(t, "specs")
	specs := make([]Spec, n)
	for i := range specs {
		title := rapid.SampledFrom(smTitles).Draw(t, "title")
		if strings.Contains(title, "%d") {
			ref := rapid.IntRange(0, m.maxNum+5).Draw(t, "title ref")
			title = fmt.Sprintf(title, ref)
		}
		status := "open"
		if rapid.Bool().Draw(t, "filed done") {
			status = "done " + rapid.SampledFrom(smDates).Draw(t, "filed date")
		}
		specs[i] = Spec{
			Title:           title,
			Origin:          rapid.SampledFrom(smOrigins).Draw(t, "origin"),
			SourceSpec:      rapid.SampledFrom(smSpecs).Draw(t, "source spec"),
			Reason:          rapid.SampledFrom(smNotes).Draw(t, "reason"),
			Severity:        rapid.SampledFrom([]string{"", "low", "critical"}).Draw(t, "severity"),
			Status:          status,
			CrossSpecDedupe: rapid.Bool().Draw(t, "cross spec"),
		}
	}
	before := m.tgt.Ledger(t).textString()
	got, err := m.tgt.Append(specs...)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	// The model: dedupe against the open entries with the same one-line
	// origin and source_spec (or origin alone, across specs).
	open := map[markerKey]bool{}
	openOrigin := map[string]bool{}
	for _, e := range m.model {
		if k, ok := m.markers[e.id]; ok && e.state == mOpen {
			open[k] = true
			openOrigin[k.origin] = true
		}
	}
	for i, s := range specs {
		k := markerKey{oneLine(s.Origin), oneLine(s.SourceSpec)}
		if open[k] || s.CrossSpecDedupe && openOrigin[k.origin] {
			if got[i] != "" {
				t.Fatalf("spec %d minted %s, model says it dedupes", i, got[i])
			}
			continue
		}
		m.maxNum++
		want := "DW-" + strconv.Itoa(m.maxNum)
		if got[i] != want {
			t.Fatalf("spec %d minted %q, want %s", i, got[i], want)
		}
		// A title that mentions a higher id raises the next one.
		if ref, ok := strings.CutPrefix(oneLine(s.Title), "see DW-"); ok {
			if r, _ := strconv.Atoi(ref); r > m.maxNum {
				m.maxNum = r
			}
		}
		me := &mEntry{id: want, state: mOpen, seen: map[string]bool{}}
		if s.Status != "open" {
			me.state, me.closeDate = mDone, strings.TrimPrefix(s.Status, "done ")
		} else {
			open[k] = true
			openOrigin[k.origin] = true
		}
		m.model = append(m.model, me)
		m.byID[want] = me
		m.markers[want] = k
	}
	if !strings.HasPrefix(m.tgt.Ledger(t).textString(), before) {
		t.Fatalf("Append changed existing text")
	}
}

// markerKey is the (origin, source_spec) identity an append dedupes on.
type markerKey struct{ origin, spec string }

// MarkDone closes a batch, plainly or reopenably, with one note or per-id notes.
func (m *ledgerMachine) MarkDone(t *rapid.T) {
	ids := m.drawIDs(t, "close ids")
	date := rapid.SampledFrom(smDates).Draw(t, "close date")
	note := rapid.SampledFrom(smNotes).Draw(t, "close note")
	var opts []CloseOption
	var notes map[string]string
	if rapid.Bool().Draw(t, "per-id notes") {
		notes = map[string]string{}
		for _, id := range ids {
			notes[id] = rapid.SampledFrom(smNotes).Draw(t, "note for "+id)
		}
	}
	op := ""
	if rapid.Bool().Draw(t, "reopenable") {
		op = rapid.SampledFrom(smOps).Draw(t, "close op")
		opts = append(opts, Reopenable(op))
	}
	var got []string
	var err error
	if notes != nil {
		got, err = m.tgt.MarkDoneEach(ids, date, notes, opts...)
	} else {
		got, err = m.tgt.MarkDone(ids, date, note, opts...)
	}
	if m.refusesUnknown(t, "MarkDone", ids, err) {
		return
	}
	if err != nil {
		t.Fatalf("MarkDone: %v", err)
	}
	var want []string
	for _, id := range ids {
		e := m.byID[id]
		if e == nil || e.state != mOpen {
			continue
		}
		n := note
		if len(notes) > 0 {
			n = notes[id]
		}
		e.state, e.closeDate = mDone, date
		e.close = &mClose{reopenable: op != "", opID: op, note: n}
		want = append(want, id)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("MarkDone(%v) = %v, model %v", ids, got, want)
	}
}

// refusesUnknown reports whether ids hold an id no entry carries, after
// checking that the call failed with filetxn.ErrNotFound: a typo is not a replay, and
// the call changes nothing.
func (m *ledgerMachine) refusesUnknown(t *rapid.T, op string, ids []string, err error) bool {
	if !slices.ContainsFunc(ids, func(id string) bool { return m.byID[id] == nil }) {
		return false
	}
	if !errors.Is(err, filetxn.ErrNotFound) {
		t.Fatalf("%s(%v) with an unknown id = %v, want filetxn.ErrNotFound", op, ids, err)
	}
	return true
}

// MarkOpen undoes reopenable closes of one operation.
func (m *ledgerMachine) MarkOpen(t *rapid.T) {
	ids := m.drawIDs(t, "reopen ids")
	note := rapid.SampledFrom(smNotes).Draw(t, "reopen note")
	op := rapid.SampledFrom(smOps).Draw(t, "reopen op")
	got, err := m.tgt.MarkOpen(ids, note, op)
	if m.refusesUnknown(t, "MarkOpen", ids, err) {
		return
	}
	if err != nil {
		t.Fatalf("MarkOpen: %v", err)
	}
	var want []string
	for _, id := range ids {
		e := m.byID[id]
		if e == nil || e.state != mDone || e.close == nil || !e.close.reopenable || e.close.blocked ||
			e.close.opID != op || modelNote(e.close.note) != modelNote(note) {
			continue
		}
		e.state, e.closeDate, e.close, e.archived = mOpen, "", nil, false
		want = append(want, id)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("MarkOpen(%v, %q, %s) = %v, model %v", ids, note, op, got, want)
	}
}

// RecordDecision records a decision, sometimes closing, sometimes only on open entries.
func (m *ledgerMachine) RecordDecision(t *rapid.T) {
	ids := m.drawIDs(t, "decision id")
	if len(ids) == 0 {
		t.Skip("no id")
	}
	id := ids[0]
	date := rapid.SampledFrom(smDates).Draw(t, "decision date")
	label := rapid.SampledFrom(smLabels).Draw(t, "label")
	detail := rapid.SampledFrom(append([]string{""}, smNotes...)).Draw(t, "detail")
	var closeNote *string
	closeIt := rapid.Bool().Draw(t, "decision closes")
	if closeIt {
		n := rapid.SampledFrom(smNotes).Draw(t, "decision close note")
		closeNote = &n
	}
	requireOpen := rapid.Bool().Draw(t, "require open")
	got, err := m.tgt.Decide(decision{id, date, label, detail, closeNote, requireOpen})
	e := m.byID[id]
	if !requireOpen && m.refusesUnknown(t, "RecordDecision", ids[:1], err) {
		return
	}
	if err != nil {
		t.Fatalf("RecordDecision: %v", err)
	}
	want := e != nil && !(requireOpen && e.state != mOpen)
	if got != want {
		t.Fatalf("RecordDecision(%s) = %v, model %v", id, got, want)
	}
	if !want {
		return
	}
	e.archived = false
	switch {
	case e.state == mOpen && closeIt:
		e.state, e.closeDate, e.close = mDone, date, &mClose{}
	case e.state == mDone && e.close != nil:
		e.close.blocked = true
	}
}

// MarkSeenAgain records sightings; replays and stale ids are reported apart.
func (m *ledgerMachine) MarkSeenAgain(t *rapid.T) {
	ids := m.drawIDs(t, "seen ids")
	date := rapid.SampledFrom(smDates).Draw(t, "seen date")
	note := rapid.SampledFrom(smNotes).Draw(t, "seen note")
	got, err := m.tgt.MarkSeenAgain(ids, date, note)
	if err != nil {
		t.Fatalf("MarkSeenAgain: %v", err)
	}
	line := date + " (" + oneLine(note) + ")"
	var want []string
	for _, id := range ids {
		if e := m.byID[id]; e != nil && e.state == mOpen && !e.seen[line] {
			e.seen[line] = true
			want = append(want, id)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("MarkSeenAgain(%v) = %v, model %v", ids, got, want)
	}
}

func (m *ledgerMachine) eligible(before string) []string {
	var out []string
	for _, e := range m.model {
		if e.state == mDone && validDate(e.closeDate) && (before == "" || e.closeDate < before) && !e.archived {
			out = append(out, e.id)
		}
	}
	return out
}

// Archive moves eligible closed entries into the archive Doc.
func (m *ledgerMachine) Archive(t *rapid.T) {
	before := rapid.SampledFrom(append([]string{""}, smDates...)).Draw(t, "before")
	stamp := rapid.SampledFrom(smDates).Draw(t, "stamp")
	want := m.eligible(before)
	if dry, _ := m.tgt.Archivable(before); !slices.Equal(dry, want) {
		t.Fatalf("Archivable(%q) = %v, model %v", before, dry, want)
	}
	got, err := m.tgt.Archive(before, stamp)
	if err != nil {
		t.Fatalf("ArchiveInto: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ArchiveInto(%q) = %v, model %v", before, got, want)
	}
	for _, id := range got {
		e := m.byID[id]
		e.archived, e.seen = true, map[string]bool{}
		m.touched[id] = true
	}
	m.blocks = len(mustParse(t, m.tgt.ArchiveText(t)).Entries())
}

// ArchiveAfterCrash runs an archive whose ledger write is lost, then the
// retry: the retry must add nothing to the archive and leave the stubs the lost
// write would have left.
func (m *ledgerMachine) ArchiveAfterCrash(t *rapid.T) {
	before := rapid.SampledFrom(append([]string{""}, smDates...)).Draw(t, "crash before")
	stamp := rapid.SampledFrom(smDates).Draw(t, "crash stamp")
	lost, archive := mustParse(t, m.tgt.Ledger(t).textString()), mustParse(t, m.tgt.ArchiveText(t))
	if _, err := lost.ArchiveInto(archive, before, stamp); err != nil {
		t.Fatalf("ArchiveInto: %v", err)
	}
	m.tgt.CrashArchive(t, before, stamp)
	crashed := m.tgt.ArchiveText(t)
	if crashed != archive.textString() {
		t.Fatalf("archive after the crash = %q, want %q", crashed, archive.textString())
	}
	retryStamp := rapid.SampledFrom(smDates).Draw(t, "retry stamp")
	got, err := m.tgt.Archive(before, retryStamp)
	if err != nil {
		t.Fatalf("retry Archive: %v", err)
	}
	if after := m.tgt.ArchiveText(t); after != crashed {
		t.Fatalf("the retry appended to the archive again: %q", after[len(crashed):])
	}
	if got := m.tgt.Ledger(t).textString(); got != lost.textString() {
		t.Fatalf("the retry left %q, the lost write had %q", got, lost.textString())
	}
	for _, id := range got {
		e := m.byID[id]
		e.archived, e.seen = true, map[string]bool{}
		m.touched[id] = true
	}
}

// ArchiveCrashInCommit crashes an Archive between its two renames (a Doc
// target archives whole): the archive holds the bodies, the ledger is still
// whole, and the next transaction publishes the stubs.
func (m *ledgerMachine) ArchiveCrashInCommit(t *rapid.T) {
	before := rapid.SampledFrom(append([]string{""}, smDates...)).Draw(t, "commit crash before")
	stamp := rapid.SampledFrom(smDates).Draw(t, "commit crash stamp")
	old := m.tgt.Ledger(t).textString()
	want, archive := mustParse(t, old), mustParse(t, m.tgt.ArchiveText(t))
	ids, err := want.ArchiveInto(archive, before, stamp)
	if err != nil {
		t.Fatalf("ArchiveInto: %v", err)
	}
	if crashed := m.tgt.CrashArchiveCommit(t, before, stamp); crashed {
		if got := m.tgt.Ledger(t).textString(); got != old {
			t.Fatalf("ledger after a crash between the renames = %q, want it whole %q", got, old)
		}
	}
	if got := m.tgt.ArchiveText(t); got != archive.textString() {
		t.Fatalf("archive after a crash between the renames = %q, want %q", got, archive.textString())
	}
	m.tgt.Settle(t)
	if got := m.tgt.Ledger(t).textString(); got != want.textString() {
		t.Fatalf("ledger after the next transaction = %q, want the crashed commit's %q", got, want.textString())
	}
	for _, id := range ids {
		e := m.byID[id]
		e.archived, e.seen = true, map[string]bool{}
		m.touched[id] = true
	}
}

// Reopen drops every in-memory value and reads the ledger again (for a Doc:
// encode it and decode the bytes).
func (m *ledgerMachine) Reopen(t *rapid.T) {
	before := m.tgt.Ledger(t).textString()
	m.tgt.Reopen(t)
	if m.tgt.Ledger(t).textString() != before {
		t.Fatalf("Reopen changed the text")
	}
}

// prose returns the non-blank stretches of text outside the entries.
func prose(d *Doc) []string {
	out := []string{}
	at := 0
	add := func(s string) {
		if s = trimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	for _, e := range d.Entries() {
		add(d.textString()[at:e.start])
		at = e.end
	}
	add(d.textString()[at:])
	return out
}

// Check verifies the invariants.
func (m *ledgerMachine) Check(t *rapid.T) {
	doc := m.tgt.Ledger(t)
	es := doc.Entries()
	// 1. Ids are unique and the entries are the model's, in order.
	if len(doc.duplicates()) != 0 {
		t.Fatalf("duplicate ids: %v", doc.duplicates())
	}
	if len(es) != len(m.model) {
		t.Fatalf("%d entries, model has %d: %v", len(es), len(m.model), ids(doc))
	}
	for i, e := range es {
		me := m.model[i]
		if e.ID != me.id {
			t.Fatalf("entry %d is %s, model %s", i, e.ID, me.id)
		}
		// 2. Every status matches the model.
		state := mMalformed
		switch {
		case e.Open():
			state = mOpen
		case e.Done():
			state = mDone
		}
		if state != me.state || state == mDone && e.closeDate() != me.closeDate {
			t.Fatalf("%s status %q, model state %d closed %q", e.ID, e.Status, me.state, me.closeDate)
		}
	}
	// 3. Appended ids increase: the next id is one past the highest number.
	if got, want := doc.nextID(), "DW-"+strconv.Itoa(m.maxNum+1); got != want {
		t.Fatalf("NextID() = %s, model %s", got, want)
	}
	// 4. Entries the last action did not touch are byte-identical.
	bodies := make(map[string]string, len(es))
	for _, e := range es {
		bodies[e.ID] = strings.TrimRight(e.Body, "\n")
		if prev, ok := m.prevBodies[e.ID]; ok && !m.touched[e.ID] && prev != bodies[e.ID] {
			t.Fatalf("untouched %s changed:\n%q\n%q", e.ID, prev, bodies[e.ID])
		}
	}
	// 5. Text outside the entries never changes.
	p := prose(doc)
	if m.prevProse != nil && !slices.Equal(p, m.prevProse) {
		t.Fatalf("prose changed: %q, was %q", p, m.prevProse)
	}
	// 6. The text reads back as the same entries.
	again := mustParse(t, doc.textString())
	if !slices.EqualFunc(again.Entries(), es, func(a, b Entry) bool { return a == b }) {
		t.Fatalf("a fresh parse disagrees with the Doc")
	}
	// 7. The archive holds a block for every entry ever archived, and no stub.
	archive := mustParse(t, m.tgt.ArchiveText(t))
	if n := len(archive.Entries()); n < m.blocks {
		t.Fatalf("archive lost blocks: %d < %d", n, m.blocks)
	}
	m.blocks = len(archive.Entries())
	for _, e := range archive.Entries() {
		if isStub(e.Body) {
			t.Fatalf("archive holds a stub: %q", e.Body)
		}
	}
	m.prevBodies, m.prevProse, m.touched = bodies, p, map[string]bool{}
}

// TestLedgerStateMachine runs the machine on a Doc in memory.
func TestLedgerStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &ledgerMachine{}
		m.init(t, newDocTarget)
		t.Repeat(rapid.StateMachineActions(m))
	})
}

// TestLedgerStoreStateMachine runs the same machine on a Store on disk, each
// operation through its convenience method; Reopen opens a new Store.
func TestLedgerStoreStateMachine(t *testing.T) {
	root := t.TempDir()
	var n atomic.Int64
	rapid.Check(t, func(rt *rapid.T) {
		m := &ledgerMachine{}
		m.init(rt, func(rt *rapid.T, seed string) target {
			return newStoreTarget(rt, filepath.Join(root, strconv.FormatInt(n.Add(1), 10)), seed)
		})
		rt.Repeat(rapid.StateMachineActions(m))
	})
}

// target is what the machine drives: a Doc with its archive Doc, or a Store.
type target interface {
	Ledger(t *rapid.T) *Doc
	ArchiveText(t *rapid.T) string
	Append(specs ...Spec) ([]string, error)
	MarkDone(ids []string, date, note string, opts ...CloseOption) ([]string, error)
	MarkDoneEach(ids []string, date string, notes map[string]string, opts ...CloseOption) ([]string, error) // one note per id, in one batch
	MarkOpen(ids []string, note, op string) ([]string, error)
	Decide(dec decision) (bool, error)
	MarkSeenAgain(ids []string, date, note string) ([]string, error)
	Archivable(before string) ([]string, error)
	Archive(before, stamp string) ([]string, error)
	CrashArchive(t *rapid.T, before, stamp string) // an older version's archive whose ledger write was lost
	// CrashArchiveCommit is an archive whose process dies between its two
	// renames; crashed reports that it did die there.
	CrashArchiveCommit(t *rapid.T, before, stamp string) (crashed bool)
	Settle(t *rapid.T) // the next transaction on the ledger, which changes nothing itself
	Reopen(t *rapid.T)
}

// decision is a RecordDecision, then, when closeNote is not nil, a MarkDone
// with that note, in one batch; with requireOpen, nothing unless the entry is
// open.
type decision struct {
	id, date, label, detail string
	closeNote               *string
	requireOpen             bool
}

// apply runs the decision on d and reports whether the decision line was
// written.
func (dec decision) apply(d *Doc) (bool, error) {
	if dec.requireOpen {
		if e, ok := d.Entry(dec.id); !ok || !e.Open() {
			return false, nil
		}
	}
	if err := d.RecordDecision(dec.id, dec.date, dec.label, dec.detail); err != nil {
		return false, err
	}
	if dec.closeNote != nil {
		if _, err := d.MarkDone([]string{dec.id}, dec.date, *dec.closeNote); err != nil {
			return false, err
		}
	}
	return true, nil
}

// markDoneEach closes each id with its own note, one MarkDone per id.
func markDoneEach(d *Doc, ids []string, date string, notes map[string]string, opts ...CloseOption) ([]string, error) {
	for _, id := range ids {
		if _, ok := d.Entry(id); !ok {
			return nil, fmt.Errorf("%w: %v", filetxn.ErrNotFound, id) // before any close, as one MarkDone
		}
	}
	var closed []string
	for _, id := range ids {
		got, err := d.MarkDone([]string{id}, date, notes[id], opts...)
		if err != nil {
			return nil, err
		}
		closed = append(closed, got...)
	}
	return closed, nil
}

type docTarget struct {
	*Doc
	archive *Doc
}

func newDocTarget(t *rapid.T, seed string) target {
	d, err := Parse([]byte(seed))
	if err != nil {
		t.Fatal(err)
	}
	return &docTarget{d, mustParse(t, "")}
}

func (d *docTarget) Ledger(*rapid.T) *Doc              { return d.Doc }
func (d *docTarget) Decide(dec decision) (bool, error) { return dec.apply(d.Doc) }
func (d *docTarget) MarkDoneEach(ids []string, date string, notes map[string]string, opts ...CloseOption) ([]string, error) {
	return markDoneEach(d.Doc, ids, date, notes, opts...)
}
func (d *docTarget) ArchiveText(*rapid.T) string { return d.archive.textString() }
func (d *docTarget) Archive(before, stamp string) ([]string, error) {
	return d.Doc.ArchiveInto(d.archive, before, stamp)
}
func (d *docTarget) CrashArchive(t *rapid.T, before, stamp string) {
	lost := mustParse(t, d.Doc.textString())
	if _, err := lost.ArchiveInto(d.archive, before, stamp); err != nil {
		t.Fatal(err)
	}
}
func (d *docTarget) CrashArchiveCommit(t *rapid.T, before, stamp string) bool {
	if _, err := d.Doc.ArchiveInto(d.archive, before, stamp); err != nil {
		t.Fatal(err)
	}
	return false
}
func (d *docTarget) Settle(*rapid.T) {}
func (d *docTarget) Reopen(t *rapid.T) {
	doc, err := Parse(d.Doc.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	a, err := new(codec).Decode(d.archive.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	d.Doc, d.archive = doc, a
}

type storeTarget struct {
	s   *Store
	dir string
	ctx context.Context
}

func newStoreTarget(t *rapid.T, dir, seed string) target {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	st := &storeTarget{dir: dir, ctx: context.Background()}
	st.Reopen(t)
	if seed != "" {
		if err := os.WriteFile(st.s.path, []byte(seed), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func (s *storeTarget) Ledger(t *rapid.T) *Doc {
	d, err := s.s.View(s.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
func (s *storeTarget) ArchiveText(t *rapid.T) string {
	b, err := os.ReadFile(s.s.archive)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}
func (s *storeTarget) Append(specs ...Spec) ([]string, error) { return s.s.Append(s.ctx, specs...) }

// mutate runs fn in one Store.Mutate and returns what its last run returned.
func mutate[T any](s *storeTarget, fn func(*Doc) (T, error)) (T, error) {
	var got T
	_, err := s.s.Mutate(s.ctx, func(d *Doc) (err error) {
		got, err = fn(d)
		return err
	})
	return got, err
}

func (s *storeTarget) MarkDone(ids []string, date, note string, opts ...CloseOption) ([]string, error) {
	return mutate(s, func(d *Doc) ([]string, error) { return d.MarkDone(ids, date, note, opts...) })
}
func (s *storeTarget) MarkDoneEach(ids []string, date string, notes map[string]string, opts ...CloseOption) ([]string, error) {
	return mutate(s, func(d *Doc) ([]string, error) { return markDoneEach(d, ids, date, notes, opts...) })
}
func (s *storeTarget) MarkOpen(ids []string, note, op string) ([]string, error) {
	return mutate(s, func(d *Doc) ([]string, error) { return d.MarkOpen(ids, note, op) })
}
func (s *storeTarget) Decide(dec decision) (bool, error) {
	return mutate(s, dec.apply)
}
func (s *storeTarget) MarkSeenAgain(ids []string, date, note string) ([]string, error) {
	return mutate(s, func(d *Doc) ([]string, error) { return d.MarkSeenAgain(ids, date, note) })
}
func (s *storeTarget) Archivable(before string) ([]string, error) {
	return archivable(s.ctx, s.s, before)
}
func (s *storeTarget) Archive(before, stamp string) ([]string, error) {
	return s.s.Archive(s.ctx, before, stamp)
}

type crash struct{}

// CrashArchive leaves what an older version's Archive left when it died
// between its two writes: the archive written, the ledger not.
func (s *storeTarget) CrashArchive(t *rapid.T, before, stamp string) {
	lost, archive := s.Ledger(t), mustParse(t, s.ArchiveText(t))
	if _, err := lost.ArchiveInto(archive, before, stamp); err != nil {
		t.Fatal(err)
	}
	if archive.changed() {
		if err := os.WriteFile(s.s.archive, archive.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// CrashArchiveCommit panics out of an Archive right after its first rename
// (the archive's): the lock is released, the intent record and the
// ledger's staged file are left, as a crash there leaves them.
func (s *storeTarget) CrashArchiveCommit(t *rapid.T, before, stamp string) (crashed bool) {
	remove := seam.Set(t, func(p seam.Point, path string) error {
		if p == seam.Published && path == s.s.archive {
			panic(crash{})
		}
		return nil
	})
	defer func() {
		remove()
		if r := recover(); r != nil {
			if r != (crash{}) {
				panic(r)
			}
			crashed = true
		}
	}()
	if _, err := s.s.Archive(s.ctx, before, stamp); err != nil {
		t.Fatal(err)
	}
	return false
}

func (s *storeTarget) Settle(t *rapid.T) {
	if c, err := s.s.Mutate(s.ctx, func(*Doc) error { return nil }); err != nil || c.Written {
		t.Fatalf("Mutate(nothing) = %+v, %v", c, err)
	}
}
func (s *storeTarget) Reopen(*rapid.T) {
	s.s = must(Open(filepath.Join(s.dir, "deferred-work.md"), filetxn.WithStateRoot(filepath.Join(s.dir, "state")), filetxn.WithoutSync()))
}

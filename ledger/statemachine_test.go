package ledger

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

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
	doc     *Doc
	archive *Doc
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

func (m *ledgerMachine) init(t *rapid.T) {
	seed := rapid.SampledFrom(smSeeds).Draw(t, "seed")
	d, err := Parse([]byte(seed))
	if err != nil {
		t.Fatal(err)
	}
	m.doc, m.archive = d, mustParse(t, "")
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
			me.state, me.closeDate = mDone, e.CloseDate()
		}
		m.model = append(m.model, me)
		m.byID[e.ID] = me
	}
	m.maxNum = int(d.NextSeq()) - 1
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
	before := m.doc.String()
	got, err := m.doc.Append(specs...)
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
	if !strings.HasPrefix(m.doc.String(), before) {
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
	notes := map[string]string{}
	if rapid.Bool().Draw(t, "per-id notes") {
		for _, id := range ids {
			notes[id] = rapid.SampledFrom(smNotes).Draw(t, "note for "+id)
		}
		opts = append(opts, WithNotes(notes))
	}
	op := ""
	if rapid.Bool().Draw(t, "reopenable") {
		op = rapid.SampledFrom(smOps).Draw(t, "close op")
		opts = append(opts, Reopenable(op))
	}
	got, err := m.doc.MarkDone(ids, date, note, opts...)
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

// MarkOpen undoes reopenable closes of one operation.
func (m *ledgerMachine) MarkOpen(t *rapid.T) {
	ids := m.drawIDs(t, "reopen ids")
	note := rapid.SampledFrom(smNotes).Draw(t, "reopen note")
	op := rapid.SampledFrom(smOps).Draw(t, "reopen op")
	got, err := m.doc.MarkOpen(ids, note, op)
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
	var opts []DecisionOption
	closeIt := rapid.Bool().Draw(t, "decision closes")
	if closeIt {
		opts = append(opts, CloseWith(rapid.SampledFrom(smNotes).Draw(t, "decision close note")))
	}
	requireOpen := rapid.Bool().Draw(t, "require open")
	if requireOpen {
		opts = append(opts, RequireOpen())
	}
	got, err := m.doc.RecordDecision(id, date, label, detail, opts...)
	if err != nil {
		t.Fatalf("RecordDecision: %v", err)
	}
	e := m.byID[id]
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
	got, err := m.doc.MarkSeenAgain(ids, date, note)
	if err != nil {
		t.Fatalf("MarkSeenAgain: %v", err)
	}
	line := date + " (" + oneLine(note) + ")"
	applied := make([]bool, len(ids))
	var stale []string
	for i, id := range ids {
		e := m.byID[id]
		if e == nil || e.state != mOpen {
			stale = append(stale, id)
			continue
		}
		if !e.seen[line] {
			e.seen[line] = true
			applied[i] = true
		}
	}
	if !slices.Equal(got.Applied, applied) || !slices.Equal(got.Stale, stale) {
		t.Fatalf("MarkSeenAgain(%v) = %+v, model %v %v", ids, got, applied, stale)
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
	if dry, _ := m.doc.Archivable(before); !slices.Equal(dry, want) {
		t.Fatalf("Archivable(%q) = %v, model %v", before, dry, want)
	}
	got, err := m.doc.ArchiveInto(m.archive, before, stamp)
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
	m.blocks = len(m.archive.Entries())
}

// ArchiveAfterCrash runs an archive whose ledger write is lost, then the
// retry: the retry must add nothing to the archive and leave the stubs the lost
// write would have left.
func (m *ledgerMachine) ArchiveAfterCrash(t *rapid.T) {
	before := rapid.SampledFrom(append([]string{""}, smDates...)).Draw(t, "crash before")
	stamp := rapid.SampledFrom(smDates).Draw(t, "crash stamp")
	lost, archive := mustParse(t, m.doc.String()), mustParse(t, m.archive.String())
	if _, err := lost.ArchiveInto(archive, before, stamp); err != nil {
		t.Fatalf("ArchiveInto: %v", err)
	}
	crashed := archive.String()
	retryStamp := rapid.SampledFrom(smDates).Draw(t, "retry stamp")
	got, err := m.doc.ArchiveInto(archive, before, retryStamp)
	if err != nil {
		t.Fatalf("retry ArchiveInto: %v", err)
	}
	if archive.String() != crashed {
		t.Fatalf("the retry appended to the archive again: %q", archive.String()[len(crashed):])
	}
	if m.doc.String() != lost.String() {
		t.Fatalf("the retry left %q, the lost write had %q", m.doc.String(), lost.String())
	}
	m.archive = archive
	for _, id := range got {
		e := m.byID[id]
		e.archived, e.seen = true, map[string]bool{}
		m.touched[id] = true
	}
}

// Reparse encodes the Doc and decodes it again, dropping every in-memory value.
func (m *ledgerMachine) Reparse(t *rapid.T) {
	d, err := Parse(m.doc.Bytes())
	if err != nil {
		t.Fatalf("Parse(Bytes()): %v", err)
	}
	if d.String() != m.doc.String() {
		t.Fatalf("Reparse changed the text")
	}
	m.doc = d
	a, err := (Codec{}).Decode(m.archive.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	m.archive = a
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
		add(d.String()[at:e.Start])
		at = e.End
	}
	add(d.String()[at:])
	return out
}

// Check verifies the invariants.
func (m *ledgerMachine) Check(t *rapid.T) {
	es := m.doc.Entries()
	// 1. Ids are unique and the entries are the model's, in order.
	if len(m.doc.Duplicates()) != 0 {
		t.Fatalf("duplicate ids: %v", m.doc.Duplicates())
	}
	if len(es) != len(m.model) {
		t.Fatalf("%d entries, model has %d: %v", len(es), len(m.model), ids(m.doc))
	}
	var open []string
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
			open = append(open, e.ID)
		case e.Done():
			state = mDone
		}
		if state != me.state || state == mDone && e.CloseDate() != me.closeDate {
			t.Fatalf("%s status %q, model state %d closed %q", e.ID, e.Status, me.state, me.closeDate)
		}
	}
	// 3. Appended ids increase: the next id is one past the highest number.
	if got, want := m.doc.NextID(), "DW-"+strconv.Itoa(m.maxNum+1); got != want {
		t.Fatalf("NextID() = %s, model %s", got, want)
	}
	// 4. OpenIDs agrees with the entries.
	if got := m.doc.OpenIDs(); !slices.Equal(got, open) {
		t.Fatalf("OpenIDs() = %v, entries say %v", got, open)
	}
	// 5. Entries the last action did not touch are byte-identical.
	bodies := make(map[string]string, len(es))
	for _, e := range es {
		bodies[e.ID] = strings.TrimRight(e.Body, "\n")
		if prev, ok := m.prevBodies[e.ID]; ok && !m.touched[e.ID] && prev != bodies[e.ID] {
			t.Fatalf("untouched %s changed:\n%q\n%q", e.ID, prev, bodies[e.ID])
		}
	}
	// 6. Text outside the entries never changes.
	p := prose(m.doc)
	if m.prevProse != nil && !slices.Equal(p, m.prevProse) {
		t.Fatalf("prose changed: %q, was %q", p, m.prevProse)
	}
	// 7. The text reads back as the same entries.
	again := mustParse(t, m.doc.String())
	if !slices.EqualFunc(again.Entries(), es, func(a, b Entry) bool { return a == b }) {
		t.Fatalf("a fresh parse disagrees with the Doc")
	}
	// 8. The archive holds a block for every entry ever archived, and no stub.
	if n := len(m.archive.Entries()); n < m.blocks {
		t.Fatalf("archive lost blocks: %d < %d", n, m.blocks)
	}
	m.blocks = len(m.archive.Entries())
	for _, e := range m.archive.Entries() {
		if isStub(e.Body) {
			t.Fatalf("archive holds a stub: %q", e.Body)
		}
	}
	m.prevBodies, m.prevProse, m.touched = bodies, p, map[string]bool{}
}

func TestLedgerStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &ledgerMachine{}
		m.init(t)
		t.Repeat(rapid.StateMachineActions(m))
	})
}

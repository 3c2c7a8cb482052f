package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Every operation below is a fold: each id or spec is applied to the text the
// previous one produced, so a batch is byte for byte the same as the serial
// sequence of single calls. Arguments are validated before the text is
// touched; an invalid argument or a duplicated id changes nothing.

// Spec describes one entry for [Doc.Append].
type Spec struct {
	Title      string
	Origin     string // with SourceSpec, the identity used to skip an append an open entry already covers
	SourceSpec string // written in backticks
	Reason     string
	Location   string // "" means "n/a"
	Status     string // "" means "open"; otherwise exactly "open" or "done YYYY-MM-DD"
	Severity   string // "" for none, or critical, high, medium, low

	// CrossSpecDedupe makes an open entry with the same origin alone enough
	// to skip the append, whatever its source_spec.
	CrossSpecDedupe bool
}

// Append adds one canonical entry per spec at the end of the ledger and
// returns the minted ids, one per spec, with "" where the spec was skipped
// because an open entry already carries its origin and source_spec lines
// (entries that are done do not count: the work came back). Each minted id is
// one past the highest DW-<n> anywhere in the text, including the entries this
// call just added.
//
// Free text is made one line (line breaks collapse to a space) and a title
// that is blank after that becomes "(untitled DW-<n>)". All specs are validated
// first: a spec with neither Origin nor SourceSpec (it would have no identity
// to be found by, so every later one would be skipped as its duplicate) or
// with a bad status or severity returns an error wrapping
// filetxn.ErrInvalidArgument, naming the spec's field and value, and appends
// nothing.
func (d *Doc) Append(specs ...Spec) ([]string, error) {
	if err := validateSpecs(specs); err != nil {
		return nil, err
	}
	ids := make([]string, len(specs))
	// Each spec searches the text for its origin. A Doc that has searched
	// for many (a large batch, or a group commit's one Append per caller on
	// one Doc) looks them up in an index of its origin lines instead (see
	// mayHaveOrigin), and searches only the text added since it was built.
	d.searched += len(specs)
	for i, s := range specs {
		ids[i] = d.append1(s)
	}
	return ids, nil
}

// originIndexAfter is how many searches for an origin a Doc makes before
// it keeps an index of its origin lines (see mayHaveOrigin).
const originIndexAfter = 16

func validateSpecs(specs []Spec) error {
	for i, s := range specs {
		if s.Origin == "" && s.SourceSpec == "" {
			return invalidArg("Append", "specs["+strconv.Itoa(i)+"].Origin", "", wantIdentity)
		}
		if s.Status != "" && !canonicalStatus(s.Status) {
			return invalidArg("Append", "specs["+strconv.Itoa(i)+"].Status", s.Status, wantStatus)
		}
		if s.Severity != "" && !canonicalSeverity(s.Severity) {
			return invalidArg("Append", "specs["+strconv.Itoa(i)+"].Severity", s.Severity, wantSeverity)
		}
	}
	return nil
}

func checkDate(op, field, date string) error {
	if !validDate(date) {
		return invalidArg(op, field, date, wantDate)
	}
	return nil
}

// append1 appends one spec as Append does.
func (d *Doc) append1(s Spec) string {
	f := specFields(s)
	if d.covered(f.origin, f.sourceSpec, s.CrossSpecDedupe) {
		return ""
	}
	id := d.nextID()
	d.appendText(f.entry(d.text, id))
	return id
}

// fields are a Spec's values as an appended entry writes them.
type fields struct {
	title, origin, sourceSpec, reason, location, status, severity string
}

// specFields applies bmad-loop's value hygiene and defaults to s.
func specFields(s Spec) fields {
	f := fields{
		title:      oneLine(s.Title),
		origin:     oneLine(s.Origin),
		sourceSpec: oneLine(s.SourceSpec),
		reason:     oneLine(s.Reason),
		location:   "n/a",
		status:     s.Status,
		severity:   s.Severity,
	}
	if s.Location != "" {
		f.location = oneLine(s.Location)
	}
	if f.status == "" {
		f.status = "open"
	}
	return f
}

// entry returns the text that appending the entry id to text adds: the
// separator that leaves one blank line before the heading, then the entry.
func (f fields) entry(text []byte, id string) string {
	title := f.title
	if trimSpace(title) == "" {
		title = "(untitled " + id + ")"
	}
	var b strings.Builder
	b.Grow(len(title) + len(f.origin) + len(f.sourceSpec) + len(f.reason) + len(f.location) + 96)
	b.WriteString(separator(text))
	b.WriteString("### " + id + ": " + title + "\n")
	b.WriteString("origin: " + f.origin + "\n")
	b.WriteString("location: " + f.location + "\n")
	b.WriteString("source_spec: `" + f.sourceSpec + "`\n")
	if f.severity != "" {
		b.WriteString("severity: " + f.severity + "\n")
	}
	b.WriteString("reason: " + f.reason + "\n")
	b.WriteString("status: " + f.status + "\n")
	return b.String()
}

// covered reports whether an open entry has an origin line for origin and
// (unless cross) a source_spec line for sourceSpec. The lines are matched
// anywhere in the entry's body, fenced or not, as bmad-loop does.
func (d *Doc) covered(origin, sourceSpec string, cross bool) bool {
	// Most appends carry an origin no line of the ledger has: answer those
	// without parsing.
	if !d.mayHaveOrigin(origin) || !fieldLinePresent(d.textString(), "origin", origin) {
		return false
	}
	p := d.parsed()
	for i := range p.entries {
		e := &p.entries[i]
		if !e.open() {
			continue
		}
		body := p.body(e)
		if fieldLinePresent(body, "origin", origin) && (cross || fieldLinePresent(body, "source_spec", sourceSpec)) {
			return true
		}
	}
	return false
}

// fieldLinePresent reports whether body has a line matching
// ^<field>:[ \t]*`?<value>`?[ \t]*$ with value taken literally.
func fieldLinePresent(body, field, value string) bool {
	if !strings.Contains(body, value) {
		return false
	}
	key := field + ":"
	for at := 0; ; {
		var i int
		if at == 0 && strings.HasPrefix(body, key) {
			i = 0
		} else if i = strings.Index(body[at:], "\n"+key); i < 0 {
			return false
		} else {
			i += at + 1
		}
		at = i + len(key)
		rest := body[at:]
		if j := strings.IndexByte(rest, '\n'); j >= 0 {
			rest = rest[:j]
		}
		if fieldValueMatches(rest, value) {
			return true
		}
	}
}

// fieldValueMatches reports whether r matches [ \t]*`?<v>`?[ \t]*, trying
// every split a backtracking matcher would.
func fieldValueMatches(r, v string) bool {
	blanks := func(s string) int {
		i := 0
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		return i
	}
	lead := blanks(r)
	for k := 0; k <= lead; k++ {
		for _, tick := range [...]bool{true, false} {
			s := r[k:]
			if tick {
				if len(s) == 0 || s[0] != '`' {
					continue
				}
				s = s[1:]
			}
			if !strings.HasPrefix(s, v) {
				continue
			}
			t := s[len(v):]
			if blanks(t) == len(t) || len(t) > 0 && t[0] == '`' && blanks(t[1:]) == len(t)-1 {
				return true
			}
		}
	}
	return false
}

// CloseOption configures [Doc.MarkDone].
type CloseOption func(*closeOptions)

type closeOptions struct {
	opID       string
	reopenable bool
	digest     string // sha256 of opID, once validated
}

// Reopenable makes the close undoable by [Doc.MarkOpen] with the same
// operation id: a resolution-undo line recording sha256(operationID), the date
// and the original status line (hex) is written under the resolution. The id
// must be stable across a crash and a replay (for example a run id and a task),
// never random.
func Reopenable(operationID string) CloseOption {
	return func(o *closeOptions) { o.opID, o.reopenable = operationID, true }
}

// MarkDone closes the open entries among ids: each status line becomes
// "status: done <date>" with "resolution: <note>" directly under it. It
// returns the ids actually closed, in the order given; an id that is not
// open, or already closed earlier in the batch, is skipped, so a repeated
// call changes nothing. A reopenable close also skips an entry whose status
// line holds a line-break character such as U+2028. To give each id its own
// note, call MarkDone once per id: a batch is byte for byte the serial calls.
//
// Errors (nothing is changed): an error wrapping filetxn.ErrInvalidArgument
// for a date that is not a real YYYY-MM-DD or an empty operation id; a
// *filetxn.FormatError keyed by the id when an id names several entries; an
// error wrapping filetxn.ErrNotFound, naming them, when ids no entry carries
// are among ids (a typo is not a replay). To close the ids a ledger has and
// report the others, look each up with [Doc.Entry] first: an id it does not
// find is unknown, and [Entry.Done] tells one closed already.
func (d *Doc) MarkDone(ids []string, date, note string, opts ...CloseOption) ([]string, error) {
	o, err := closeConfig(date, opts)
	if err != nil {
		return nil, err
	}
	if err := d.checkIDs(ids...); err != nil {
		return nil, err
	}
	// Each id edits only its own entry and no edit changes how the text
	// splits into entries, so the fold is computed as edits on one parse,
	// applied together: the same bytes as one edit and one parse per id. A
	// repeated id finds its entry closed already and is skipped.
	var done []string
	var edits []edit
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if ed, ok := d.doneEdit(id, date, note, o.digest); ok {
			edits = append(edits, ed)
			done = append(done, id)
		}
	}
	d.applyEdits(edits)
	return done, nil
}

// closeConfig applies and validates MarkDone's arguments.
func closeConfig(date string, opts []CloseOption) (closeOptions, error) {
	var o closeOptions
	for _, opt := range opts {
		opt(&o)
	}
	if err := checkDate("MarkDone", "date", date); err != nil {
		return o, err
	}
	if o.reopenable {
		if o.opID == "" {
			return o, invalidArg("MarkDone", "operation id", o.opID, wantOperationID)
		}
		o.digest = operationDigest(o.opID)
	}
	return o, nil
}

// checkIDs refuses ids that several entries carry (a *filetxn.FormatError)
// or that no entry carries (filetxn.ErrNotFound, naming each once, in
// order).
func (d *Doc) checkIDs(ids ...string) error {
	if err := d.checkDups(ids...); err != nil {
		return err
	}
	p := d.parsed()
	var unknown []string
	for _, id := range ids {
		if p.find(id) == nil && !slices.Contains(unknown, id) {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		return notFound(unknown)
	}
	return nil
}

func (d *Doc) checkDups(ids ...string) error {
	p := d.parsed()
	if len(p.dups) == 0 {
		return nil
	}
	for _, id := range ids {
		if err := p.dupErr(id); err != nil {
			return err
		}
	}
	return nil
}

func operationDigest(opID string) string {
	sum := sha256.Sum256([]byte(opID))
	return hex.EncodeToString(sum[:])
}

// edit replaces text[beg:end] with with.
type edit struct {
	beg, end int
	with     string
}

// applyEdits applies non-overlapping edits, in any order, in one pass.
func (d *Doc) applyEdits(edits []edit) {
	if len(edits) == 0 {
		return
	}
	slices.SortFunc(edits, func(a, b edit) int { return a.beg - b.beg })
	n := len(d.text)
	for _, e := range edits {
		n += len(e.with) - (e.end - e.beg)
	}
	b := make([]byte, 0, n+room(n))
	at := 0
	for _, e := range edits {
		b = append(append(b, d.text[at:e.beg]...), e.with...)
		at = e.end
	}
	d.replace(append(b, d.text[at:]...))
}

// doneEdit returns the edit that closes the first entry with id, if it is
// open; digest non-empty makes the close reopenable.
func (d *Doc) doneEdit(id, date, note, digest string) (edit, bool) {
	note = oneLine(note)
	e := d.parsed().find(id)
	if e == nil || !e.open() {
		return edit{}, false
	}
	prev := d.textString()[e.statusBeg:e.statusEnd]
	if digest != "" && strings.ContainsFunc(prev, isLineBreak) {
		return edit{}, false
	}
	with := "status: done " + date + "\nresolution: " + note
	if digest != "" {
		with += "\nresolution-undo: " + digest + " " + date + " " + hex.EncodeToString([]byte(prev))
	}
	return edit{e.statusBeg, e.statusEnd, with}, true
}

// insertEdit inserts "\n"+line just before the status line's newline, or,
// for an entry without a status line, after the body's last non-whitespace
// character, but never inside the heading line: a heading whose title is
// blank ("### DW-1:  ") would otherwise lose the blanks that make it one.
func (d *Doc) insertEdit(e *entry, line string) edit {
	pos := e.statusEnd
	if e.statusLn < 0 {
		pos = e.start + len(trimRightSpace(d.textString()[e.start:e.end]))
		pos = max(pos, e.start+len(d.parsed().line(e.line)))
	}
	return edit{pos, pos, "\n" + line}
}

// undoTail matches, right after a status line, the resolution and
// resolution-undo lines a reopenable close writes.
var undoTail = regexp.MustCompile(`^\nresolution:[ \t]*(.*)\nresolution-undo:[ \t]*([0-9a-f]{64})[ \t]+([0-9]{4}-[0-9]{2}-[0-9]{2})[ \t]+([0-9a-f]+)(?m:$)`)

// MarkOpen undoes the closes that [Doc.MarkDone] wrote with [Reopenable] and
// the same operation id and note, restoring each original status line
// character for character. It returns the ids reopened, in the order given.
// An id is skipped, and its bytes left alone, unless its entry is closed with a
// canonical "done <date>" status line directly followed by this operation's
// resolution and resolution-undo lines (a line in between, another operation's
// digest, a plain close, a different note or a tampered date all refuse). Live
// "archived:" lines of a reopened entry become "archived-body:", so the entry
// reads as live but still points at its archived body.
//
// Errors (nothing is changed): an error wrapping filetxn.ErrInvalidArgument
// for an empty operation id, a *filetxn.FormatError keyed by the id when an
// id names several entries, an error wrapping filetxn.ErrNotFound naming the
// ids no entry carries.
func (d *Doc) MarkOpen(ids []string, note, operationID string) ([]string, error) {
	if err := checkOperationID(operationID); err != nil {
		return nil, err
	}
	if err := d.checkIDs(ids...); err != nil {
		return nil, err
	}
	digest := operationDigest(operationID)
	want := trimSpace(oneLine(note))
	// As in MarkDone, the fold is computed as edits on one parse; a repeated
	// id finds its entry reopened already and is skipped.
	var opened []string
	var edits []edit
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if eds := d.openEdits(id, want, digest); eds != nil {
			edits = append(edits, eds...)
			opened = append(opened, id)
		}
	}
	d.applyEdits(edits)
	return opened, nil
}

func checkOperationID(operationID string) error {
	if operationID == "" {
		return invalidArg("MarkOpen", "operation id", operationID, wantOperationID)
	}
	return nil
}

// openEdits returns the edits that undo this operation's close of the first
// entry with id, or nil when it is not eligible.
func (d *Doc) openEdits(id, note, digest string) []edit {
	p := d.parsed()
	e := p.find(id)
	if e == nil || e.open() || e.statusLn < 0 || !canonicalStatus(e.status) {
		return nil
	}
	text := p.text
	m := undoTail.FindStringSubmatchIndex(text[e.statusEnd:e.end])
	if m == nil {
		return nil
	}
	g := func(i int) string { return text[e.statusEnd+m[2*i] : e.statusEnd+m[2*i+1]] }
	if trimSpace(g(1)) != note || g(2) != digest {
		return nil
	}
	if text[e.statusBeg:e.statusEnd] != "status: done "+g(3) {
		return nil
	}
	raw, err := hex.DecodeString(g(4))
	prev := string(raw)
	if err != nil || !utf8.ValidString(prev) || strings.ContainsFunc(prev, isLineBreak) {
		return nil
	}
	v, ok := strings.CutPrefix(prev, "status:")
	if !ok || firstField(v) != "open" {
		return nil
	}
	// The status line and its tail become the original status line, and every
	// live archived: line is renamed. No archived: line starts inside the tail.
	edits := []edit{{e.statusBeg, e.statusEnd + m[1], prev}}
	for k := e.line + 1; k < e.endLine; k++ {
		if !p.fenced[k] && strings.HasPrefix(p.line(k), "archived:") {
			at := p.starts[k] + len("archived")
			edits = append(edits, edit{at, at, "-body"})
		}
	}
	return edits
}

// RecordDecision writes "decision: <date> <label> — <detail>" under the
// entry's status line (" — <detail>" is left out when the detail is empty),
// whether the entry is open or done: a decision is a record, not a status
// change. To decide and close in one write, call [Doc.MarkDone] after it on
// the same Doc: the resolution line then stays adjacent to the status line.
//
// Errors (nothing is changed): an error wrapping filetxn.ErrInvalidArgument
// for a bad date, a *filetxn.FormatError keyed by the id when the id names
// several entries, an error wrapping filetxn.ErrNotFound naming the id when
// no entry carries it.
func (d *Doc) RecordDecision(id, date, label, detail string) error {
	if err := checkDate("RecordDecision", "date", date); err != nil {
		return err
	}
	if err := d.checkIDs(id); err != nil {
		return err
	}
	line := "decision: " + date + " " + oneLine(label)
	if detail = oneLine(detail); detail != "" {
		line += " — " + detail
	}
	d.applyEdits([]edit{d.insertEdit(d.parsed().find(id), line)})
	return nil
}

// MarkSeenAgain records a recurrence, "seen-again: <date> (<note>)", under the
// status line of each open entry among ids, and returns the ids it wrote the
// line for, in the order given, each once. An entry that already carries the
// identical line is left alone (a replay). An id whose entry is missing or
// not open gets no line: the work came back, and the sighting must be filed
// afresh (with [Doc.Append]; [Doc.Entry] tells which ids those are).
//
// Errors (nothing is changed): an error wrapping filetxn.ErrInvalidArgument
// for a bad date, a *filetxn.FormatError keyed by the id when an id names
// several entries.
func (d *Doc) MarkSeenAgain(ids []string, date, note string) ([]string, error) {
	if err := checkDate("MarkSeenAgain", "date", date); err != nil {
		return nil, err
	}
	if err := d.checkDups(ids...); err != nil {
		return nil, err
	}
	line := "seen-again: " + date + " (" + oneLine(note) + ")"
	// As in MarkDone, the fold is computed as edits on one parse; a repeated
	// id finds its line (a replay).
	p := d.parsed()
	var seen []string
	var edits []edit
	done := make(map[string]bool, len(ids))
	for _, id := range ids {
		if done[id] {
			continue
		}
		done[id] = true
		e := p.find(id)
		if e == nil || !e.open() || strings.Contains(p.body(e), line) {
			continue
		}
		edits = append(edits, d.insertEdit(e, line))
		seen = append(seen, id)
	}
	d.applyEdits(edits)
	return seen, nil
}

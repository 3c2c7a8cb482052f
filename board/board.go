package board

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/filetxn/filetxn"
	"go.yaml.in/yaml/v3"
)

// Doc is one parsed sprint-status board and the edits made to it since. Its operations
// change only the lines they must; Bytes returns the edited board. A Doc is not safe for
// concurrent use; the zero Doc is a missing board.
type Doc struct {
	exists bool // Parse was given bytes: Bytes is not nil

	// Set by Parse and never written again: copies of a Doc share them.
	src   string         // the board as parsed: lines joined
	lines []line         // the board as parsed
	rows  []row          // development_status rows (explicit ones in file order, then merged ones), then last_updated
	lu    int            // 1 + the index in rows of a rewritable top-level last_updated; 0 for none
	index map[string]int // key -> the row that answers for it (for a repeated key, the last)
	order []int          // the rows Stories and Epics list: each key once, in file order, merged keys last
	epics map[int][]int  // epic number -> its explicit epic rows

	// The edits since Parse, small and copied by clone, each sorted by index: a copy
	// costs two short slices, and a walk over the edits needs no sort.
	text    []lineText // lines whose text changed
	vals    []rowVal   // rows whose value changed
	changed bool       // an operation has changed the board since it was parsed
}

// lineText is the text of line li now.
type lineText struct {
	li   int
	text string
}

// rowVal is the part of row i that an edit changes.
type rowVal struct {
	i      int
	status Status
	valEnd int
}

// edited returns the edit of index i in edits (sorted by index), if there is one.
func edited[E any](edits []E, index func(E) int, i int) (E, bool) {
	n, found := slices.BinarySearchFunc(edits, i, func(e E, i int) int { return index(e) - i })
	if !found {
		var zero E
		return zero, false
	}
	return edits[n], true
}

// setEdit puts e into edits (sorted by index), replacing the edit of the same index.
func setEdit[E any](edits []E, index func(E) int, e E) []E {
	n, found := slices.BinarySearchFunc(edits, index(e), func(e E, i int) int { return index(e) - i })
	if found {
		edits[n] = e
		return edits
	}
	return slices.Insert(edits, n, e)
}

func lineIndex(t lineText) int { return t.li }
func rowIndex(v rowVal) int    { return v.i }

// val returns row i's edited value, if it has one.
func (d *Doc) val(i int) (rowVal, bool) { return edited(d.vals, rowIndex, i) }

// status returns row i's status now.
func (d *Doc) status(i int) Status {
	if v, ok := d.val(i); ok {
		return v.status
	}
	return d.rows[i].status
}

// lineText returns line li's text now.
func (d *Doc) lineText(li int) string {
	if t, ok := edited(d.text, lineIndex, li); ok {
		return t.text
	}
	return d.lines[li].text
}

// Row is one story or epic row of development_status, with a status of its own or one
// read from its mapping's status key. A story's key is <Epic>-<Number><Split>-<Slug>, as
// in 3-2-digest-delivery or 1-4a-x; an epic's key is epic-<Epic>, and its row has Number
// 0 and no Split or Slug. New reads only Epic, Number, Split, Slug and Status.
type Row struct {
	Key string

	// Epic is 3 in 3-2-digest-delivery and in epic-3, and 1 in epic-01 (the epic lift
	// edits only an unpadded key).
	Epic int

	Number int    // 2 in 3-2-digest-delivery; 0 for an epic
	Split  string // "a" in 1-4a-x; "" for an unsplit story and for an epic
	Slug   string // digest-delivery; "" for an epic

	// Status is the value as written, trimmed, with drafted read as ready-for-dev for a
	// story; an epic repeated in the file reports its last value.
	Status Status

	Line int // 1-based line of the key (of its last occurrence, for a repeated epic)
}

// Bytes returns the board as it stands: the parsed bytes with every edit applied, or nil
// for a missing board (Parse was given nil), so Bytes() == nil reports that the board does
// not exist. The slice is new on every call.
func (d *Doc) Bytes() []byte {
	if !d.exists {
		return nil
	}
	return d.appendBytes(make([]byte, 0, d.size()))
}

// appendBytes appends Bytes to dst, for a board that exists.
func (d *Doc) appendBytes(dst []byte) []byte {
	dst = slices.Grow(dst, d.size())
	for p := range d.pieces {
		dst = append(dst, p...)
	}
	return dst
}

// hasBytes reports whether b equals d.Bytes(), without building them.
func (d *Doc) hasBytes(b []byte) bool {
	if !d.exists || len(b) != d.size() {
		return false
	}
	for p := range d.pieces {
		if string(b[:len(p)]) != p {
			return false
		}
		b = b[len(p):]
	}
	return true
}

// size returns len(d.Bytes()) for a board that exists.
func (d *Doc) size() int {
	n := len(d.src)
	for _, t := range d.text {
		n += len(t.text) - len(d.lines[t.li].text)
	}
	return n
}

// pieces yields the board as it stands, in order, as whole runs of the parsed text
// between edited lines and the edited lines' text: a walk over the edits, which touches
// no other line.
func (d *Doc) pieces(yield func(string) bool) {
	done := 0 // src yielded up to here
	for _, t := range d.text {
		l := &d.lines[t.li]
		if !yield(d.src[done:l.off]) || !yield(t.text) {
			return
		}
		done = l.off + len(l.text)
	}
	yield(d.src[done:])
}

// Status returns the status of a key of development_status: the value as written,
// trimmed, with drafted read as ready-for-dev for story keys. For a key holding a
// mapping, the status is the value of the mapping's status key. ok is false when the
// key is absent or has no status (see Unread). A null value has status "".
func (d *Doc) Status(key string) (status Status, ok bool) {
	i, ok := d.index[key]
	if !ok || d.rows[i].unread {
		return "", false
	}
	return d.status(i), true
}

// Stories returns the story rows in file order. The slice is new on every call.
func (d *Doc) Stories() []Row { return d.list(kindStory) }

// Epics returns the epic rows in file order, each key once. The slice is new on every
// call.
func (d *Doc) Epics() []Row { return d.list(kindEpic) }

// list returns the rows of kind k that have a status, in file order.
func (d *Doc) list(k kind) []Row {
	var out []Row
	for _, i := range d.order {
		if r := &d.rows[i]; r.kind == k && !r.unread {
			out = append(out, Row{Key: r.key, Epic: r.epic, Number: r.num, Split: r.split, Slug: r.slug, Status: d.status(i), Line: r.line + 1})
		}
	}
	return out
}

// NextActionable returns the first story in file order whose status is backlog or
// ready-for-dev: the one bmad-loop picks up next. ok is false when there is none. (For the
// next story of one epic, filter Stories.)
func (d *Doc) NextActionable() (s Row, ok bool) {
	for _, st := range d.Stories() {
		if actionable(st.Status) {
			return st, true
		}
	}
	return Row{}, false
}

// Unread returns the keys of development_status that have no status, in file order: a
// key holding a list, or a mapping without a scalar status key. Each comes as a
// *filetxn.FormatError whose Key is the key, whose Line is the key's line and whose Err
// says what the key holds instead (for example "the mapping has no status key"); Advance
// refuses such a row with a FormatError too. Such a key is absent for Status, Stories and
// Epics, and never stops the rest of the board from loading or advancing. The slice is
// new on every call, nil when every key has a status.
func (d *Doc) Unread() []*filetxn.FormatError {
	var out []*filetxn.FormatError
	for _, i := range d.order {
		if r := &d.rows[i]; r.unread {
			out = append(out, &filetxn.FormatError{Line: r.line + 1, Key: r.key, Err: &rowError{reason: r.refusal, detail: r.detail}})
		}
	}
	return out
}

// has reports whether key is a row of development_status.
func (d *Doc) has(key string) bool {
	_, ok := d.index[key]
	return ok
}

// all returns the indexes of the rows in the order Stories and Epics list them.
func (d *Doc) all() []int { return d.order }

// AdvanceOption changes how Advance treats one row.
type AdvanceOption func(*advanceConfig)

type advanceConfig struct {
	regress   bool
	unordered bool
	now       string
}

// AllowRegression lets Advance move a row backwards along the allowlist: only done to
// awaiting-operator. Any other backward move then fails with ErrIllegalTransition instead
// of being answered with the current status.
func AllowRegression() AdvanceOption { return func(c *advanceConfig) { c.regress = true } }

// AllowUnordered lets Advance overwrite a status outside the order (completed, blocked,
// in_progress, ...) and write a target outside the order. Such a move is not ordered, so
// it is made unless the row already reads the target. This is bmad-loop's behaviour.
func AllowUnordered() AdvanceOption { return func(c *advanceConfig) { c.unordered = true } }

// Stamp makes Advance set the top-level last_updated field to now when, and only when,
// the row's line is rewritten. The value is written literally; a board without a
// rewritable top-level last_updated line is left without one (no line is ever added).
func Stamp(now string) AdvanceOption { return func(c *advanceConfig) { c.now = now } }

// Advance moves the row key of development_status towards target and returns the status
// the row ends at. It never moves a row backwards: a row already at or past target is
// left alone and its status returned. A missing board or an absent key is an error
// matching filetxn.ErrNotFound that names the key: a mistyped key is not a no-op. When a
// story moves to in-progress, its epic row is lifted from backlog to in-progress too
// (when that line can be rewritten). Advance changes only the Doc in memory; on error it
// returns "" and changes nothing.
//
// Errors: filetxn.ErrInvalidArgument, naming the argument, for an empty key, a target
// outside the order (without AllowUnordered) or a value that cannot be written plainly;
// for a row whose status is outside the order, ErrUnorderedStatus, and for an illegal
// backward move, ErrIllegalTransition, in an error naming the row's line and key, its
// status and the target; a *filetxn.FormatError (Line and Key the row's, Err the reason)
// for a row whose line cannot be rewritten safely or that has no status (see Unread).
// Store.Mutate returns these inside an *fs.PathError naming the board.
func (d *Doc) Advance(key string, target Status, opts ...AdvanceOption) (Status, error) {
	var cfg advanceConfig
	for _, o := range opts {
		o(&cfg)
	}
	if err := validate(key, target, cfg); err != nil {
		return "", err
	}
	if _, ok := d.index[key]; !ok {
		return "", notFound(key)
	}
	return d.advance(key, target, cfg)
}

func (d *Doc) advance(key string, target Status, cfg advanceConfig) (Status, error) {
	status, p, err := d.plan(key, target, cfg)
	if err != nil || p.row < 0 {
		return status, err
	}
	d.set(p.row, string(target))
	if p.lift >= 0 {
		d.set(p.lift, string(InProgress))
	}
	if cfg.now != "" && d.lu > 0 {
		d.set(d.lu-1, cfg.now)
	}
	return status, nil
}

// advancePlan is what advance is about to change: row (-1 for nothing) and the epic row
// it lifts (-1 for none).
type advancePlan struct{ row, lift int }

// plan decides advance without changing d: the status the row ends at, the rows to
// rewrite, or the error. A plan that rewrites no row is a no-op, and advance then changes
// nothing at all.
func (d *Doc) plan(key string, target Status, cfg advanceConfig) (Status, advancePlan, error) {
	none := advancePlan{row: -1, lift: -1}
	i, ok := d.index[key]
	if !ok {
		return "", none, nil
	}
	r, cur := &d.rows[i], d.status(i)
	rowErr := func(sentinel error, reason reason, detail string) (Status, advancePlan, error) {
		return "", none, rowRefusal(r.line, key, &rowError{current: cur, target: target, reason: reason, detail: detail, err: sentinel})
	}
	if r.unread {
		return rowErr(nil, r.refusal, r.detail)
	}
	ci, ti := Rank(cur), Rank(target)
	switch {
	case ci >= 0 && ti >= 0:
		if ci > ti && cfg.regress {
			if !allowedRegression(cur, target) {
				return rowErr(ErrIllegalTransition, reasonIllegalRegress, "only done -> awaiting-operator may move backwards")
			}
		} else if ci >= ti {
			return cur, none, nil
		}
	case !cfg.unordered:
		return rowErr(ErrUnorderedStatus, reasonUnorderedStatus, "")
	case cur == target:
		return cur, none, nil
	}
	if r.refusal != "" {
		return rowErr(nil, r.refusal, r.detail)
	}
	if r.flow && !plainInFlow(string(target)) {
		return rowErr(nil, reasonUnreadableValue, "the value sits in a flow mapping, where the target would not read as one plain value")
	}
	// The lift reads the epic as it was before this edit (bmad-loop reads the file
	// before writing). The epic is the row keyed "epic-<n>" with the story's epic number
	// written without padding, as bmad-loop looks it up: a board that numbers its epics
	// epic-01 gets no lift. An epic whose number appears on more than one row, or whose
	// line cannot be rewritten, is skipped: the lift is best effort, the story's move is
	// not.
	p := advancePlan{row: i, lift: -1}
	if target == InProgress && r.kind == kindStory {
		if es := d.epics[r.epic]; len(es) == 1 && d.rows[es[0]].key == epicKey(r.epic) && d.status(es[0]) == Backlog && d.rows[es[0]].refusal == "" {
			p.lift = es[0]
		}
	}
	// A row whose status reads otherwise (drafted, for ready-for-dev) may already hold
	// target byte for byte: its line is not rewritten, so nothing is, last_updated
	// included (Stamp). No lift goes with such a row: a lift needs a move to in-progress
	// from a status below it, whose line cannot read in-progress.
	if d.value(i) == string(target) {
		return target, none, nil
	}
	return target, p, nil
}

// clone returns a copy of d that can be edited independently. Only the edits are copied;
// the parsed board is shared, as it is never written. One parse can thus serve many
// edits, and a cached parse can be handed out again for the price of two short slices.
func (d *Doc) clone() *Doc {
	c := *d
	c.text = slices.Clone(d.text)
	c.vals = slices.Clone(d.vals)
	return &c
}

// rebased returns a copy of d whose edits are folded into its own parsed board, so that
// later copies start with no edits to carry. src must be d.Bytes().
func (d *Doc) rebased(src string) *Doc {
	c := *d
	c.src = src
	c.lines = slices.Clone(d.lines)
	for _, t := range d.text {
		c.lines[t.li].text = t.text
	}
	// The lines now index src, and keep nothing of the old board's text alive.
	off := 0
	for i, l := range c.lines {
		text, term := src[off:off+len(l.text)], src[off+len(l.text):off+len(l.text)+len(l.term)]
		c.lines[i] = line{text: text, term: term, off: off}
		off += len(text) + len(term)
	}
	c.rows = slices.Clone(d.rows)
	for _, v := range d.vals {
		c.rows[v.i].status, c.rows[v.i].valEnd = v.status, v.valEnd
	}
	c.text, c.vals, c.changed = nil, nil, false
	return &c
}

// epicKey is the key of epic n's row as bmad-loop writes and looks it up.
func epicKey(n int) string { return "epic-" + strconv.Itoa(n) }

// value returns row i's value as its line holds it now (quotes included).
func (d *Doc) value(i int) string {
	return d.lineText(d.rows[i].vline)[d.rows[i].valStart:d.valueEnd(i)]
}

// valueEnd returns where row i's value ends on its line now.
func (d *Doc) valueEnd(i int) int {
	if v, ok := d.val(i); ok {
		return v.valEnd
	}
	return d.rows[i].valEnd
}

// set rewrites row i's value: everything before and after the value on its line (indent,
// key, gap, comment, terminator; for a map row, the rest of the mapping) is kept byte for
// byte. A quoted value becomes the plain value.
func (d *Doc) set(i int, value string) {
	r := &d.rows[i]
	text, end := d.lineText(r.vline), d.valueEnd(i)
	if text[r.valStart:end] == value {
		return
	}
	d.text = setEdit(d.text, lineIndex, lineText{r.vline, text[:r.valStart] + value + text[end:]})
	st := Status(value)
	if r.kind == kindStory && value == drafted {
		st = ReadyForDev
	}
	d.vals = setEdit(d.vals, rowIndex, rowVal{i: i, status: st, valEnd: r.valStart + len(value)})
	d.changed = true
}

// validate checks the arguments of Advance before any I/O.
func validate(key string, target Status, cfg advanceConfig) error {
	bad := func(format string, args ...any) error { return invalid("Advance", format, args...) }
	if key == "" || !utf8.ValidString(key) {
		return bad("key %q: want a non-empty UTF-8 string", key)
	}
	if Rank(target) < 0 {
		if !cfg.unordered {
			return bad("target %q: outside the status order (pass AllowUnordered to write it)", target)
		}
		if !plainString(string(target)) {
			return bad("target %q: cannot be written as a plain YAML string", target)
		}
	}
	if cfg.now != "" && !plainScalar(cfg.now) {
		return bad("Stamp %q: cannot be written as a plain YAML value", cfg.now)
	}
	return nil
}

// plainScalar reports whether s, written after "key: " on a line of its own, reads back as
// one plain scalar equal to s and leaves the line's structure alone.
func plainScalar(s string) bool {
	n := plainNode(s)
	return n != nil
}

// plainString is plainScalar for a status: it must also read back as a string in YAML 1.2
// and in YAML 1.1 (where PyYAML reads yes, no, on, off, y and n as booleans).
func plainString(s string) bool {
	n := plainNode(s)
	if n == nil || n.Tag != "!!str" {
		return false
	}
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~":
		return false
	}
	return true
}

// plainInFlow reports whether s, a plainString, also reads back as itself when written
// as the value of a flow mapping, followed by "}" or by ", " and another pair. A flow
// context ends a plain scalar at ",[]{}", and the parser refuses some values there that it
// reads in a block ("a?", ":a"): written anyway, they would make the whole board
// unreadable.
func plainInFlow(s string) bool {
	if strings.ContainsAny(s, ",[]{}") {
		return false
	}
	for _, c := range []struct {
		doc   string
		pairs int
	}{{"{k: " + s + "}\n", 1}, {"{k: " + s + ", j: x}\n", 2}} {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(c.doc), &m); err != nil {
			return false
		}
		if v, ok := m["k"].(string); !ok || v != s || len(m) != c.pairs {
			return false
		}
	}
	return true
}

func plainNode(s string) *yaml.Node {
	if s == "" || s != strings.TrimSpace(s) || !utf8.ValidString(s) ||
		strings.IndexFunc(s, unicode.IsControl) >= 0 || strings.ContainsAny(s, "\u2028\u2029#") {
		return nil
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte("k: "+s+"\n"), &n); err != nil {
		return nil
	}
	if len(n.Content) != 1 || n.Content[0].Kind != yaml.MappingNode || len(n.Content[0].Content) != 2 {
		return nil
	}
	v := n.Content[0].Content[1]
	if v.Kind != yaml.ScalarNode || v.Style != 0 || v.Value != s || v.Line != 1 {
		return nil
	}
	return v
}

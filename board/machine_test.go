package board

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/filetxn/filetxn"
	"pgregory.net/rapid"
)

// genRow is one row the board generator wrote, as the model sees it.
type genRow struct {
	key        string
	kind       kind
	epic       int
	status     Status // folded, as Status must report it
	line       int    // 0-based line of the key
	vline      int    // 0-based line of the value an edit rewrites: line, or the status key's
	rewritable bool
	unread     bool // a mapping without a status key: no status, never rewritten
}

// genBoard is a random board and everything the model needs to know about it.
type genBoard struct {
	src         string
	lines       []line
	rows        []*genRow // in file order
	lastUpdated int       // 0-based line of a rewritable top-level last_updated, -1 for none
}

var (
	genSlugs    = []string{"login", "digest-delivery", "权限门", "проверка", "x"}
	genStatuses = []Status{Backlog, ReadyForDev, InProgress, Review, AwaitingOperator, Done, drafted, "completed", "blocked", "in_progress", "In progress", "optional"}
	genComments = []string{"# the next story", "# owner: pat", "#", "# a # b: c", "# Проверка пройдена — всё хорошо", "# 完成"}
)

// drawBoard draws a random board: header comments, a decoy mapping that repeats a story
// key, development_status with epics (plain or maps, keyed epic-1 or epic-01), stories
// (plain, quoted, commented, split, quoted keys, trailing blanks; or maps: block maps
// with other fields around a status line, flow maps, maps without a status),
// retrospectives and section comments, a trailing action_items list, and random line
// terminators and final newline.
func drawBoard(t *rapid.T) *genBoard {
	b := &genBoard{lastUpdated: -1}
	termStyle := rapid.SampledFrom([]string{"lf", "crlf", "cr", "mixed"}).Draw(t, "terminators")
	term := func() string {
		switch termStyle {
		case "crlf":
			return "\r\n"
		case "cr":
			return "\r"
		case "mixed":
			return rapid.SampledFrom([]string{"\n", "\r\n", "\r"}).Draw(t, "terminator")
		}
		return "\n"
	}
	add := func(text string) int {
		tm := term()
		if n := len(b.lines); n > 0 && b.lines[n-1].term == "\r" && text == "" && strings.HasPrefix(tm, "\n") {
			tm = "\r" // a lone CR then an empty line ended by LF would read as one CRLF
		}
		b.lines = append(b.lines, line{text: text, term: tm})
		return len(b.lines) - 1
	}
	if rapid.Bool().Draw(t, "header comment") {
		add("# Sprint status — do not hand-edit casually")
	}
	add("generated: 01-06-2026 10:00")
	switch rapid.IntRange(0, 2).Draw(t, "last_updated style") {
	case 1:
		b.lastUpdated = add("last_updated: 01-06-2026 10:00")
	case 2:
		b.lastUpdated = add(`last_updated: "01-06-2026 10:00"  # quoted`)
	}
	decoy := rapid.Bool().Draw(t, "decoy mapping")
	if decoy {
		add("decoy:")
		add("  1-1-" + genSlugs[0] + ": backlog")
	}
	add("development_status:" + rapid.SampledFrom([]string{"", "  # rows"}).Draw(t, "mapping comment"))
	padded := rapid.Bool().Draw(t, "padded epic keys")
	nEpics := rapid.IntRange(1, 3).Draw(t, "epics")
	for e := 1; e <= nEpics; e++ {
		switch rapid.IntRange(0, 2).Draw(t, "section comment") {
		case 1:
			add(fmt.Sprintf("  # Epic %d", e))
		case 2:
			add(fmt.Sprintf("# Epic %d at column 0", e))
		}
		if rapid.Bool().Draw(t, "blank line") {
			add("")
		}
		est := rapid.SampledFrom(append([]Status{Backlog}, genStatuses[:6]...)).Draw(t, "epic status")
		key := fmt.Sprintf("epic-%d", e)
		if padded {
			key = fmt.Sprintf("epic-%02d", e)
		}
		if rapid.IntRange(0, 3).Draw(t, "map epic") == 0 {
			kl := add("  " + key + ":")
			vl := add("    status: " + string(est))
			add(`    title: "Epic, with a comma"`)
			b.rows = append(b.rows, &genRow{key: key, kind: kindEpic, epic: e, status: est, line: kl, vline: vl, rewritable: true})
		} else {
			kl := add("  " + key + ": " + string(est))
			b.rows = append(b.rows, &genRow{key: key, kind: kindEpic, epic: e, status: est, line: kl, vline: kl, rewritable: true})
		}
		nStories := rapid.IntRange(0, 4).Draw(t, "stories")
		for s := 1; s <= nStories; s++ {
			split := rapid.SampledFrom([]string{"", "", "a", "b"}).Draw(t, "split")
			if e == 1 && s == 1 && decoy {
				split = "" // the decoy repeats this key outside development_status
			}
			epicNum := strconv.Itoa(e)
			if rapid.IntRange(0, 5).Draw(t, "padded story epic") == 0 {
				epicNum = fmt.Sprintf("%02d", e)
			}
			key := fmt.Sprintf("%s-%d%s-%s", epicNum, s, split, genSlugs[(s-1)%len(genSlugs)])
			if split != "" {
				key += "-" + split
			}
			st := rapid.SampledFrom(genStatuses).Draw(t, "story status")
			folded := st
			if folded == drafted {
				folded = ReadyForDev
			}
			value := st
			switch rapid.IntRange(0, 3).Draw(t, "value style") {
			case 1:
				value = "'" + st + "'"
			case 2:
				value = `"` + st + `"`
			}
			shape := rapid.SampledFrom([]string{"plain", "plain", "plain", "block map", "flow map", "no status"}).Draw(t, "row shape")
			switch shape {
			case "flow map":
				text := "  " + key + ": " + rapid.SampledFrom([]string{"{status: %s}", "{ status: %s, title: x }", `{title: "a, b", status: %s}`}).Draw(t, "flow map")
				text = fmt.Sprintf(text, value)
				if rapid.Bool().Draw(t, "trailing comment") {
					text += "  " + rapid.SampledFrom(genComments).Draw(t, "comment")
				}
				kl := add(text)
				b.rows = append(b.rows, &genRow{key: key, kind: kindStory, epic: e, status: folded, line: kl, vline: kl, rewritable: true})
				continue
			case "no status":
				kl := add("  " + key + ":")
				add(`    title: "Not started"`)
				b.rows = append(b.rows, &genRow{key: key, kind: kindStory, epic: e, line: kl, vline: kl, unread: true})
				continue
			}
			gap := rapid.SampledFrom([]string{" ", "   ", "\t"}).Draw(t, "gap")
			name := key
			if shape == "block map" {
				name = "status"
			}
			text := "  " + name + ":" + gap + string(value)
			if shape == "block map" {
				text = "  " + text
			}
			rewritable := true
			if rapid.Bool().Draw(t, "trailing comment") {
				text += rapid.SampledFrom([]string{" ", "  ", "\t"}).Draw(t, "comment gap") + rapid.SampledFrom(genComments).Draw(t, "comment")
			} else if rapid.IntRange(0, 9).Draw(t, "trailing blanks") == 0 {
				text += "  "
				rewritable = false
			}
			if rapid.IntRange(0, 9).Draw(t, "quoted key") == 0 {
				text = strings.Replace(text, name+":", "'"+name+"':", 1)
				rewritable = false
			}
			if shape == "plain" {
				kl := add(text)
				b.rows = append(b.rows, &genRow{key: key, kind: kindStory, epic: e, status: folded, line: kl, vline: kl, rewritable: rewritable})
				continue
			}
			kl := add("  " + key + ":" + rapid.SampledFrom([]string{"", "  # a map"}).Draw(t, "key comment"))
			if rapid.Bool().Draw(t, "field before status") {
				add(`    title: "Fix URLs"`)
			}
			vl := add(text)
			if rapid.Bool().Draw(t, "fields after status") {
				add("    owner: pat")
				add("    last_updated: 2026-01-01")
			}
			b.rows = append(b.rows, &genRow{key: key, kind: kindStory, epic: e, status: folded, line: kl, vline: vl, rewritable: rewritable})
		}
		if rapid.Bool().Draw(t, "retrospective") {
			key := fmt.Sprintf("epic-%d-retrospective", e)
			kl := add("  " + key + ": optional")
			b.rows = append(b.rows, &genRow{key: key, kind: kindRetro, epic: e, status: "optional", line: kl, vline: kl, rewritable: true})
		}
	}
	if rapid.Bool().Draw(t, "trailing section") {
		add("")
		add("# WORKFLOW NOTES")
		add("action_items:")
		add("  - epic: 1")
		add("    status: backlog")
	}
	if rapid.Bool().Draw(t, "no final newline") {
		b.lines[len(b.lines)-1].term = ""
	}
	b.src = string(joinLines(b.lines))
	return b
}

// boardMachine checks a Doc against a plain model: a map from key to status.
type boardMachine struct {
	gen   *genBoard
	doc   *Doc
	model map[string]Status // key -> status, as Status must report it
	rows  map[string]*genRow
	floor map[string]int // key -> lowest rank the row may read (never-regress)
	// touched holds the lines an operation was allowed to rewrite so far.
	touched     map[int]bool
	lastUpdated string    // the model's last_updated value, "" when the board has none rewritable
	unread      []*genRow // the rows without a status, in file order
}

func newBoardMachine(t *rapid.T) *boardMachine {
	g := drawBoard(t)
	d, err := Parse([]byte(g.src))
	if err != nil {
		t.Fatalf("Parse(generated board %q) = %v", g.src, err)
	}
	m := &boardMachine{gen: g, doc: d, model: map[string]Status{}, rows: map[string]*genRow{}, floor: map[string]int{}, touched: map[int]bool{}}
	for _, r := range g.rows {
		m.rows[r.key] = r
		if r.unread {
			m.unread = append(m.unread, r)
			continue
		}
		m.model[r.key] = r.status
		m.floor[r.key] = Rank(r.status)
	}
	if g.lastUpdated >= 0 {
		m.lastUpdated = "01-06-2026 10:00"
	}
	return m
}

// Advance moves a random row (or a ghost) to a random target with random options.
func (m *boardMachine) Advance(t *rapid.T) {
	keys := []string{"9-9-ghost"}
	for _, r := range m.gen.rows {
		keys = append(keys, r.key)
	}
	key := rapid.SampledFrom(keys).Draw(t, "key")
	target := rapid.SampledFrom(append(statusOrder[:], "blocked")).Draw(t, "target")
	unordered := rapid.Bool().Draw(t, "AllowUnordered")
	regress := rapid.Bool().Draw(t, "AllowRegression")
	stamp := rapid.SampledFrom([]string{"", "02-06-2026 09:30", "2026-06-03T10:00:00Z"}).Draw(t, "stamp")
	var opts []AdvanceOption
	if unordered {
		opts = append(opts, AllowUnordered())
	}
	if regress {
		opts = append(opts, AllowRegression())
	}
	if stamp != "" {
		opts = append(opts, Stamp(stamp))
	}
	got, err := m.doc.Advance(key, target, opts...)
	want, wantErr := m.apply(key, target, unordered, regress, stamp)
	if !matches(err, wantErr) || (err == nil) != (wantErr == nil) {
		t.Fatalf("Advance(%q, %q, unordered=%v, regress=%v) error = %v, want %v", key, target, unordered, regress, err, wantErr)
	}
	if err == nil && got != want {
		t.Fatalf("Advance(%q, %q, unordered=%v, regress=%v) = %q, want %q", key, target, unordered, regress, got, want)
	}
}

// errFormat stands, in the model, for a row Advance refuses with a *filetxn.FormatError.
var errFormat = errors.New("model: a *filetxn.FormatError")

// matches reports whether err is what the model's wantErr stands for.
func matches(err, wantErr error) bool {
	if wantErr == errFormat {
		var fe *filetxn.FormatError
		return errors.As(err, &fe)
	}
	return errors.Is(err, wantErr)
}

// apply is the model of Advance: it returns the expected status and error sentinel (or
// errFormat) and updates the model.
func (m *boardMachine) apply(key string, target Status, unordered, regress bool, stamp string) (Status, error) {
	if Rank(target) < 0 && !unordered {
		return "", filetxn.ErrInvalidArgument
	}
	r := m.rows[key]
	if r == nil {
		return "", filetxn.ErrNotFound
	}
	if r.unread {
		return "", errFormat
	}
	cur := m.model[key]
	ci, ti := Rank(cur), Rank(target)
	ordered := ci >= 0 && ti >= 0
	switch {
	case ordered && regress && ci > ti && !(cur == Done && target == AwaitingOperator):
		return "", ErrIllegalTransition
	case ordered && ci >= ti && !(regress && cur == Done && target == AwaitingOperator):
		return cur, nil
	case !ordered && !unordered:
		return "", ErrUnorderedStatus
	case !ordered && cur == target:
		return cur, nil
	case !r.rewritable:
		return "", errFormat
	}
	m.model[key] = target
	m.floor[key] = ti
	m.touched[r.vline] = true
	if target == InProgress && r.kind == kindStory {
		// The lift finds the epic as bmad-loop does, by the key epic-<n> unpadded.
		for _, e := range m.gen.rows {
			if e.kind == kindEpic && e.key == fmt.Sprintf("epic-%d", r.epic) && m.model[e.key] == Backlog {
				m.model[e.key] = InProgress
				m.floor[e.key] = Rank(InProgress)
				m.touched[e.vline] = true
			}
		}
	}
	if stamp != "" && m.lastUpdated != "" {
		m.lastUpdated = stamp
		m.touched[m.gen.lastUpdated] = true
	}
	return target, nil
}

// Reparse drops the Doc and reads its bytes back, as a Reopen would.
func (m *boardMachine) Reparse(t *rapid.T) {
	d, err := Parse(m.doc.Bytes())
	if err != nil {
		t.Fatalf("Parse(Bytes()) = %v", err)
	}
	m.doc = d
}

// Check verifies the invariants after every action.
func (m *boardMachine) Check(t *rapid.T) {
	// 1. Every row reads as the model says.
	for key, want := range m.model {
		if got, ok := m.doc.Status(key); !ok || got != want {
			t.Fatalf("Status(%q) = %q, %v, want %q, true", key, got, ok, want)
		}
	}
	// 1b. A row without a status has none, and Unread lists exactly those, by key and line.
	un := m.doc.Unread()
	if len(un) != len(m.unread) {
		t.Fatalf("Unread() = %v, want %d rows", un, len(m.unread))
	}
	for i, r := range m.unread {
		if un[i].Key != r.key || un[i].Line != r.line+1 || un[i].Err == nil {
			t.Fatalf("Unread()[%d] = %v, want %s at line %d", i, un[i], r.key, r.line+1)
		}
		if got, ok := m.doc.Status(r.key); ok {
			t.Fatalf("Status(%q) = %q, true, want absent", r.key, got)
		}
	}
	// 2. Never regress: an ordered row never reads below the last status it was moved to
	// (only AllowRegression or AllowUnordered lower the floor, through the model).
	for key, floor := range m.floor {
		got, _ := m.doc.Status(key)
		if floor >= 0 && Rank(got) < floor {
			t.Fatalf("Status(%q) = %q, below %q", key, got, statusOrder[floor])
		}
	}
	// 3. Lines no operation was allowed to touch are byte-identical, every terminator is
	// kept, and no line is added or removed.
	after := splitLines(string(m.doc.Bytes()))
	if len(after) != len(m.gen.lines) {
		t.Fatalf("line count %d, want %d", len(after), len(m.gen.lines))
	}
	for i, l := range m.gen.lines {
		if after[i].term != l.term || after[i].text != l.text && !m.touched[i] {
			t.Fatalf("line %d = %q, want %q", i+1, after[i], l)
		}
	}
	// 4. A touched line keeps its key, gap and comment: only the value differs.
	for i := range m.touched {
		if !sameShape(m.gen.lines[i].text, after[i].text) {
			t.Fatalf("line %d changed shape: %q -> %q", i+1, m.gen.lines[i].text, after[i].text)
		}
	}
	// 6. The edited Doc is, field for field, the Doc its bytes parse to (the Codec's
	// cache relies on this).
	re, err := Parse(m.doc.Bytes())
	if err != nil {
		t.Fatalf("Parse(Bytes()) = %v", err)
	}
	if got, want := docState(m.doc), docState(re); !reflect.DeepEqual(got, want) {
		t.Fatalf("edited Doc differs from its reparse:\n%+v\nwant\n%+v", got, want)
	}
	// 5. last_updated reads as the model says.
	if m.gen.lastUpdated >= 0 {
		if txt := after[m.gen.lastUpdated].text; !strings.HasPrefix(txt, "last_updated: "+m.lastUpdated) && !strings.HasPrefix(txt, `last_updated: "`+m.lastUpdated+`"`) {
			t.Fatalf("last_updated line = %q, want value %q", txt, m.lastUpdated)
		}
	}
}

// state is what a Doc holds, with every edit applied, for comparison.
type state struct {
	Exists bool
	Lines  []line
	Rows   []row
	LU     int
	Index  map[string]int
	Order  []int
	Epics  map[int][]int
}

func docState(d *Doc) state {
	lines := slices.Clone(d.lines)
	for _, t := range d.text {
		lines[t.li].text = t.text
	}
	off := 0
	for i := range lines {
		lines[i].off = off
		off += len(lines[i].text) + len(lines[i].term)
	}
	rows := slices.Clone(d.rows)
	for _, v := range d.vals {
		rows[v.i].status, rows[v.i].valEnd = v.status, v.valEnd
	}
	return state{d.exists, lines, rows, d.lu, d.index, d.order, d.epics}
}

// sameShape reports whether two versions of a row line agree on everything but the value:
// the same text up to the first value byte, and the same comment.
func sameShape(a, b string) bool {
	head := func(s string) string { return s[:strings.Index(s, ":")+1] }
	tail := func(s string) string {
		if i := strings.Index(s, " #"); i >= 0 {
			return s[i:]
		}
		if i := strings.Index(s, "\t#"); i >= 0 {
			return s[i:]
		}
		return ""
	}
	return head(a) == head(b) && strings.HasSuffix(b, tail(a))
}

// TestBoardMachine runs random Advance and Reparse actions on random boards against the
// model. Ablations that turn it red: dropping the at-or-past check (a row regresses);
// dropping the comment in set (invariant 4); lifting an epic whatever its status
// (invariant 1); finding a row by the first textual match of its key (the decoy mapping);
// ignoring AllowUnordered (an unordered status is overwritten); not moving valEnd after
// an edit (invariant 6); editing a map row's key line instead of its status line (the
// edit lands on the wrong line); lifting an epic by number whatever its key's padding
// (invariant 1); refusing a flow value followed by "," or "}" (Advance errs where the
// model moves the row).
func TestBoardMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newBoardMachine(t)
		t.Repeat(rapid.StateMachineActions(m))
	})
}

// FuzzBoardMachine runs the state machine on fuzzer-chosen bytes.
func FuzzBoardMachine(f *testing.F) {
	f.Fuzz(rapid.MakeFuzz(func(t *rapid.T) {
		m := newBoardMachine(t)
		t.Repeat(rapid.StateMachineActions(m))
	}))
}

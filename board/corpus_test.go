package board

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/testkit"
)

// corpusDir is the shared corpus's folder of boards (see package corpus); the
// tests skip when it is absent.
func corpusDir(t *testing.T) string { return testkit.Dir(t, "boards") }

// corpusBoards says, for every board of the corpus, whether it loads or is refused, and why.
var corpusBoards = []struct {
	file    string
	refusal string // "": loads; else the kind of refusal its message names
	line    int    // for a refusal, the line it names
	why     string
}{
	{"0662x__rpg-engine.yaml", "", 0, "CJK keys; a commented copy of the metadata header"},
	{"2buisson__vibepdf.yaml", kindYAML, 42, "story_location: {project-root}/... opens a flow map: not YAML (PyYAML refuses it too)"},
	{"5arjun__curfew.vip.yaml", "", 0, "103K, many comments, action_items after development_status"},
	{"AIfriendly__AIvideogen.yaml", kindNotBoard, 6, "development_status: {} is an empty flow mapping: nothing to advance, nothing a line editor could edit"},
	{"Brownbull__gmni_boletapp.yaml", "", 0, "contexted, completed, deployed, cancelled, failed: loads, those rows are refused without AllowUnordered"},
	{"CSmithy89__ai-business-hub.yaml", "", 0, "CRLF throughout"},
	{"IBE160__SG-Bergen.yaml", "", 0, "no final newline; drafted"},
	{"delorenj__pjangler.yaml", kindNotBoard, 1, "another schema (version/sprints/stories lists): no development_status"},
	{"dtdung2911__growbase.yaml", "", 0, "epic-14 and epic-14-retrospective repeated: tolerated, last wins, never rewritten"},
	{"mmornati__leanproxy-mcp.yaml", "", 0, "--- after a comment header"},
	{"steveyegge__beads.yaml", "", 0, "every row is a map {status, beads_id, title}: each reads and advances by its status: line"},
	{"trapt365__arb-strategy-tracking-system.yaml", "", 0, "last_updated_prev* siblings, in_progress, split stories, long Cyrillic comments"},
}

func TestCorpusBoardsLoadOrAreRefused(t *testing.T) {
	dir := corpusDir(t)
	var oracle map[string]struct {
		Rows  map[string]*string `json:"rows"`
		Error string             `json:"error"`
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "corpus_statuses.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &oracle); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(corpusBoards) {
		t.Errorf("corpus has %d boards, the table %d: decide each new board", len(entries), len(corpusBoards))
	}
	for _, tt := range corpusBoards {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join(dir, tt.file)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			d, err := Parse(src)
			if tt.refusal != "" {
				var fe *filetxn.FormatError
				if !errors.As(err, &fe) || fe.Line != tt.line || !strings.Contains(err.Error(), "board: "+tt.refusal+": ") {
					t.Fatalf("Parse(%s) = %v, want a *filetxn.FormatError at line %d saying %q (%s)", tt.file, err, tt.line, tt.refusal, tt.why)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%s) = %v, want it to load (%s)", tt.file, err, tt.why)
			}
			if got := d.Bytes(); string(got) != string(src) {
				t.Fatalf("Parse(%s).Bytes() differs from the file", tt.file)
			}
			// Every row reads as bmad-loop's loader reads it.
			o := oracle[tt.file]
			if o.Error != "" {
				t.Fatalf("oracle refused %s (%s) but Parse loaded it", tt.file, o.Error)
			}
			for key, want := range o.Rows {
				got, ok := d.Status(key)
				if want == nil {
					if ok {
						t.Errorf("Status(%q) = %q, true, want absent (nested)", key, got)
					}
					continue
				}
				if !ok || got != Status(*want) {
					t.Errorf("Status(%q) = %q, %v, want %q, true", key, got, ok, *want)
				}
			}
			// The rows without a status are exactly those Unread reports.
			unread := map[string]bool{}
			for _, e := range d.Unread() {
				unread[e.Key] = true
			}
			for key, want := range o.Rows {
				if (want == nil) != unread[key] {
					t.Errorf("Unread() lists %q: %v, want %v", key, unread[key], want == nil)
				}
			}
			if n := len(d.order); n != len(o.Rows) {
				t.Errorf("Parse(%s) has %d rows, oracle %d", tt.file, n, len(o.Rows))
			}
			checkEveryAdvance(t, src, d)
		})
	}
}

// checkEveryAdvance advances every row of d to in-progress (which may lift an epic) and to
// done, and checks that only the lines it must change did, and that the result reads
// back as expected.
func checkEveryAdvance(t *testing.T, src []byte, d *Doc) {
	t.Helper()
	before := splitLines(string(src))
	for _, ri := range d.all() {
		r := &d.rows[ri]
		for _, target := range []Status{InProgress, Done} {
			for _, unordered := range []bool{false, true} {
				opts := []AdvanceOption{Stamp("2099-01-02 03:04")}
				if unordered {
					opts = append(opts, AllowUnordered())
				}
				if unordered && Rank(r.status) >= 0 {
					continue // the option changes nothing for an ordered row
				}
				fresh := d.clone()
				got, err := fresh.Advance(r.key, target, opts...)
				checkAdvance(t, before, d, fresh, r, target, unordered, got, err)
			}
		}
	}
}

// checkAdvance checks d, orig advanced as got and err say: a refusal or a no-op leaves
// its bytes as orig's, a change touches only the lines it must and parses back. Ablation:
// stamping last_updated on a no-op or a refused Advance makes it red.
func checkAdvance(t *testing.T, before []line, orig, d *Doc, r *row, target Status, unordered bool, got Status, err error) {
	t.Helper()
	after := splitLines(string(d.Bytes()))
	cur := r.status
	if err != nil {
		fe, re := refusedRow(err)
		switch {
		case re == nil:
			t.Fatalf("Advance(%q, %q) error = %v, want a refused row", r.key, target, err)
		case errors.Is(err, ErrUnorderedStatus) && (unordered || Rank(cur) >= 0):
			t.Fatalf("Advance(%q, %q) error = %v with current %q, unordered %v", r.key, target, err, cur, unordered)
		case fe != nil && r.refusal == "" && !r.unread:
			t.Fatalf("Advance(%q, %q) error = %v on a rewritable row", r.key, target, err)
		}
		if string(d.Bytes()) != string(orig.Bytes()) {
			t.Fatalf("Advance(%q, %q) failed but changed the board", r.key, target)
		}
		return
	}
	if Rank(cur) < 0 && !unordered {
		t.Fatalf("Advance(%q, %q) = %q on unordered %q without AllowUnordered", r.key, target, got, cur)
	}
	if Rank(cur) >= Rank(target) && Rank(cur) >= 0 {
		if changed := string(d.Bytes()) != string(orig.Bytes()); got != cur || changed {
			t.Fatalf("Advance(%q, %q) = %q (bytes changed %v), want %q and no change", r.key, target, got, changed, cur)
		}
	} else if got != target {
		t.Fatalf("Advance(%q, %q) = %q, want %q", r.key, target, got, target)
	}
	// Only the row's value line, the value line of its epic (keyed epic-<n> without
	// padding, as bmad-loop looks it up) when it lifts, and last_updated may change;
	// every terminator stays.
	allowed := map[int]bool{r.vline: true}
	lift := -1
	if es := orig.epics[r.epic]; r.kind == kindStory && target == InProgress && len(es) == 1 {
		if e := &orig.rows[es[0]]; e.key == fmt.Sprintf("epic-%d", r.epic) && e.status == Backlog && e.refusal == "" {
			lift = es[0]
			allowed[e.vline] = true
		}
	}
	if orig.lu > 0 {
		allowed[orig.rows[orig.lu-1].vline] = true
	}
	if len(after) != len(before) {
		t.Fatalf("Advance(%q, %q) changed the line count from %d to %d", r.key, target, len(before), len(after))
	}
	for i := range before {
		if before[i].term != after[i].term || before[i].text != after[i].text && !allowed[i] {
			t.Fatalf("Advance(%q, %q) changed line %d: %q -> %q", r.key, target, i+1, before[i], after[i])
		}
	}
	if string(d.Bytes()) == string(orig.Bytes()) {
		return
	}
	re, err := Parse(d.Bytes())
	if err != nil {
		t.Fatalf("Advance(%q, %q) produced a board that does not parse: %v", r.key, target, err)
	}
	if st, _ := re.Status(r.key); st != target {
		t.Fatalf("after Advance(%q, %q), reparsed Status = %q", r.key, target, st)
	}
	for _, oi := range orig.all() {
		o := &orig.rows[oi]
		if o.key == r.key {
			continue
		}
		want := o.status
		if oi == lift {
			want = InProgress
		}
		if st, _ := re.Status(o.key); st != want {
			t.Fatalf("after Advance(%q, %q), %q reads %q, want %q", r.key, target, o.key, st, want)
		}
	}
}

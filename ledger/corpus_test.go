package ledger

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/filetxn/filetxn/internal/testkit"
)

// corpusDir is the shared corpus's folder of ledgers (see package corpus); the
// tests skip when it is absent.
func corpusDir(t *testing.T) string { return testkit.Dir(t, "ledgers") }

// corpusFacts are what Python's own regexes say about each corpus file
// (HEADING_RE matches, open status lines, next_seq), computed once with
// CPython 3 and written down here.
var corpusFacts = map[string]struct {
	entries, open int
	next          string
}{
	"0Perera__rolo35.md":                         {0, 0, "DW-1"},
	"AA-Nassim__mediation_ar_greek_colors.md":    {0, 0, "DW-1"},
	"AShapira__geoserver-mcp.md":                 {0, 0, "DW-1"},
	"AhmedTElKodsh__N8N-SalesFlow-AI.md":         {0, 0, "DW-1"},
	"Hearn-Systems-LLC__oddspark.dev.md":         {5, 5, "DW-6"},
	"Hexalith__Hexalith.Parties.md":              {2, 2, "DW-3"},
	"Sallvainian__My-Love.md":                    {76, 37, "DW-77"},
	"brianmcentire__activity-battery-checker.md": {0, 0, "DW-1"},
	"egeozcan__mahresources.md":                  {0, 0, "DW-1"},
	"lzyking__Markdown-cat.md":                   {100, 18, "DW-113"},
	"mindcarver__aguhot.md":                      {0, 0, "DW-1"},
	"tgorka__keeper.md":                          {112, 99, "DW-113"},
}

func readCorpus(t *testing.T) map[string][]byte {
	t.Helper()
	dir := corpusDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files in %s: %v", dir, err)
	}
	out := make(map[string][]byte)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}

func TestCorpusParsesAndRoundTrips(t *testing.T) {
	for name, data := range readCorpus(t) {
		t.Run(name, func(t *testing.T) {
			d, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse error: %v", err)
			}
			if got := d.Bytes(); string(got) != string(data) {
				t.Fatalf("Bytes() differs from the file")
			}
			if enc, _ := new(codec).Encode(d); string(enc) != string(data) {
				t.Fatalf("Codec.Encode differs from the file")
			}
			es := d.Entries()
			facts, ok := corpusFacts[name]
			if !ok {
				t.Fatalf("no facts recorded for %s", name)
			}
			open := 0
			for _, e := range es {
				if e.Open() {
					open++
				}
			}
			if len(es) != facts.entries || open != facts.open || d.nextID() != facts.next {
				t.Errorf("entries, open, next = %d, %d, %s; want %d, %d, %s", len(es), open, d.nextID(), facts.entries, facts.open, facts.next)
			}
			// Entries are disjoint, in order, and each is exactly its slice of the text.
			at := 0
			for _, e := range es {
				if e.start < at || e.end < e.start || string(data[e.start:e.end]) != e.Body {
					t.Fatalf("entry %s [%d,%d) overlaps or misreports its body", e.ID, e.start, e.end)
				}
				at = e.end
			}
			if dups := d.duplicates(); len(dups) != 0 {
				t.Errorf("Duplicates() = %v", dups)
			}
		})
	}
}

func TestCorpusAppendKeepsEveryByte(t *testing.T) {
	for name, data := range readCorpus(t) {
		t.Run(name, func(t *testing.T) {
			d, _ := Parse(data)
			before := d.Entries()
			want := corpusFacts[name].next
			got, err := d.Append(Spec{Title: "appended by filetxn", Origin: "corpus test", SourceSpec: "spec-x.md", Reason: "r", Severity: "low"})
			if err != nil || got[0] != want {
				t.Fatalf("Append = %v, %v; want %s", got, err, want)
			}
			out := d.Bytes()
			if !strings.HasPrefix(string(out), string(data)) {
				t.Fatalf("Append changed existing bytes")
			}
			block := "### " + want + ": appended by filetxn\norigin: corpus test\nlocation: n/a\nsource_spec: `spec-x.md`\nseverity: low\nreason: r\nstatus: open\n"
			if rest := string(out[len(data):]); rest != separator(data)+block {
				t.Errorf("appended %q", rest)
			}
			re, err := Parse(out)
			if err != nil {
				t.Fatal(err)
			}
			after := re.Entries()
			if len(after) != len(before)+1 || after[len(after)-1].ID != want || !after[len(after)-1].Open() {
				t.Fatalf("after append: %d entries, want %d ending in open %s", len(after), len(before)+1, want)
			}
			for i := range before {
				if after[i].ID != before[i].ID || after[i].Status != before[i].Status || strings.TrimRight(after[i].Body, "\n") != strings.TrimRight(before[i].Body, "\n") {
					t.Errorf("entry %s changed by the append", before[i].ID)
				}
			}
			// The same append again dedupes against the open entry.
			if again, _ := re.Append(Spec{Title: "appended by filetxn", Origin: "corpus test", SourceSpec: "spec-x.md", Reason: "r"}); again[0] != "" || re.changed() {
				t.Errorf("replayed Append = %q, want deduped", again[0])
			}
		})
	}
}

// TestCorpusCloseAndReopenIsLossless closes every open entry of each real
// ledger reopenably, then reopens them all: the bytes come back exactly.
func TestCorpusCloseAndReopenIsLossless(t *testing.T) {
	for name, data := range readCorpus(t) {
		t.Run(name, func(t *testing.T) {
			d, _ := Parse(data)
			open := openIDs(d)
			closed, err := d.MarkDone(open, "2026-06-11", "swept", Reopenable(operationID))
			if err != nil || !slices.Equal(closed, open) {
				t.Fatalf("MarkDone = %v, %v; want %v", closed, err, open)
			}
			if len(openIDs(d)) != 0 {
				t.Errorf("still open: %v", openIDs(d))
			}
			reopened, err := d.MarkOpen(open, "swept", operationID)
			if err != nil || !slices.Equal(reopened, open) {
				t.Fatalf("MarkOpen = %v, %v; want %v", reopened, err, open)
			}
			if string(d.Bytes()) != string(data) {
				t.Errorf("close then reopen did not restore the file")
			}
		})
	}
}

// TestCorpusArchive archives each real ledger and checks that every moved
// body is in the archive, every id is still in the ledger, every stub is one
// bmad-loop's archiver reads as a stub (many real entries carry severity
// lines, which a stub must not), and a second run moves nothing.
func TestCorpusArchive(t *testing.T) {
	for name, data := range readCorpus(t) {
		t.Run(name, func(t *testing.T) {
			d, _ := Parse(data)
			want, _ := d.Archivable("")
			a := mustParse(t, "")
			moved, err := d.ArchiveInto(a, "", "2026-08-24")
			if err != nil || !slices.Equal(moved, want) {
				t.Fatalf("ArchiveInto = %v, %v; want %v", moved, err, want)
			}
			orig, _ := Parse(data)
			if got := ids(d); !slices.Equal(got, ids(orig)) {
				t.Errorf("ids changed by archiving")
			}
			if n := len(a.Entries()); n != len(moved) {
				t.Errorf("archive holds %d entries, want %d", n, len(moved))
			}
			for _, id := range moved {
				if e, _ := d.Entry(id); !isBmadStub(e.Body) {
					t.Errorf("stub of %s = %q, want one bmad-loop's grammar accepts", id, e.Body)
				}
			}
			if again, _ := d.ArchiveInto(a, "", "2026-08-25"); len(again) != 0 {
				t.Errorf("second run moved %v", again)
			}
		})
	}
}

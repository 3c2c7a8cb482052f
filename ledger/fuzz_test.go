package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/filetxn/filetxn"
)

func addSeeds(f *testing.F) {
	f.Add([]byte(ledgerFixture))
	f.Add([]byte(strings.ReplaceAll(ledgerFixture, "\n", "\r\n")))
	f.Add([]byte("### DW-1: x\r\rstatus: open\r"))
	f.Add([]byte("```\n### DW-9: quoted\n```\n### DW-1: a\nstatus: open\n- source_spec: `x`\n"))
	f.Add([]byte("### DW-2: t\n\nstatus: done 2026-05-25\nresolution: r\nresolution-undo: " + strings.Repeat("0", 64) + " 2026-05-25 7374617475733a206f70656e\narchived: 2026-08-24\n\n"))
	f.Add([]byte("\xff"))
	f.Add([]byte(""))
	if files, _ := filepath.Glob(filepath.Join("..", "..", "shared", "corpus", "ledgers", "*.md")); len(files) > 0 {
		for _, name := range files {
			if b, err := os.ReadFile(name); err == nil && len(b) < 8000 {
				f.Add(b)
			}
		}
	}
}

// FuzzDecodeEncode: for any bytes, Decode either refuses invalid UTF-8 with
// a *filetxn.FormatError or returns a Doc whose Encode is the input, byte
// for byte; and the entries it reports are disjoint slices of the text.
func FuzzDecodeEncode(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var c codec
		d, err := c.Decode(data)
		if err != nil {
			if !isInvalidUTF8(err, 0) || utf8.Valid([]byte(normalize(data))) {
				t.Fatalf("Decode(%q) = %v", data, err)
			}
			return
		}
		out, err := c.Encode(d)
		if err != nil || string(out) != string(data) {
			t.Fatalf("Encode(Decode(%q)) = %q, %v", data, out, err)
		}
		at := 0
		text := d.textString()
		for _, e := range d.Entries() {
			if e.start < at || e.end > len(text) || text[e.start:e.end] != e.Body || !strings.HasPrefix(e.Body, "### "+e.ID+": ") {
				t.Fatalf("entry %s [%d,%d) is not a disjoint slice of %q", e.ID, e.start, e.end, text)
			}
			at = e.end
		}
	})
}

// FuzzOperations runs every operation on arbitrary ledgers: none panics, an
// append keeps every existing byte and mints nextID, a close then reopen of the
// same operation restores the text, every stub archiving leaves is one
// bmad-loop's archiver reads as a stub, and every result reads back.
func FuzzOperations(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data)
		if err != nil {
			return
		}
		text := d.textString()
		var targets []string
		for _, e := range d.Entries() {
			targets = append(targets, e.ID)
		}

		next := d.nextID()
		got, err := d.Append(Spec{Title: "fuzz\nentry", Origin: "fuzz", SourceSpec: "f.md", Reason: "r"})
		if err != nil || !strings.HasPrefix(d.textString(), text) {
			t.Fatalf("Append = %v, %v; existing text changed", got, err)
		}
		if got[0] != "" && got[0] != next {
			t.Fatalf("Append minted %s, nextID said %s", got[0], next)
		}

		d = mustParse(t, text)
		var open []string
		for _, id := range targets {
			if e, _ := d.Entry(id); e.Open() {
				open = append(open, id)
			}
		}
		closed, err := d.MarkDone(targets, "2026-06-11", "fz", Reopenable("op"))
		if errors.As(err, new(*duplicateIDError)) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		reopened, err := d.MarkOpen(closed, "fz", "op")
		if err != nil || len(reopened) != len(closed) {
			t.Fatalf("MarkOpen(%v) = %v, %v", closed, reopened, err)
		}
		if d.textString() != text {
			t.Fatalf("close then reopen changed %q to %q", text, d.textString())
		}
		if len(closed) > len(open) {
			t.Fatalf("closed %v, only %v were open", closed, open)
		}

		for _, id := range targets {
			if err := d.RecordDecision(id, "2026-06-12", "l", "d"); err != nil {
				t.Fatal(err)
			}
			if _, err := d.MarkDone([]string{id}, "2026-06-12", "c"); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := d.MarkSeenAgain(targets, "2026-06-12", "again"); err != nil {
			t.Fatal(err)
		}
		a := mustParse(t, "")
		moved, err := d.ArchiveInto(a, "", "2026-08-24")
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := d.Archivable(""); len(again) != 0 {
			t.Fatalf("after archiving %v, still archivable: %v", moved, again)
		}
		for _, id := range moved {
			if e, _ := d.Entry(id); !isBmadStub(e.Body) {
				t.Fatalf("ArchiveInto left the stub %q, which bmad-loop's grammar does not accept", e.Body)
			}
		}
		m := mustParse(t, "")
		m.Merge(mustParse(t, text))
		if len(m.duplicates()) != 0 {
			t.Fatalf("Merge published duplicates %v", m.duplicates())
		}
		for _, doc := range []*Doc{d, a, m} {
			if re := mustParse(t, doc.textString()); re.textString() != doc.textString() || len(re.Entries()) != len(doc.Entries()) {
				t.Fatalf("result does not read back")
			}
		}
	})
}

// FuzzBatchIsSerial: on any ledger, each batched operation leaves the same
// bytes and returns the same results as the same operation applied to one id
// at a time (ids repeated, missing and present, in any order). The batches
// are computed as edits on one parse, the serial calls re-parse after each
// id. Ablation: dropping MarkSeenAgain's skip of an id repeated in the
// batch (so that it gets the line twice) turns the seeds red. Append is
// checked the same way with specs drawn from the text (see appendSpecs).
func FuzzBatchIsSerial(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data)
		if err != nil || len(d.duplicates()) != 0 {
			return
		}
		var ids []string
		for i, e := range d.Entries() {
			ids = append(ids, e.ID)
			if i%2 == 0 {
				ids = append(ids, e.ID) // repeated
			}
		}
		ids = append(ids, "DW-0", "DW-99999")
		slices.Reverse(ids[len(ids)/2:])
		text := d.textString()

		// run applies op to all ids at once and to one id at a time; op
		// returns one token per id it acted on.
		run := func(name string, op func(d *Doc, ids []string) []string) {
			b := mustParse(t, text)
			batch := op(b, ids)
			s := mustParse(t, text)
			var serial []string
			for _, id := range ids {
				serial = append(serial, op(s, []string{id})...)
			}
			if b.textString() != s.textString() {
				t.Fatalf("%s batch text differs from serial:\n%q\n%q", name, b.textString(), s.textString())
			}
			if !slices.Equal(batch, serial) {
				t.Fatalf("%s batch returned %q, serial %q", name, batch, serial)
			}
		}
		// MarkDone refuses a batch that names an id no entry carries, and
		// changes nothing; the known ids fold as the serial calls do.
		known := func(d *Doc, ids []string) []string {
			return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { _, ok := d.Entry(id); return !ok })
		}
		if u := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { _, ok := d.Entry(id); return ok }); len(u) > 0 {
			b := mustParse(t, text)
			if _, err := b.MarkDone(ids, "2026-06-11", "n"); !errors.Is(err, filetxn.ErrNotFound) || b.textString() != text {
				t.Fatalf("MarkDone(%v) with unknown %v = %v, changed %v; want filetxn.ErrNotFound and no change", ids, u, err, b.changed())
			}
		}
		run("MarkDone", func(d *Doc, ids []string) []string {
			got, _ := d.MarkDone(known(d, ids), "2026-06-11", "n")
			return got
		})
		run("MarkDone reopenable", func(d *Doc, ids []string) []string {
			got, _ := d.MarkDone(known(d, ids), "2026-06-11", "n", Reopenable("op"))
			return got
		})
		run("MarkSeenAgain", func(d *Doc, ids []string) []string {
			got, _ := d.MarkSeenAgain(ids, "2026-06-11", "n")
			return got
		})
		// Append: a batch of specs whose origins come from the text's origin
		// lines and from the batch itself (repeated, prefixes of one another,
		// cross-spec) mints and skips as the specs appended one at a time.
		// Ablation: mayHaveOrigin not searching the text after its
		// originSet's limit (the entries the batch added) turned the seeds
		// red.
		specs := appendSpecs(text)
		ab, as := mustParse(t, text), mustParse(t, text)
		batchIDs, berr := ab.Append(specs...)
		var serialIDs []string
		for _, sp := range specs {
			got, err := as.Append(sp)
			if err != nil {
				t.Fatalf("Append(%+v) = %v", sp, err)
			}
			serialIDs = append(serialIDs, got...)
		}
		if berr != nil || ab.textString() != as.textString() || !slices.Equal(batchIDs, serialIDs) {
			t.Fatalf("Append batch = %q, %v, serial %q; texts equal %v", batchIDs, berr, serialIDs, ab.textString() == as.textString())
		}
		// MarkOpen after a reopenable close of everything.
		closed := mustParse(t, text)
		closed.MarkDone(ids, "2026-06-11", "n", Reopenable("op"))
		b, s := mustParse(t, closed.textString()), mustParse(t, closed.textString())
		got, _ := b.MarkOpen(ids, "n", "op")
		var serialGot []string
		for _, id := range ids {
			g, _ := s.MarkOpen([]string{id}, "n", "op")
			serialGot = append(serialGot, g...)
		}
		if b.textString() != s.textString() || !slices.Equal(got, serialGot) || b.textString() != text {
			t.Fatalf("MarkOpen batch %v, serial %v; texts equal %v, restored %v", got, serialGot, b.textString() == s.textString(), b.textString() == text)
		}
	})
}

// appendSpecs returns specs for the Append check of FuzzBatchIsSerial: the
// values of text's origin and source_spec lines, raw and trimmed, with a few
// fixed ones, each appended twice and once more across specs.
func appendSpecs(text string) []Spec {
	var origins, sources []string
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, "origin:"); ok && len(origins) < 6 {
			origins = append(origins, v, strings.Trim(v, " \t`"))
		}
		if v, ok := strings.CutPrefix(line, "source_spec:"); ok && len(sources) < 4 {
			sources = append(sources, strings.Trim(v, " \t`"))
		}
	}
	origins = append(origins, "fuzz", "fuzz 1", "fuzz 10", "", "a\nb")
	sources = append(sources, "f.md", "")
	var specs []Spec
	for i, o := range origins {
		sp := Spec{Title: "batch", Origin: o, SourceSpec: sources[i%len(sources)], Reason: "r"}
		if sp.Origin == "" && sp.SourceSpec == "" {
			sp.SourceSpec = "f.md" // a spec with no identity is refused (TestAppendValidatesEverySpecFirst)
		}
		specs = append(specs, sp, sp)
		sp.SourceSpec += "x"
		sp.CrossSpecDedupe = i%2 == 0
		specs = append(specs, sp)
	}
	return specs
}

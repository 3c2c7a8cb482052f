package ledger

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/filetxn/filetxn"
)

// ledgerFixture is bmad-loop's test fixture LEDGER, verbatim (format section 1.8).
const ledgerFixture = `# Deferred Work

### DW-1: Harden unicode handling

origin: quick-dev split of spec-3-2-digest.md, 2026-06-01
location: src/strings.py:40
reason: out of scope for the digest story.
status: open

### DW-2: Old closed item

origin: code review of spec-1-1.md, 2026-05-20
location: src/foo.py:10
reason: pre-existing.
status: done 2026-05-25

### DW-3: Needs human decision

origin: code review of spec-2-2.md, 2026-06-05
location: src/retry.py:12
reason: auto-mode: needs human decision
status: open
seen-again: 2026-06-08 (code review of spec-2-3.md)
`

// operationID is bmad-loop's OPERATION_ID.
const operationID = "run-20260803T120000/dw-fix"

func mustParse(t interface {
	Helper()
	Fatalf(string, ...any)
}, text string) *Doc {
	t.Helper()
	d, err := Parse([]byte(text))
	if err != nil {
		t.Fatalf("Parse(%q) error: %v", text, err)
	}
	return d
}

func ids(d *Doc) []string {
	var out []string
	for _, e := range d.Entries() {
		out = append(out, e.ID)
	}
	return out
}

func TestFixtureParses(t *testing.T) {
	d := mustParse(t, ledgerFixture)
	es := d.Entries()
	if got, want := ids(d), []string{"DW-1", "DW-2", "DW-3"}; !slices.Equal(got, want) {
		t.Fatalf("ids = %v, want %v", got, want)
	}
	if es[0].Title != "Harden unicode handling" || !es[0].Open() {
		t.Errorf("DW-1 = %q open=%v, want its title and open", es[0].Title, es[0].Open())
	}
	if es[1].Open() || es[1].Status != "done 2026-05-25" || !es[1].Done() {
		t.Errorf("DW-2 status = %q, want done 2026-05-25", es[1].Status)
	}
	if !es[2].Open() {
		t.Errorf("DW-3 is not open; the seen-again line must not affect the status")
	}
	if got, want := openIDs(d), []string{"DW-1", "DW-3"}; !slices.Equal(got, want) {
		t.Errorf("open ids = %v, want %v", got, want)
	}
	if got := es[0].Body; !strings.HasPrefix(got, "### DW-1: Harden") || !strings.HasSuffix(got, "status: open\n\n") {
		t.Errorf("DW-1 body = %q", got)
	}
	if es[0].Line != 3 || es[0].statusLine != 8 {
		t.Errorf("DW-1 lines = %d, %d, want 3, 8", es[0].Line, es[0].statusLine)
	}
	if got := string(d.Bytes()); got != ledgerFixture {
		t.Errorf("Bytes() = %q, want the input", got)
	}
}

func TestParseToleratesFreeformSections(t *testing.T) {
	d := mustParse(t, "## Deferred from: code review of story 0.3 (2026-06-08)\n\n- W1-b — some freeform item with no DW format\n\n"+ledgerFixture)
	if got, want := openIDs(d), []string{"DW-1", "DW-3"}; !slices.Equal(got, want) {
		t.Errorf("open ids = %v, want %v", got, want)
	}
}

func TestEntryEndsAtNextSectionHeading(t *testing.T) {
	d := mustParse(t, ledgerFixture+"\n## Notes\n\nstatus: open\n")
	es := d.Entries()
	last := es[len(es)-1]
	if last.ID != "DW-3" || strings.Contains(last.Body, "## Notes") {
		t.Errorf("last entry = %s %q, want DW-3 without the Notes section", last.ID, last.Body)
	}
}

func TestEntryWithoutStatusIsMalformed(t *testing.T) {
	d := mustParse(t, "### DW-7: Malformed entry\n\norigin: somewhere\n")
	e, ok := d.Entry("DW-7")
	if !ok || e.Status != "" || e.Open() || e.Done() || e.statusLine != 0 {
		t.Errorf("Entry(DW-7) = %+v, %v; want status \"\", malformed", e, ok)
	}
	if got := openIDs(d); len(got) != 0 {
		t.Errorf("open ids = %v, want none", got)
	}
}

func TestPlainCloseBytes(t *testing.T) {
	d := mustParse(t, "### DW-1: standard\n\nstatus: open\n")
	got, err := d.MarkDone([]string{"DW-1"}, "2026-06-11", "by dw-a")
	if err != nil || !slices.Equal(got, []string{"DW-1"}) {
		t.Fatalf("MarkDone = %v, %v; want [DW-1]", got, err)
	}
	if want := "### DW-1: standard\n\nstatus: done 2026-06-11\nresolution: by dw-a\n"; d.textString() != want {
		t.Errorf("text = %q, want %q", d.textString(), want)
	}
}

func TestMarkDoneTouchesOnlyTarget(t *testing.T) {
	d := mustParse(t, ledgerFixture)
	if got, _ := d.MarkDone([]string{"DW-1"}, "2026-06-11", "guards added in src/strings.py"); len(got) != 1 {
		t.Fatalf("MarkDone(DW-1) = %v", got)
	}
	e1, _ := d.Entry("DW-1")
	e2, _ := d.Entry("DW-2")
	e3, _ := d.Entry("DW-3")
	if e1.Status != "done 2026-06-11" || !strings.Contains(e1.Body, "resolution: guards added in src/strings.py") {
		t.Errorf("DW-1 = %q", e1.Body)
	}
	if !e3.Open() || strings.Contains(e3.Body, "resolution:") || e2.Status != "done 2026-05-25" {
		t.Errorf("other entries changed: %q %q", e2.Body, e3.Body)
	}
	if want := strings.Replace(ledgerFixture, "status: open\n\n### DW-2", "status: done 2026-06-11\nresolution: guards added in src/strings.py\n\n### DW-2", 1); d.textString() != want {
		t.Errorf("text = %q, want %q", d.textString(), want)
	}
}

func TestMarkDoneIsIdempotent(t *testing.T) {
	d := mustParse(t, ledgerFixture)
	d.MarkDone([]string{"DW-1"}, "2026-06-11", "fixed")
	snap := d.textString()
	for _, id := range []string{"DW-1", "DW-2"} {
		got, err := d.MarkDone([]string{id}, "2026-06-12", "fixed again")
		if err != nil || len(got) != 0 || d.textString() != snap {
			t.Errorf("MarkDone(%s) = %v, %v and text changed=%v; want no-op", id, got, err, d.textString() != snap)
		}
	}
	// A typo is not a replay: an id no entry carries fails the whole call.
	if got, err := d.MarkDone([]string{"DW-3", "DW-99"}, "2026-06-12", "x"); !errors.Is(err, filetxn.ErrNotFound) || !strings.Contains(err.Error(), "DW-99") || d.textString() != snap {
		t.Errorf("MarkDone(DW-3, DW-99) = %v, %v and text changed=%v; want filetxn.ErrNotFound naming DW-99 and no change", got, err, d.textString() != snap)
	}
	// A repeated id in one batch flips once.
	d = mustParse(t, ledgerFixture)
	got, _ := d.MarkDone([]string{"DW-3", "DW-3"}, "2026-06-11", "x")
	if !slices.Equal(got, []string{"DW-3"}) || strings.Count(d.textString(), "resolution: x") != 1 {
		t.Errorf("MarkDone([DW-3 DW-3]) = %v with %d resolutions", got, strings.Count(d.textString(), "resolution: x"))
	}
}

func TestUnchangedDocKeepsItsBytes(t *testing.T) {
	crlf := strings.ReplaceAll(ledgerFixture, "\n", "\r\n")
	d := mustParse(t, crlf)
	if got := openIDs(d); !slices.Equal(got, []string{"DW-1", "DW-3"}) {
		t.Errorf("open ids of a CRLF ledger = %v", got)
	}
	d.MarkDone([]string{"DW-2"}, "2026-06-11", "noop") // done already: nothing changes
	if string(d.Bytes()) != crlf || d.changed() {
		t.Errorf("Bytes() of an unchanged CRLF ledger lost its CRLFs")
	}
	d.MarkDone([]string{"DW-1"}, "2026-06-11", "x")
	if strings.Contains(string(d.Bytes()), "\r") {
		t.Errorf("a changed ledger is written with CR: %q", d.Bytes())
	}
	// Lone CR reads as LF too.
	d = mustParse(t, "### DW-1: cr\r\rstatus: open\r")
	if got := openIDs(d); !slices.Equal(got, []string{"DW-1"}) {
		t.Errorf("open ids of a CR ledger = %v", got)
	}
}

func TestReopenableCloseWritesAdjacentMarker(t *testing.T) {
	d := mustParse(t, ledgerFixture)
	got, err := d.MarkDone([]string{"DW-1"}, "2026-06-11", "by dw-a", Reopenable(operationID))
	if err != nil || !slices.Equal(got, []string{"DW-1"}) {
		t.Fatalf("MarkDone(Reopenable) = %v, %v", got, err)
	}
	e, _ := d.Entry("DW-1")
	lines := strings.Split(e.Body, "\n")
	at := slices.Index(lines, "status: done 2026-06-11")
	if at < 0 || lines[at+1] != "resolution: by dw-a" || !strings.HasPrefix(lines[at+2], "resolution-undo: ") {
		t.Fatalf("body = %q, want status, resolution, resolution-undo", e.Body)
	}
	f := strings.Fields(lines[at+2])
	want := []string{"resolution-undo:", operationDigest(operationID), "2026-06-11", "7374617475733a206f70656e"}
	if !slices.Equal(f, want) {
		t.Errorf("undo line = %v, want %v", f, want)
	}
}

func TestMarkOpenRestoresTheOriginalCharacterForCharacter(t *testing.T) {
	for _, tc := range []struct{ name, text, note string }{
		{"fixture", ledgerFixture, "resolved by sweep bundle dw-fix"},
		{"spaced", "### DW-1: formatted\n\norigin: session\nstatus:   open\n", "by dw-a"},
		{"annotated", "### DW-1: formatted\n\norigin: session\nstatus: open # keep this annotation\n", "by dw-a"},
		{"tabbed", "### DW-1: formatted\n\norigin: session\nstatus:\topen   # annotated\n", "by dw-a"},
		{"padded note", ledgerFixture, "  padded note  "},
		{"multiline note", ledgerFixture, "line one\nline two"},
		{"no final newline", "### DW-1: eof\nstatus: open", "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustParse(t, tc.text)
			if got, _ := d.MarkDone([]string{"DW-1"}, "2026-06-11", tc.note, Reopenable(operationID)); len(got) != 1 {
				t.Fatalf("MarkDone = %v", got)
			}
			got, err := d.MarkOpen([]string{"DW-1"}, tc.note, operationID)
			if err != nil || !slices.Equal(got, []string{"DW-1"}) {
				t.Fatalf("MarkOpen = %v, %v; want [DW-1]", got, err)
			}
			if d.textString() != tc.text {
				t.Errorf("after close+reopen text = %q, want %q", d.textString(), tc.text)
			}
			if got, _ := d.MarkOpen([]string{"DW-1"}, tc.note, operationID); len(got) != 0 {
				t.Errorf("second MarkOpen = %v, want nothing", got)
			}
		})
	}
}

func TestReopenableCloseRefusesALineBreakInTheStatusLine(t *testing.T) {
	text := "### DW-1: unsafe\n\nstatus: open\u2028injected: value\n"
	d := mustParse(t, text)
	if got, _ := d.MarkDone([]string{"DW-1"}, "2026-06-11", "by dw-a", Reopenable(operationID)); len(got) != 0 || d.textString() != text {
		t.Errorf("MarkDone(Reopenable) = %v, text %q; want refused", got, d.textString())
	}
	if got, _ := d.MarkDone([]string{"DW-1"}, "2026-06-11", "by dw-a"); len(got) != 1 {
		t.Errorf("plain MarkDone = %v, want [DW-1]", got)
	}
}

func TestOperationIDLineBreaksStayInsideTheMarker(t *testing.T) {
	op := "run-20260803\nreview\u2028dw-fix"
	d := mustParse(t, ledgerFixture)
	d.MarkDone([]string{"DW-1"}, "2026-06-11", "by dw-a", Reopenable(op))
	if strings.Contains(d.textString(), op) || strings.Count(d.textString(), "\nresolution-undo: ") != 1 {
		t.Errorf("text = %q", d.textString())
	}
	if got, _ := d.MarkOpen([]string{"DW-1"}, "by dw-a", op); len(got) != 1 {
		t.Errorf("MarkOpen = %v, want [DW-1]", got)
	}
}

func TestMarkOpenRefuses(t *testing.T) {
	closed := func(t *testing.T, text, note, op string) string {
		d := mustParse(t, text)
		if got, _ := d.MarkDone([]string{"DW-1"}, "2026-06-11", note, Reopenable(op)); len(got) != 1 {
			t.Fatalf("setup close = %v", got)
		}
		return d.textString()
	}
	replaceUndoPayload := func(t *testing.T, payload string) string {
		s := closed(t, ledgerFixture, "by dw-a", operationID)
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "resolution-undo: ") {
				lines[i] = l[:strings.LastIndexByte(l, ' ')+1] + payload
			}
		}
		return strings.Join(lines, "\n")
	}
	hexOf := func(s string) string { return strings.ToLower(strings.TrimSpace(hexString(s))) }
	for _, tc := range []struct {
		name, text, id, note, op string
	}{
		{"missing entry", ledgerFixture, "DW-99", "by dw-a", operationID},
		{"still open with a resolution", "### DW-1: partially handled\n\nstatus: open\nresolution: by dw-a\n", "DW-1", "by dw-a", operationID},
		{"status-less", "### DW-1: malformed but tolerated\n\norigin: session\nresolution: by dw-a\n", "DW-1", "by dw-a", operationID},
		{"noncanonical status", "### DW-1: m\n\nstatus: malformed\nresolution: by dw-a\n", "DW-1", "by dw-a", operationID},
		{"undated done", "### DW-1: m\n\nstatus: done someday\nresolution: by dw-a\n", "DW-1", "by dw-a", operationID},
		{"impossible date", "### DW-1: m\n\nstatus: done 2026-02-30\nresolution: by dw-a\n", "DW-1", "by dw-a", operationID},
		{"closed without resolution", ledgerFixture, "DW-2", "", operationID},
		{"plain close with the same note", strings.Replace(ledgerFixture, "status: open\n\n### DW-2", "status: done 2026-06-11\nresolution: by dw-a\n\n### DW-2", 1), "DW-1", "by dw-a", operationID},
		{"another operation", closed(t, ledgerFixture, "by dw-a", "earlier-run/dw-fix"), "DW-1", "by dw-a", operationID},
		{"another note", closed(t, ledgerFixture, "by dw-a", operationID), "DW-1", "by dw-b", operationID},
		{"tampered status date", strings.Replace(closed(t, ledgerFixture, "by dw-a", operationID), "status: done 2026-06-11", "status: done 2026-06-12", 1), "DW-1", "by dw-a", operationID},
		{"tampered marker date", strings.Replace(closed(t, ledgerFixture, "by dw-a", operationID), " 2026-06-11 7374", " 2026-06-12 7374", 1), "DW-1", "by dw-a", operationID},
		{"decision between resolution and marker", strings.Replace(closed(t, ledgerFixture, "by dw-a", operationID), "\nresolution-undo:", "\ndecision: 2026-06-11 keep\nresolution-undo:", 1), "DW-1", "by dw-a", operationID},
		{"decision between status and resolution", strings.Replace(closed(t, "### DW-1: x\n\nstatus: open\n", "by dw-a", operationID), "\nresolution: by dw-a", "\ndecision: 2026-06-11 keep\nresolution: by dw-a", 1), "DW-1", "by dw-a", operationID},
		{"payload not hex", replaceUndoPayload(t, "not-hex"), "DW-1", "by dw-a", operationID},
		{"payload not UTF-8", replaceUndoPayload(t, "ff"), "DW-1", "by dw-a", operationID},
		{"payload odd length", replaceUndoPayload(t, "abc"), "DW-1", "by dw-a", operationID},
		{"payload not open", replaceUndoPayload(t, hexOf("status: done 2026-06-11")), "DW-1", "by dw-a", operationID},
		{"payload with newline", replaceUndoPayload(t, hexOf("status: open\ninjected: value")), "DW-1", "by dw-a", operationID},
		{"payload with U+2028", replaceUndoPayload(t, hexOf("status: open\u2028injected: value")), "DW-1", "by dw-a", operationID},
		{"payload not a status line", replaceUndoPayload(t, hexOf("open")), "DW-1", "by dw-a", operationID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustParse(t, tc.text)
			got, err := d.MarkOpen([]string{tc.id}, tc.note, tc.op)
			if tc.name == "missing entry" && errors.Is(err, filetxn.ErrNotFound) {
				err = nil // an id no entry carries is refused with an error
			}
			if err != nil || len(got) != 0 || d.textString() != tc.text {
				t.Errorf("MarkOpen(%s) = %v, %v, changed=%v; want refused", tc.id, got, err, d.textString() != tc.text)
			}
		})
	}
}

func TestMarkOpenToleratesReflowedResolutionWhitespace(t *testing.T) {
	d := mustParse(t, "### DW-1: closed then reflowed\n\nstatus: open\n")
	d.MarkDone([]string{"DW-1"}, "2026-06-11", "by dw-a", Reopenable(operationID))
	d = mustParse(t, strings.Replace(d.textString(), "resolution: by dw-a", "resolution:   by dw-a  ", 1))
	if got, _ := d.MarkOpen([]string{"DW-1"}, "by dw-a", operationID); len(got) != 1 {
		t.Fatalf("MarkOpen = %v, want [DW-1]", got)
	}
	if e, _ := d.Entry("DW-1"); !e.Open() || strings.Contains(e.Body, "resolution:") {
		t.Errorf("DW-1 = %q", e.Body)
	}
}

func TestMarkOpenReopensOnlyThisOperationsCloses(t *testing.T) {
	d := mustParse(t, ledgerFixture)
	note := "resolved by story 1-1"
	d.MarkDone([]string{"DW-1"}, "2026-06-11", note, Reopenable("earlier-run/dw-fix"))
	got, _ := d.MarkDone([]string{"DW-1", "DW-3"}, "2026-06-11", note, Reopenable(operationID))
	if !slices.Equal(got, []string{"DW-3"}) {
		t.Fatalf("MarkDone = %v, want [DW-3]", got)
	}
	got, _ = d.MarkOpen([]string{"DW-1", "DW-3"}, note, operationID)
	if !slices.Equal(got, []string{"DW-3"}) {
		t.Errorf("MarkOpen = %v, want [DW-3]", got)
	}
	if e, _ := d.Entry("DW-1"); e.Status != "done 2026-06-11" {
		t.Errorf("DW-1 status = %q", e.Status)
	}
}

func TestMarkOpenManyMatchesSerialBytes(t *testing.T) {
	seed := func() *Doc {
		d := mustParse(t, ledgerFixture)
		d.MarkDone([]string{"DW-1", "DW-3"}, "2026-06-11", "by dw-a", Reopenable(operationID))
		return d
	}
	batch := seed()
	got, err := batch.MarkOpen([]string{"DW-1", "DW-2", "DW-3"}, "by dw-a", operationID)
	if err != nil || !slices.Equal(got, []string{"DW-1", "DW-3"}) {
		t.Fatalf("MarkOpen = %v, %v; want [DW-1 DW-3]", got, err)
	}
	serial := seed()
	for _, id := range []string{"DW-1", "DW-2", "DW-3"} {
		serial.MarkOpen([]string{id}, "by dw-a", operationID)
	}
	if batch.textString() != serial.textString() || batch.textString() != ledgerFixture {
		t.Errorf("batch = %q\nserial = %q", batch.textString(), serial.textString())
	}
	// Nothing eligible: nothing changes.
	again, _ := batch.MarkOpen([]string{"DW-1", "DW-2", "DW-3"}, "by dw-a", operationID)
	if len(again) != 0 || batch.changed() {
		t.Errorf("MarkOpen with nothing eligible = %v, changed = %v", again, batch.changed())
	}
}

func TestRecordDecision(t *testing.T) {
	t.Run("then close", func(t *testing.T) {
		// A decision then a close keeps the resolution line under the status line.
		d := mustParse(t, ledgerFixture)
		if err := d.RecordDecision("DW-1", "2026-06-11", "fix now", "worth the churn"); err != nil {
			t.Fatalf("RecordDecision = %v", err)
		}
		if closed, err := d.MarkDone([]string{"DW-1"}, "2026-06-11", "closed by decision"); err != nil || !slices.Equal(closed, []string{"DW-1"}) {
			t.Fatalf("MarkDone after RecordDecision = %v, %v, want [DW-1]", closed, err)
		}
		e, _ := d.Entry("DW-1")
		want := "status: done 2026-06-11\nresolution: closed by decision\ndecision: 2026-06-11 fix now — worth the churn\n"
		if !strings.Contains(e.Body, want) {
			t.Errorf("DW-1 = %q, want it to contain %q", e.Body, want)
		}
	})
	t.Run("without close", func(t *testing.T) {
		d := mustParse(t, ledgerFixture)
		d.RecordDecision("DW-3", "2026-06-11", "defer", "next sprint")
		want := strings.Replace(ledgerFixture, "status: open\nseen-again", "status: open\ndecision: 2026-06-11 defer — next sprint\nseen-again", 1)
		if d.textString() != want {
			t.Errorf("text = %q, want %q", d.textString(), want)
		}
	})
	t.Run("no status line, blank title", func(t *testing.T) {
		// The line goes under the heading, whose blanks make it a heading:
		// trimming them would turn the entry into prose (FuzzOperations'
		// seed 7b46e7745ff45889).
		for _, text := range []string{"### DW-0:  ", "### DW-0: t  \n\n"} {
			d := mustParse(t, text)
			if err := d.RecordDecision("DW-0", "2026-06-11", "l", ""); err != nil {
				t.Fatalf("RecordDecision(DW-0) on %q = %v", text, err)
			}
			heading, _, _ := strings.Cut(text, "\n")
			if want := heading + "\ndecision: 2026-06-11 l"; !strings.HasPrefix(d.textString(), want) {
				t.Errorf("RecordDecision(DW-0) on %q = %q, want it to start %q", text, d.textString(), want)
			}
			if _, ok := d.Entry("DW-0"); !ok {
				t.Errorf("Entry(DW-0) after RecordDecision on %q = missing, want the entry", text)
			}
		}
	})
	t.Run("empty detail", func(t *testing.T) {
		d := mustParse(t, "### DW-1: x\nstatus: open\n")
		d.RecordDecision("DW-1", "2026-06-11", "Close", "\n")
		if want := "### DW-1: x\nstatus: open\ndecision: 2026-06-11 Close\n"; d.textString() != want {
			t.Errorf("text = %q, want %q", d.textString(), want)
		}
	})
	t.Run("done entry", func(t *testing.T) {
		d := mustParse(t, ledgerFixture)
		err := d.RecordDecision("DW-2", "2026-06-11", "keep", "")
		closed, _ := d.MarkDone([]string{"DW-2"}, "2026-06-11", "again")
		e, _ := d.Entry("DW-2")
		if ok := err == nil; !ok || len(closed) != 0 || e.Status != "done 2026-05-25" || strings.Contains(e.Body, "resolution") || !strings.Contains(e.Body, "decision: 2026-06-11 keep\n") {
			t.Errorf("RecordDecision on done = %v, body %q", ok, e.Body)
		}
	})
	t.Run("missing entry", func(t *testing.T) {
		d := mustParse(t, ledgerFixture)
		if err := d.RecordDecision("DW-99", "2026-06-11", "x", "y"); !errors.Is(err, filetxn.ErrNotFound) || !strings.Contains(err.Error(), "DW-99") || d.changed() {
			t.Errorf("RecordDecision(DW-99) = %v, want filetxn.ErrNotFound naming DW-99", err)
		}
	})
	t.Run("status-less entry", func(t *testing.T) {
		d := mustParse(t, "### DW-7: Malformed entry\n\norigin: somewhere\n\n## Next\n")
		d.RecordDecision("DW-7", "2026-06-11", "keep", "")
		if want := "### DW-7: Malformed entry\n\norigin: somewhere\ndecision: 2026-06-11 keep\n\n## Next\n"; d.textString() != want {
			t.Errorf("text = %q, want %q", d.textString(), want)
		}
	})
}

func TestMarkSeenAgain(t *testing.T) {
	d := mustParse(t, ledgerFixture)
	res, err := d.MarkSeenAgain([]string{"DW-1", "DW-2", "DW-99", "DW-3"}, "2026-06-08", "code review of spec-2-3.md")
	if err != nil {
		t.Fatal(err)
	}
	// DW-2 is done and DW-99 missing (both to be filed afresh); DW-3 already
	// carries the line (a replay).
	if want := []string{"DW-1"}; !slices.Equal(res, want) {
		t.Errorf("MarkSeenAgain(DW-1 DW-2 DW-99 DW-3) = %v, want %v", res, want)
	}
	e, _ := d.Entry("DW-1")
	if !strings.Contains(e.Body, "status: open\nseen-again: 2026-06-08 (code review of spec-2-3.md)\n") {
		t.Errorf("DW-1 = %q", e.Body)
	}
}

package ledger

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/filetxn/filetxn"
)

// archiveOnce runs ArchiveInto on fresh parses of ledger and archive text and
// returns the new texts and the ids moved.
func archiveOnce(t *testing.T, ledger, archive, before, stamp string) (string, string, []string) {
	t.Helper()
	d, a := mustParse(t, ledger), mustParse(t, archive)
	ids, err := d.ArchiveInto(a, before, stamp)
	if err != nil {
		t.Fatalf("ArchiveInto(%q, %q) error: %v", before, stamp, err)
	}
	return d.textString(), a.textString(), ids
}

func TestArchiveFixture(t *testing.T) {
	ledger, archive, ids := archiveOnce(t, ledgerFixture, "", "", "2026-08-24")
	if !slices.Equal(ids, []string{"DW-2"}) {
		t.Fatalf("ids = %v, want [DW-2]", ids)
	}
	stub := "### DW-2: Old closed item\n\nstatus: done 2026-05-25\norigin: code review of spec-1-1.md, 2026-05-20\narchived: 2026-08-24\n\n"
	i, j := strings.Index(ledgerFixture, "### DW-2"), strings.Index(ledgerFixture, "### DW-3")
	if want := ledgerFixture[:i] + stub + ledgerFixture[j:]; ledger != want {
		t.Errorf("ledger = %q\nwant     %q", ledger, want)
	}
	body := ledgerFixture[i:j]
	if want := strings.Replace(body, "status: done 2026-05-25\n", "status: done 2026-05-25\narchived: 2026-08-24\n", 1); archive != want {
		t.Errorf("archive = %q\nwant      %q", archive, want)
	}
	ledger2, archive2, ids2 := archiveOnce(t, ledger, archive, "", "2026-08-25")
	if len(ids2) != 0 || ledger2 != ledger || archive2 != archive {
		t.Errorf("second run = %v, changed ledger=%v archive=%v; want nothing", ids2, ledger2 != ledger, archive2 != archive)
	}
	if e, ok := mustParse(t, ledger).Entry("DW-2"); !ok || !e.Done() {
		t.Errorf("Entry(DW-2) = %+v, %v, want a done entry (its stub)", e, ok)
	}
}

func TestArchiveEligibility(t *testing.T) {
	entry := func(status string) string { return "### DW-1: x\n\nstatus: " + status + "\n" }
	for _, tc := range []struct {
		name, ledger, before string
		want                 []string
	}{
		{"cutoff day excluded", entry("done 2026-05-25"), "2026-05-25", nil},
		{"day before cutoff", entry("done 2026-05-25"), "2026-05-26", []string{"DW-1"}},
		{"no cutoff", entry("done 2026-05-25"), "", []string{"DW-1"}},
		{"extra token", entry("done 2026-05-25 junk"), "", nil},
		{"no date", entry("done"), "", nil},
		{"impossible date", entry("done 2026-02-30"), "", nil},
		{"open", entry("open"), "", nil},
		{"malformed", entry("closed 2026-05-25"), "", nil},
		{"status-less", "### DW-1: x\n\norigin: y\n", "", nil},
		{"hand-written archived line", entry("done 2026-05-25") + "archived: someday\nreason: still here\n", "", []string{"DW-1"}},
		{"padded status", "### DW-1: x\n\nstatus:   done  2026-05-25  \n", "", []string{"DW-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustParse(t, tc.ledger)
			got, err := d.Archivable(tc.before)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("Archivable(%q) = %v, %v; want %v", tc.before, got, err, tc.want)
			}
			if d.changed() {
				t.Errorf("Archivable changed the text")
			}
			_, _, ids := archiveOnce(t, tc.ledger, "", tc.before, "2026-08-24")
			if !slices.Equal(ids, tc.want) {
				t.Errorf("ArchiveInto = %v, want %v", ids, tc.want)
			}
		})
	}
}

// TestArchiveValidatesDates: a bad before or stamp is refused with
// filetxn.ErrInvalidArgument, naming the Doc operation called (not the
// Store's Archive), the argument and the value, and changes nothing.
func TestArchiveValidatesDates(t *testing.T) {
	d := mustParse(t, ledgerFixture)
	if _, err := d.Archivable("2026-13-01"); !isArg(err, "Archivable", "before", "2026-13-01") {
		t.Errorf("Archivable(bad) = %v, want filetxn.ErrInvalidArgument naming Archivable's before", err)
	}
	if _, err := d.ArchiveInto(mustParse(t, ""), "", "today"); !isArg(err, "ArchiveInto", "stamp", "today") {
		t.Errorf("ArchiveInto(stamp today) = %v, want filetxn.ErrInvalidArgument naming ArchiveInto's stamp", err)
	}
	if _, err := d.ArchiveInto(mustParse(t, ""), "", ""); !isArg(err, "ArchiveInto", "stamp", "") {
		t.Errorf("ArchiveInto(no stamp) = %v, want filetxn.ErrInvalidArgument naming ArchiveInto's stamp", err)
	}
	if _, err := d.ArchiveInto(mustParse(t, ""), "2026-02-30", "2026-08-24"); !isArg(err, "ArchiveInto", "before", "2026-02-30") || d.changed() {
		t.Errorf("ArchiveInto(before bad) = %v, want filetxn.ErrInvalidArgument naming ArchiveInto's before", err)
	}
}

// TestArchiveCrashRecovery: a run that wrote the archive and died before the
// ledger write is completed by the next run without a second copy of any body,
// and the stubs carry the first run's stamp.
func TestArchiveCrashRecovery(t *testing.T) {
	_, archive, ids := archiveOnce(t, ledgerFixture, "", "", "2026-08-24")
	if len(ids) != 1 {
		t.Fatal(ids)
	}
	// Crash: the ledger was never written. The retry runs on a later day.
	ledger, archive2, ids2 := archiveOnce(t, ledgerFixture, archive, "", "2026-08-30")
	if !slices.Equal(ids2, []string{"DW-2"}) {
		t.Errorf("retry ids = %v, want [DW-2]", ids2)
	}
	if archive2 != archive {
		t.Errorf("retry appended to the archive: %q", archive2[len(archive):])
	}
	if !strings.Contains(ledger, "archived: 2026-08-24\n") || strings.Contains(ledger, "2026-08-30") {
		t.Errorf("retry stub = %q, want the first run's stamp", ledger)
	}
	// A body that changed since (a decision recorded after the crashed run) is
	// archived again rather than dropped.
	d := mustParse(t, ledgerFixture)
	d.RecordDecision("DW-2", "2026-08-25", "keep", "")
	_, archive3, _ := archiveOnce(t, d.textString(), archive, "", "2026-08-30")
	if strings.Count(archive3, "### DW-2") != 2 || !strings.Contains(archive3, "decision: 2026-08-25 keep") {
		t.Errorf("archive = %q, want a second, different block", archive3)
	}
}

func TestArchiveIgnoresFencedLines(t *testing.T) {
	// A quoted archived: line in an archive block does not make it a twin.
	archive := "### DW-2: Old closed item\n\norigin: code review of spec-1-1.md, 2026-05-20\nlocation: src/foo.py:10\nreason: pre-existing.\nstatus: done 2026-05-25\n```\narchived: 2026-08-24\n```\n"
	_, archive2, _ := archiveOnce(t, ledgerFixture, archive, "", "2026-08-24")
	if strings.Count(archive2, "### DW-2") != 2 {
		t.Errorf("archive = %q, want the body appended", archive2)
	}
	// A quoted heading is not an entry and a quoted origin: is not preserved.
	ledger := "### DW-1: real\n\norigin: live\nstatus: done 2026-05-25\n~~~\n### DW-9: quoted\norigin: quoted\nstatus: done 2026-01-01\n~~~\n"
	got, _, ids := archiveOnce(t, ledger, "", "", "2026-08-24")
	if !slices.Equal(ids, []string{"DW-1"}) {
		t.Errorf("ids = %v, want [DW-1]", ids)
	}
	if want := "### DW-1: real\n\nstatus: done 2026-05-25\norigin: live\narchived: 2026-08-24\n\n"; got != want {
		t.Errorf("ledger = %q, want %q", got, want)
	}
}

func TestArchivePreservesLoadBearingLines(t *testing.T) {
	ledger := "### DW-1: gated\n\norigin: o\nlocation: l\nsource_spec: `s.md`\nseverity: high\n- **Priority:** low\ngate: 3-2, 3-3\nreason: r\nstatus: open\n\n### DW-2: next\nstatus: open\n"
	d := mustParse(t, ledger)
	d.MarkDone([]string{"DW-1"}, "2026-06-11", "by dw-a", Reopenable(operationID))
	closed := d.textString()
	a := mustParse(t, "")
	if ids, _ := d.ArchiveInto(a, "", "2026-08-24"); !slices.Equal(ids, []string{"DW-1"}) {
		t.Fatalf("ids = %v", ids)
	}
	e, _ := d.Entry("DW-1")
	undo := closed[strings.Index(closed, "resolution-undo:"):]
	undo = undo[:strings.IndexByte(undo, '\n')]
	want := "### DW-1: gated\n\nstatus: done 2026-06-11\nresolution: by dw-a\n" + undo + "\norigin: o\nsource_spec: `s.md`\ngate: 3-2, 3-3\narchived: 2026-08-24\n\n"
	if e.Body != want {
		t.Errorf("stub = %q\nwant   %q", e.Body, want)
	}
	// The severity stays with the body in the archive, not in the stub.
	if e.Severity != "" {
		t.Errorf("stub severity = %q, want \"\"", e.Severity)
	}
	if ae := a.Entries(); len(ae) != 1 || ae[0].Severity != "high" {
		t.Errorf("archived severity = %v, want one block with severity high", ae)
	}
	// The stub keeps the undo tail, so the reopen still works, and its
	// archived: line is demoted to point at the archived body.
	got, _ := d.MarkOpen([]string{"DW-1"}, "by dw-a", operationID)
	e, _ = d.Entry("DW-1")
	if !slices.Equal(got, []string{"DW-1"}) || !e.Open() || !strings.Contains(e.Body, "\narchived-body: 2026-08-24\n") || strings.Contains(e.Body, "\narchived:") {
		t.Errorf("MarkOpen after archive = %v, body %q", got, e.Body)
	}
	// A stub written by this package is recognized as one: nothing to do.
	d2 := mustParse(t, closed)
	d2.ArchiveInto(mustParse(t, ""), "", "2026-08-24")
	if again, _ := d2.Archivable(""); len(again) != 0 {
		t.Errorf("Archivable after archiving = %v, want none", again)
	}
}

func TestArchiveTabSeparatedUndoTailConverges(t *testing.T) {
	d := mustParse(t, "### DW-1: x\n\nstatus: open\n")
	d.MarkDone([]string{"DW-1"}, "2026-06-11", "n", Reopenable(operationID))
	tabbed := strings.Replace(strings.Replace(d.textString(), "resolution-undo: ", "resolution-undo:\t", 1), " 2026-06-11 ", "\t2026-06-11\t", 1)
	ledger, archive, ids := archiveOnce(t, tabbed, "", "", "2026-08-24")
	if len(ids) != 1 {
		t.Fatalf("ids = %v", ids)
	}
	if _, _, again := archiveOnce(t, ledger, archive, "", "2026-08-25"); len(again) != 0 {
		t.Errorf("second run = %v, want none", again)
	}
}

// TestArchiveReclose: reopen, close again and archive again; the archive holds
// one block per closure, in closure order, and the reopened entry's
// archived-body: line names exactly one of them.
func TestArchiveReclose(t *testing.T) {
	d := mustParse(t, "### DW-1: x\n\norigin: o\nstatus: open\n")
	a := mustParse(t, "")
	d.MarkDone([]string{"DW-1"}, "2026-06-11", "first", Reopenable(operationID))
	d.ArchiveInto(a, "", "2026-08-24")
	d.MarkOpen([]string{"DW-1"}, "first", operationID)
	e, _ := d.Entry("DW-1")
	if strings.Count(a.textString(), "archived: 2026-08-24") != 1 || !strings.Contains(e.Body, "archived-body: 2026-08-24") {
		t.Fatalf("after reopen: entry %q archive %q", e.Body, a.textString())
	}
	d.MarkDone([]string{"DW-1"}, "2026-06-12", "second")
	ids, _ := d.ArchiveInto(a, "", "2026-08-25")
	if !slices.Equal(ids, []string{"DW-1"}) {
		t.Fatalf("second archive = %v", ids)
	}
	blocks := a.Entries()
	if len(blocks) != 2 || !strings.Contains(blocks[0].Body, "resolution: first") || !strings.Contains(blocks[1].Body, "resolution: second") {
		t.Errorf("archive = %q, want two blocks in closure order", a.textString())
	}
	if len(a.duplicates()) != 1 {
		t.Errorf("archive duplicates = %v, want DW-1 twice (by design)", a.duplicates())
	}
	// Same-day re-closes share a stamp; the archive's order is the tie-break.
	d = mustParse(t, "### DW-1: x\n\nstatus: open\n")
	a = mustParse(t, "")
	for _, note := range []string{"one", "two"} {
		d.MarkDone([]string{"DW-1"}, "2026-06-11", note, Reopenable(operationID))
		d.ArchiveInto(a, "", "2026-08-24")
		d.MarkOpen([]string{"DW-1"}, note, operationID)
	}
	bs := a.Entries()
	if len(bs) != 2 || !strings.Contains(bs[0].Body, "resolution: one") || !strings.Contains(bs[1].Body, "resolution: two") {
		t.Errorf("archive = %q", a.textString())
	}
}

func TestArchiveAppendsWithTheSeparatorRule(t *testing.T) {
	for _, existing := range []string{"# Archive", "# Archive\n", "# Archive\n\n"} {
		_, archive, _ := archiveOnce(t, ledgerFixture, existing, "", "2026-08-24")
		if !strings.HasPrefix(archive, strings.TrimRight(existing, "\n")+"\n\n### DW-2") {
			t.Errorf("archive after %q = %q", existing, archive)
		}
	}
}

func TestIsStub(t *testing.T) {
	undo := "resolution-undo: " + strings.Repeat("a", 64) + " 2026-06-11 7374"
	for _, tc := range []struct {
		body string
		want bool
	}{
		{"### DW-2: t\n\nstatus: done 2026-05-25\narchived: 2026-08-24\n\n", true},
		{"### DW-2: t\n\nstatus: done 2026-05-25\narchived: 2026-08-24", true},
		{"### DW-2: t\n\nstatus: done 2026-05-25\nresolution: r\n" + undo + "\ngate: 1-1\norigin: o\nsource_spec: s\n  * **Severity:** high\narchived: x\n", true},
		{"### DW-2: t\n\nstatus: done 2026-05-25\nreason: r\narchived: 2026-08-24\n", false},
		{"### DW-2: t\nstatus: done 2026-05-25\narchived: 2026-08-24\n", false},
		{"### DW-2: t\n\nstatus: done 2026-05-25\narchived:2026-08-24\n", false},
		{"### DW-2: t\n\nstatus: done 2026-05-25\narchived: 2026-08-24\nmore\n", false},
		{"### DW-2: t\n\nstatus: done 2026-5-25\narchived: 2026-08-24\n", false},
		{"### DW-2: t\n\nstatus: done 2026-05-25\nresolution: r\narchived: 2026-08-24\n", false},
	} {
		if got := isStub(tc.body); got != tc.want {
			t.Errorf("isStub(%q) = %v, want %v", tc.body, got, tc.want)
		}
	}
}

func TestArchiveRefusesDuplicatedIDs(t *testing.T) {
	text := "### DW-1: a\nstatus: done 2026-01-01\n\n### DW-1: b\nstatus: open\n"
	d := mustParse(t, text)
	_, err := d.ArchiveInto(mustParse(t, ""), "", "2026-08-24")
	var fe *filetxn.FormatError
	if !isDuplicate(err, "DW-1") || !errors.As(err, &fe) || fe.Line != 4 || !strings.Contains(err.Error(), "line 4: DW-1: carried by 2 entries (lines 1, 4)") || d.changed() {
		t.Errorf("ArchiveInto = %v, want a FormatError at line 4 keyed DW-1 naming lines 1, 4", err)
	}
}

// bmadStub is bmad-loop's stub grammar (its archiver's fullmatch on a done
// entry's body with trailing newlines cut to one), translated to Go: Python's
// \d is [0-9] here, and "." matches anything but a newline in both.
var bmadStub = regexp.MustCompile(`\A### .*: .*\n\nstatus: done [0-9]{4}-[0-9]{2}-[0-9]{2}\n` +
	`(resolution:[ \t]*[^\n]*\nresolution-undo:[ \t]*[0-9a-f]{64}[ \t]+[^\n]*\n)?` +
	`((gate:|origin:|source_spec:)[^\n]*\n)*archived: [^\n]*\n\n?\z`)

func isBmadStub(body string) bool { return bmadStub.MatchString(strings.TrimRight(body, "\n") + "\n") }

// TestArchiveWritesStubsBmadLoopReadsAsStubs: whatever fields an entry
// carries (severity and priority lines of every spelling, gates, an undo tail,
// decisions, sightings), the stub ArchiveInto leaves matches bmad-loop's stub
// grammar, so bmad-loop's next archive run leaves it alone; this package reads
// it as a stub too, and the body, severity included, is in the archive.
// Ablation: keeping severity/priority lines in the stub (stubField accepting
// severityKey, as before) turns this red on the first entry with one.
func TestArchiveWritesStubsBmadLoopReadsAsStubs(t *testing.T) {
	fields := []string{"origin: o", "location: src/x.go:1", "source_spec: `s.md`", "severity: high",
		"priority: low", "- **Priority:** medium", "  * **Severity:** critical", "gate: 3-2, 3-3", "reason: r", "note: n"}
	rapid.Check(t, func(t *rapid.T) {
		var b strings.Builder
		b.WriteString("### DW-1: " + rapid.SampledFrom([]string{"t", "a: b", "x — y"}).Draw(t, "title") + "\n")
		if rapid.Bool().Draw(t, "blank after heading") {
			b.WriteString("\n")
		}
		for _, f := range rapid.SliceOfN(rapid.SampledFrom(fields), 0, 6).Draw(t, "fields") {
			b.WriteString(f + "\n")
		}
		b.WriteString("status: open\n")
		d := mustParse(t, b.String())
		var opts []CloseOption
		if rapid.Bool().Draw(t, "reopenable") {
			opts = append(opts, Reopenable(operationID))
		}
		if rapid.Bool().Draw(t, "decision first") {
			err := d.RecordDecision("DW-1", "2026-06-10", "defer", "later")
			require.NoError(t, err, "RecordDecision(DW-1) = %v, want nil")
		}
		_, err := d.MarkDone([]string{"DW-1"}, "2026-06-11", "by dw-a", opts...)
		require.NoError(t, err, "MarkDone(DW-1) = %v, want nil")
		if rapid.Bool().Draw(t, "seen again") {
			_, err := d.MarkSeenAgain([]string{"DW-1"}, "2026-06-12", "again")
			require.NoError(t, err, "MarkSeenAgain(DW-1) = %v, want nil")
		}
		closed, _ := d.Entry("DW-1")
		a := mustParse(t, "")
		ids, err := d.ArchiveInto(a, "", "2026-08-24")
		require.NoError(t, err, "ArchiveInto = %v, want nil")
		require.Equal(t, []string{"DW-1"}, ids, "ArchiveInto = %v, want [DW-1]", ids)
		stub, _ := d.Entry("DW-1")
		require.True(t, isBmadStub(stub.Body), "ArchiveInto stub = %q, want one bmad-loop's grammar accepts", stub.Body)
		require.True(t, isStub(stub.Body), "isStub(%q) = false, want true", stub.Body)
		again, err := d.Archivable("")
		require.NoError(t, err)
		require.Empty(t, again, "Archivable after archiving = %v, want none", again)
		ae := a.Entries()
		require.Len(t, ae, 1, "archive entries = %d, want 1", len(ae))
		require.Equal(t, closed.Severity, ae[0].Severity, "archived severity = %q, want %q", ae[0].Severity, closed.Severity)
	})
}

// TestArchiveReadsStubsWithSeverityLines: a stub in the form this package
// wrote before (severity and priority lines kept) is still a stub: it is not
// archived again and reads as done. Ablation: isStub accepting only the
// fields ArchiveInto now keeps turns this red.
func TestArchiveReadsStubsWithSeverityLines(t *testing.T) {
	old := "### DW-1: gated\n\nstatus: done 2026-06-11\norigin: o\nseverity: high\n- **Priority:** low\ngate: 3-2\narchived: 2026-08-24\n\n"
	d := mustParse(t, old+"### DW-2: next\nstatus: open\n")
	got, err := d.Archivable("")
	require.NoError(t, err)
	require.Empty(t, got, "Archivable(old-form stub) = %v, want none", got)
	e, _ := d.Entry("DW-1")
	require.True(t, e.Done(), "Entry(DW-1).Done() = false, want true")
	require.Equal(t, "high", e.Severity, "Entry(DW-1).Severity = %q, want high", e.Severity)
	require.False(t, isBmadStub(e.Body), "the old form %q matches bmad-loop's grammar; this test no longer tests the old form", e.Body)
}

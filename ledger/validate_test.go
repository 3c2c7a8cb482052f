package ledger

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/filetxn/filetxn"
	"pgregory.net/rapid"
)

func TestDatesAreRealCalendarDays(t *testing.T) {
	for _, tc := range []struct {
		date string
		ok   bool
	}{
		{"2026-06-11", true},
		{"2024-02-29", true},
		{"2000-02-29", true},
		{"0001-01-01", true},
		{"9999-12-31", true},
		{"2023-02-29", false},
		{"1900-02-29", false},
		{"2026-02-30", false},
		{"2026-13-01", false},
		{"2026-00-10", false},
		{"2026-01-00", false},
		{"0000-01-01", false},
		{"2026-1-01", false},
		{"20260611", false},
		{"2026-06-11 ", false},
		{"２０２６-06-11", false},
		{"", false},
	} {
		if got := validDate(tc.date); got != tc.ok {
			t.Errorf("validDate(%q) = %v, want %v", tc.date, got, tc.ok)
		}
		d := mustParse(t, ledgerFixture)
		_, err := d.MarkDone([]string{"DW-1"}, tc.date, "n")
		if tc.ok != (err == nil) {
			t.Errorf("MarkDone(date %q) = %v", tc.date, err)
		}
		if err != nil {
			if !isArg(err, "MarkDone", "date", tc.date) || d.changed() {
				t.Errorf("MarkDone(date %q) = %v; want filetxn.ErrInvalidArgument naming the date", tc.date, err)
			}
		}
	}
}

func TestEveryOperationValidatesItsDate(t *testing.T) {
	const bad = "2026-02-30"
	d := mustParse(t, ledgerFixture)
	checks := map[string]error{}
	_, checks["MarkDone"] = d.MarkDone([]string{"DW-1"}, bad, "n")
	checks["RecordDecision"] = d.RecordDecision("DW-1", bad, "l", "d")
	_, checks["MarkSeenAgain"] = d.MarkSeenAgain([]string{"DW-1"}, bad, "n")
	_, checks["Archivable"] = d.Archivable(bad)
	_, checks["ArchiveInto"] = d.ArchiveInto(mustParse(t, ""), "", bad)
	for op, err := range checks {
		if !errors.Is(err, filetxn.ErrInvalidArgument) || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s(date %q) = %v, want filetxn.ErrInvalidArgument naming it", op, bad, err)
		}
	}
	if d.changed() {
		t.Errorf("a refused operation changed the text")
	}
	if _, err := d.MarkDone([]string{"DW-1"}, "2026-06-11", "n", Reopenable("")); !errors.Is(err, filetxn.ErrInvalidArgument) || d.changed() {
		t.Errorf("MarkDone(Reopenable(\"\")) = %v, want filetxn.ErrInvalidArgument", err)
	}
}

func TestDuplicatedIDs(t *testing.T) {
	text := "# L\n\n### DW-1: first\nstatus: open\n\n### DW-2: other\nstatus: open\n\n### DW-1: second\nstatus: done 2026-01-01\n"
	d := mustParse(t, text)
	if got := d.duplicates(); len(got) != 1 || got[0].ID != "DW-1" || !slices.Equal(got[0].Lines, []int{3, 9}) {
		t.Errorf("Duplicates() = %+v, want DW-1 at lines 3, 9", got)
	}
	if e, ok := d.Entry("DW-1"); !ok || e.Line != 3 || !e.Open() {
		t.Errorf("Entry(DW-1) = %+v, %v, want the first, open, at line 3", e, ok)
	}
	check := func(op string, err error) {
		t.Helper()
		if !isDuplicate(err, "DW-1") {
			t.Errorf("%s = %v, want a *filetxn.FormatError keyed DW-1", op, err)
		}
		if err == nil || !strings.Contains(err.Error(), "DW-1") || !strings.Contains(err.Error(), "3, 9") {
			t.Errorf("%s error %q does not name the id and lines", op, err)
		}
		if d.changed() {
			t.Errorf("%s changed the text", op)
		}
	}
	_, err := d.MarkDone([]string{"DW-2", "DW-1"}, "2026-06-11", "n")
	check("MarkDone", err)
	_, err = d.MarkOpen([]string{"DW-1"}, "n", "op")
	check("MarkOpen", err)
	err = d.RecordDecision("DW-1", "2026-06-11", "l", "")
	check("RecordDecision", err)
	_, err = d.MarkSeenAgain([]string{"DW-1"}, "2026-06-11", "n")
	check("MarkSeenAgain", err)
	// Other ids proceed.
	if got, err := d.MarkDone([]string{"DW-2"}, "2026-06-11", "n"); err != nil || !slices.Equal(got, []string{"DW-2"}) {
		t.Errorf("MarkDone(DW-2) = %v, %v", got, err)
	}
	if got, err := d.Append(Spec{Title: "t", Origin: "o"}); err != nil || got[0] != "DW-3" {
		t.Errorf("Append = %v, %v", got, err)
	}
}

// TestInvalidUTF8IsRefusedWithItsLineAndColumn: the FormatError names the
// line and the byte column of the first invalid byte, counting lines as
// Parse reads them (CRLF and a lone CR each end one). Ablation: a column
// fixed at 1 goes red on the last two cases.
func TestInvalidUTF8IsRefusedWithItsLineAndColumn(t *testing.T) {
	for _, tc := range []struct {
		in        string
		line, col int
	}{
		{"# L\r\n\nok\n\xff bad\n", 4, 1},
		{"# L\rok\nab\xffc\n", 3, 3},
		{"é\xff", 1, 3}, // columns count bytes, and é is two
	} {
		_, err := Parse([]byte(tc.in))
		var fe *filetxn.FormatError
		if !isInvalidUTF8(err, tc.line) || !errors.As(err, &fe) || fe.Column != tc.col || fe.Key != "" {
			t.Errorf("Parse(%q) = %v, want a FormatError at line %d, column %d", tc.in, err, tc.line, tc.col)
		}
	}
}

func TestOneLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"  padded  ", "  padded  "},
		{"a\nb", "a b"},
		{"a\r\n\r\nb", "a b"},
		{"\na\u2028b\u2029", "a b"},
		{"a\vb\fc\x1cd\x1de\x1ef\u0085g", "a b c d e f g"},
		{"a\x1fb", "a\x1fb"},
		{" x \n y ", "x   y"},
		{"\n\n", ""},
		{"\n\u00a0x\u3000\n", "x"},
		{"bad \xed\xa0\x80 surrogate", "bad \ufffd surrogate"},
		{"bad \xff\xfe bytes", "bad \ufffd\ufffd bytes"},
	} {
		if got := oneLine(tc.in); got != tc.want {
			t.Errorf("oneLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestLineSeverity(t *testing.T) {
	for _, tc := range []struct {
		line, sev string
		matched   bool
	}{
		{"severity: HIGH", "high", true},
		{"- **Severity:** medium (scoped)", "medium", true},
		{"priority: blocker", "critical", true},
		{"severity: n/a", "", true},
		{"severity: high-ish", "", true},
		{"severity: highé", "", true},
		{"  * Priority :  minor", "low", true},
		{"no field here", "", false},
		{"severity:", "", false},
		{"**Severity**: high", "", false},
		{"ſeverity: low", "low", true},
		{"severity: BLOCKER", "critical", true},
		{"severity: crİtical", "", true},
	} {
		sev, ok := lineSeverity(tc.line)
		if sev != tc.sev || ok != tc.matched {
			t.Errorf("lineSeverity(%q) = %q, %v; want %q, %v", tc.line, sev, ok, tc.sev, tc.matched)
		}
	}
}

// TestFieldLineMatchesTheRegex checks the hand-written field matcher against
// the regular expression it stands for, ^field:[ \t]*`?<value>`?[ \t]*$.
func TestFieldLineMatchesTheRegex(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alpha := rapid.SampledFrom([]rune{' ', '\t', '`', 'a', 'b', '.', '*'})
		value := string(rapid.SliceOfN(alpha, 0, 5).Draw(t, "value"))
		line := string(rapid.SliceOfN(alpha, 0, 9).Draw(t, "line"))
		re := regexp.MustCompile("^origin:[ \t]*`?" + regexp.QuoteMeta(value) + "`?[ \t]*$")
		want := re.MatchString("origin:" + line)
		if got := fieldLinePresent("origin:"+line, "origin", value); got != want {
			t.Fatalf("fieldLinePresent(%q, %q) = %v, regexp says %v", line, value, got, want)
		}
	})
}

// TestLineClassesMatchTheirRegexps checks the hand-written line classifiers
// against the Python regular expressions they stand for (ASCII inputs, where
// Go's regexp agrees with Python's).
func TestLineClassesMatchTheirRegexps(t *testing.T) {
	heading := regexp.MustCompile(`^### (DW-[0-9]+): (.+?)\s*$`)
	atx := regexp.MustCompile(`^ {0,3}#{1,6}([ \t]|$)`)
	flat := regexp.MustCompile("(?i)^[-*][ \t]+source_spec:[ \t]")
	fence := regexp.MustCompile("^ {0,3}(`{3,}|~{3,})(.*)$")
	rapid.Check(t, func(t *rapid.T) {
		pieces := []string{" ", "\t", "#", "###", "### DW-", "DW-", "1", "12", ":", ": ", "x", "-", "*", "source_spec", "SOURCE_SPEC", "`", "```", "~~~", "~"}
		var b strings.Builder
		for _, p := range rapid.SliceOfN(rapid.SampledFrom(pieces), 0, 8).Draw(t, "pieces") {
			b.WriteString(p)
		}
		l := b.String()
		if got, want := isHeadingLine(l), heading.MatchString(l); got != want {
			t.Fatalf("isHeadingLine(%q) = %v, regexp %v", l, got, want)
		}
		if m := heading.FindStringSubmatch(l); m != nil {
			if id, title := splitHeading(l); id != m[1] || title != m[2] {
				t.Fatalf("splitHeading(%q) = %q, %q; regexp %q, %q", l, id, title, m[1], m[2])
			}
		}
		if got, want := isATXHeading(l), atx.MatchString(l); got != want {
			t.Fatalf("isATXHeading(%q) = %v, regexp %v", l, got, want)
		}
		if got, want := isFlatBullet(l), flat.MatchString(l); got != want {
			t.Fatalf("isFlatBullet(%q) = %v, regexp %v", l, got, want)
		}
		c, n, rest, ok := fenceLine(l)
		m := fence.FindStringSubmatch(l)
		if ok != (m != nil) || ok && (string(c) != m[1][:1] || n != len(m[1]) || rest != m[2]) {
			t.Fatalf("fenceLine(%q) = %c %d %q %v; regexp %q", l, c, n, rest, ok, m)
		}
	})
}

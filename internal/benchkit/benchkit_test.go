package benchkit

import (
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQuartilesInterpolateBetweenOrderStatistics(t *testing.T) {
	for _, tc := range []struct {
		xs          []float64
		q1, med, q3 float64
	}{
		{nil, 0, 0, 0},
		{[]float64{1}, 1, 1, 1},
		{[]float64{3, 1, 2}, 1.5, 2, 2.5},
		{[]float64{4, 1, 3, 2}, 1.75, 2.5, 3.25},
	} {
		in := append([]float64(nil), tc.xs...)
		q1, med, q3 := Quartiles(tc.xs)
		require.Equal(t, []float64{tc.q1, tc.med, tc.q3}, []float64{q1, med, q3}, "Quartiles(%v) = %v %v %v, want %v %v %v", tc.xs, q1, med, q3, tc.q1, tc.med, tc.q3)
		require.Equal(t, tc.med, Median(tc.xs), "Median(%v) = %v, want %v", tc.xs, Median(tc.xs), tc.med)
		require.Equal(t, in, tc.xs, "Quartiles(%v) changed its argument", in)
	}
}

// A testRow is a benchmark's own row type, as the commands define theirs.
type testRow struct {
	Row
	runs int
}

func newSection(names ...string) *Section[*testRow] {
	s := &Section[*testRow]{Key: "k", Title: "T"}
	for i, n := range names {
		s.Rows = append(s.Rows, &testRow{Row: Row{Name: n, Ref: i == 0}})
	}
	return s
}

// TestInterleaveRotatesTheOrderAndRatiosAreToTheSameRound: each round starts
// one row later, and a row's ratio is to the reference's value of the same
// round, not of another. (Ablation: dividing by the reference's first
// round's value instead makes the ratios of round 2 wrong.)
func TestInterleaveRotatesTheOrderAndRatiosAreToTheSameRound(t *testing.T) {
	s := newSection("a", "b", "c")
	var order []string
	round := 0
	err := s.Interleave(3, func(r *testRow) (float64, error) {
		order = append(order, r.Name)
		r.runs++
		round = (len(order) - 1) / 3
		v := float64(10 * (round + 1))
		if r.Name == "b" {
			v *= 2
		}
		return v, nil
	})
	require.NoError(t, err, "Interleave = %v, want nil", err)
	require.Equal(t, "a b c b c a c a b", strings.Join(order, " "), "Interleave's order = %v, want each round one row later", order)
	b := s.Row("b")
	require.NotNil(t, b, `Row("b") = nil, want the row`)
	require.Equal(t, 3, b.runs)
	require.Equal(t, []float64{20, 40, 60}, b.Values, "b's values = %v, want 20 40 60", b.Values)
	require.Equal(t, []float64{2, 2, 2}, b.Ratios, "b's ratios = %v, want 2 2 2", b.Ratios)
	require.Equal(t, []float64{1, 1, 1}, s.Row("a").Ratios, "the reference's ratios = %v, want 1 1 1", s.Row("a").Ratios)
	require.Nil(t, s.Row("d"), `Row("d") = %v, want nil`, s.Row("d"))
}

func TestInterleaveNamesTheRowAndRoundThatFailed(t *testing.T) {
	boom := errors.New("boom")
	s := newSection("a", "b")
	calls := 0
	err := s.Interleave(3, func(r *testRow) (float64, error) {
		calls++
		if calls == 4 {
			return 0, boom
		}
		return 1, nil
	})
	require.ErrorIs(t, err, boom, "Interleave = %v, want boom", err)
	require.EqualError(t, err, "k: a: round 2: boom")
	require.Equal(t, 4, calls, "Interleave ran %d rows, want it to stop at the failure", calls)

	s.Rows[0].Ref = false
	err = s.Interleave(1, func(*testRow) (float64, error) { return 1, nil })
	require.EqualError(t, err, "section k has no reference row")
}

func TestSectionsFindByKey(t *testing.T) {
	a, b := &Section[*testRow]{Key: "a"}, &Section[*testRow]{Key: "b"}
	ss := Sections[*testRow]{a, b}
	require.Same(t, b, ss.Find("b"))
	require.Nil(t, ss.Find("c"))
}

// TestSectionsRatiosAreTheRowsOfTheSectionKeyed: Ratios takes the row
// from the section keyed key, not from the first that has a row of that
// name, and is nil for a missing section or row. (Ablation: searching every
// section for the row gives a's ratios for b's.)
func TestSectionsRatiosAreTheRowsOfTheSectionKeyed(t *testing.T) {
	a, b := newSection("ref", "x"), newSection("ref", "x")
	a.Key, b.Key = "a", "b"
	a.Rows[1].Ratios, b.Rows[1].Ratios = []float64{1.5}, []float64{2, 3}
	ss := Sections[*testRow]{a, b}
	require.Equal(t, []float64{2, 3}, ss.Ratios("b", "x"), `Ratios("b", "x") = %v, want 2 3`, ss.Ratios("b", "x"))
	require.Nil(t, ss.Ratios("b", "y"), `Ratios("b", "y") = %v, want nil`, ss.Ratios("b", "y"))
	require.Nil(t, ss.Ratios("c", "x"), `Ratios("c", "x") = %v, want nil`, ss.Ratios("c", "x"))
}

// styledSection returns a style of two columns, x/op and y/op, empty for
// the reference, and a section of two rows for it: the reference and
// another, whose note is "lost 2".
func styledSection() (*Style[*testRow], *Section[*testRow]) {
	st := &Style[*testRow]{MicroDecimals: 2, Columns: []string{"x/op", "y/op"}, Cells: func(r *testRow) []string {
		if r.Ref {
			return []string{"", ""}
		}
		return []string{"3", "4"}
	}}
	s := newSection("ref", "other")
	s.Rows[0].Values, s.Rows[0].Ratios = []float64{1500, 2500, 2000}, []float64{1, 1, 1}
	s.Rows[1].Values, s.Rows[1].Ratios = []float64{3e6}, []float64{1.5}
	s.Rows[1].Note = "lost 2"
	return st, s
}

func TestTableHasTheStylesColumns(t *testing.T) {
	st, s := styledSection()
	s.Notes = []string{"a note"}
	want := "| row | time ratio (lower is faster): median | quartiles | median | x/op | y/op |\n" +
		"|---|---:|---:|---:|---:|---:|\n" +
		"| ref (reference) | 1.00 | 1.00-1.00 | 2.00 µs |  |  |\n" +
		"| other; lost 2 | 1.50 | 1.50-1.50 | 3.00 ms | 3 | 4 |\n"
	require.Equal(t, want, st.table(s), "table = %q, want %q", st.table(s), want)
	require.Equal(t, "\n### T\n\n"+want+"\na note\n", st.Markdown(s))

	plain := &Style[*testRow]{}
	s.Throughput = true
	want = "| row | throughput ratio (higher is faster): median | quartiles | median |\n|---|---:|---:|---:|\n" +
		"| ref (reference) | 1.00 | 1.00-1.00 | 2000 ops/s |\n| other; lost 2 | 1.50 | 1.50-1.50 | 3000000 ops/s |\n"
	require.Equal(t, want, plain.table(s), "table = %q, want %q", plain.table(s), want)
	s.Throughput = false
	require.Equal(t, "2 µs", plain.Value(s, s.Rows[0]), "Value with no decimals")
}

// TestTextHasTheStylesColumns: the terminal's columns are the Markdown
// table's, lined up, with the notes after them. (Ablation: leaving out
// the style's cells turns it red.)
func TestTextHasTheStylesColumns(t *testing.T) {
	st, s := styledSection()
	s.Notes = []string{"a note\n", "another"}
	want := "\nT (time ratio (lower is faster): median [quartiles], median value, x/op, y/op)\n" +
		"  ref (reference)  1.00  [1.00-1.00]  2.00 µs     \n" +
		"  other; lost 2    1.50  [1.50-1.50]  3.00 ms  3  4\n" +
		"a note\nanother\n"
	got := st.Text(s)
	require.Equal(t, want, got, "Text = %q, want %q", got, want)
}

func TestTargetsCompareTheMedianWithTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name         string
		t            Target
		want         string
		met, known   bool
		status, cell string
	}{
		{name: "at most, met", t: AtMost("m", []float64{0.9, 1.0, 1.2}, 1.0), want: "at most 1.00", met: true, known: true,
			status: "1.00 [0.95-1.10], want at most 1.00: met", cell: "1.00 (0.95-1.10) **met**"},
		{name: "at most, not met", t: AtMost("m", []float64{1.2}, 1.1), want: "at most 1.10", known: true,
			status: "1.20 [1.20-1.20], want at most 1.10: NOT met", cell: "1.20 (1.20-1.20) not met"},
		{name: "at least, met", t: AtLeast("m", []float64{3, 4}, 3), want: "at least 3.00", met: true, known: true,
			status: "3.50 [3.25-3.75], want at least 3.00: met", cell: "3.50 (3.25-3.75) **met**"},
		{name: "not measured", t: AtLeast("m", nil, 3), want: "at least 3.00",
			status: "not measured in this run", cell: "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, "m", tc.t.Measure)
			require.Equal(t, tc.want, tc.t.Want)
			require.Equal(t, tc.met, tc.t.Met, "Met = %v, want %v", tc.t.Met, tc.met)
			require.Equal(t, tc.known, tc.t.Known, "Known = %v, want %v", tc.t.Known, tc.known)
			require.Equal(t, tc.status, tc.t.status())
			require.Equal(t, tc.cell, tc.t.cell())
		})
	}
}

// TestTargetTableHasARunAColumn: a row a target, a column a run, each
// run's cell its own result. (Ablation: taking every cell from the first
// run turns run 2's column red.)
func TestTargetTableHasARunAColumn(t *testing.T) {
	run1 := []Target{AtMost("m", []float64{1}, 1.1), AtLeast("n", nil, 3)}
	run2 := []Target{AtMost("m", []float64{1.2}, 1.1), AtLeast("n", []float64{4}, 3)}
	want := "| measure | want | run 1 | run 2 |\n|---|---|---|---|\n" +
		"| m | at most 1.10 | 1.00 (1.00-1.00) **met** | 1.20 (1.20-1.20) not met |\n" +
		"| n | at least 3.00 | - | 4.00 (4.00-4.00) **met** |\n"
	got := TargetTable([]string{"run 1", "run 2"}, [][]Target{run1, run2})
	require.Equal(t, want, got, "TargetTable of two runs = %q, want %q", got, want)
	want = "| measure | want | got |\n|---|---|---|\n"
	got = TargetTable([]string{"got"}, nil)
	require.Equal(t, want, got, "TargetTable of no run = %q, want %q", got, want)

	want = "target m: 1.20 [1.20-1.20], want at most 1.10: NOT met\ntarget n: 4.00 [4.00-4.00], want at least 3.00: met\n"
	got = TargetText(run2)
	require.Equal(t, want, got, "TargetText = %q, want %q", got, want)
}

// TestBarChartIsWellFormedAndScalesToTheLargest: the chart parses as XML
// with names and labels escaped, the largest bar spans the room between the
// names and the labels, and the highlighted bar alone is red; bars of 0
// alone draw no NaN. (Ablations: dropping Escape from the names makes it
// malformed; scaling to the last bar instead of the largest turns the
// half bar's width red.)
func TestBarChartIsWellFormedAndScalesToTheLargest(t *testing.T) {
	svg := BarChart(500, 200, 100, "a & b", []Bar{
		{Name: "two", Label: "x", Value: 100, Ratio: 2, Highlight: true},
		{Name: "<one>", Label: "1 & 2", Value: 50, Ratio: 1},
	})
	require.NoError(t, xml.Unmarshal(svg, new(struct{})), "BarChart is not well-formed XML:\n%s", svg)
	zero := string(BarChart(500, 200, 100, "zero", []Bar{{Name: "z", Label: "0", Value: 0, Ratio: 1}}))
	require.NotContains(t, zero, "NaN", "a chart of bars of 0")
	s := string(svg)
	require.True(t, strings.HasPrefix(s, SVGHeader(500, 40+2*32+30)), "BarChart's height is not the bars': %s", s)
	require.True(t, strings.HasSuffix(s, "</svg>\n"))
	require.Contains(t, s, `width="100.0" height="22" fill="#1f77b4"`, "the half bar")
	require.Contains(t, s, `width="200.0" height="22" fill="#d62728"`, "the largest, highlighted bar")
	require.Contains(t, s, ">1 &amp; 2 (1.00x)<")
	require.Contains(t, s, ">a &amp; b<")
	require.Equal(t, 1, strings.Count(s, "#d62728"), "red bars")
}

// TestBarsAreTheRowsMedians: a bar a row, in order, of its median value
// and median ratio, labelled by label, the row named highlight alone
// highlighted. (Ablation: a bar of the row's first value instead of its
// median turns b's bar red.)
func TestBarsAreTheRowsMedians(t *testing.T) {
	s := newSection("a", "b")
	s.Rows[0].Values, s.Rows[0].Ratios = []float64{10, 10, 10}, []float64{1, 1, 1}
	s.Rows[1].Values, s.Rows[1].Ratios = []float64{40, 20, 30}, []float64{4, 2, 3}
	got := s.Bars("b", func(r *testRow) string { return "label of " + r.Name })
	want := []Bar{
		{Name: "a", Label: "label of a", Value: 10, Ratio: 1},
		{Name: "b", Label: "label of b", Value: 30, Ratio: 3, Highlight: true},
	}
	require.Equal(t, want, got, "Bars = %+v, want %+v", got, want)
}

func TestReplaceAboveKeepsTheNotes(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, old, want string
		missing         bool
	}{
		{name: "notes kept", old: "old tables\n## Notes\n\nwhat was tried\n", want: "new\n## Notes\n\nwhat was tried\n"},
		{name: "no notes", old: "old tables\n## Notes later\n", want: "new\n"},
		{name: "heading on the first line", old: "## Notes\nx\n", want: "new\n"},
		{name: "no file", missing: true, want: "new\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".md")
			if !tc.missing {
				require.NoError(t, os.WriteFile(path, []byte(tc.old), 0o644))
			}
			require.NoError(t, ReplaceAbove(path, "## Notes", []byte("new\n")))
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got), "ReplaceAbove over %q left %q, want %q", tc.old, got, tc.want)
		})
	}
}

// TestReplaceBetweenReplacesItsOwn checks that a second write replaces the
// first between the markers and keeps what surrounds them, and that an end
// marker before the begin marker is not taken for the block's end.
// Ablation: an end marker searched for from the file's start turns it red
// (the old block stays, a second one is added).
func TestReplaceBetweenReplacesItsOwn(t *testing.T) {
	const begin, end = "<!-- from here -->", "<!-- to here -->"
	md := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	require.NoError(t, os.WriteFile(md, []byte("# Benchmarks\n"), 0o644))
	for _, s := range []string{"first\n", "second\n"} {
		require.NoError(t, ReplaceBetween(md, begin, end, []byte(s)), "ReplaceBetween(%q)", s)
		if s == "first\n" {
			f, err := os.OpenFile(md, os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString("\nnotes kept\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}
	}
	got, err := os.ReadFile(md)
	require.NoError(t, err)
	want := "# Benchmarks\n\n" + begin + "\nsecond\n" + end + "\n\nnotes kept\n"
	require.Equal(t, want, string(got), "after two ReplaceBetweens the file = %q, want %q", got, want)

	// An end marker before the begin marker is not the block's end.
	early := filepath.Join(t.TempDir(), "early.md")
	require.NoError(t, os.WriteFile(early, []byte(end+"\n"+begin+"\nold\n"+end+"\n"), 0o644))
	require.NoError(t, ReplaceBetween(early, begin, end, []byte("new\n")))
	got, err = os.ReadFile(early)
	require.NoError(t, err)
	require.Equal(t, end+"\n"+begin+"\nnew\n"+end+"\n", string(got), "an end marker before the block")

	missing := filepath.Join(t.TempDir(), "new.md")
	require.NoError(t, ReplaceBetween(missing, begin, end, []byte("x\n")))
	got, err = os.ReadFile(missing)
	require.NoError(t, err)
	require.Equal(t, "\n\n"+begin+"\nx\n"+end+"\n", string(got))
}

func TestSelectSectionsRefusesAnUnknownName(t *testing.T) {
	all := []string{"a", "b", "c"}
	got, err := SelectSections("c,a", all)
	require.NoError(t, err)
	require.Equal(t, []string{"c", "a"}, got)
	_, err = SelectSections("a,x", all)
	require.EqualError(t, err, `-sections: no section "x" (have a,b,c)`)
}

func TestLostNoteGivesTheRangeAndTheMedian(t *testing.T) {
	got := LostNote([]int{420, 389, 428, 415, 401}, 600)
	want := "lost 389-428 of 600 per round (median 415)"
	require.Equal(t, want, got, "LostNote([420 389 428 415 401], 600) = %q, want %q", got, want)
}

// TestMountIsTheLongestMountPointAboveTheDirectory: the deepest mount
// that holds the path wins, a mount point is matched whole, never as a
// prefix of a name, and a short line is passed over. (Ablation: matching
// "/work" as a bare prefix names it for "/workspace/x".)
func TestMountIsTheLongestMountPointAboveTheDirectory(t *testing.T) {
	const mounts = "overlay / overlay rw 0 0\nbroken line\n/dev/sdb1 /work ext4 rw 0 0\n" +
		"tmpfs /work/tmp tmpfs rw 0 0\n"
	for _, tc := range []struct{ abs, want string }{
		{"/", "overlay on / (overlay)"},
		{"/work", "ext4 on /work (/dev/sdb1)"},
		{"/work/a/b", "ext4 on /work (/dev/sdb1)"},
		{"/work/tmp/x", "tmpfs on /work/tmp (tmpfs)"},
		{"/workspace/x", "overlay on / (overlay)"},
	} {
		got := mountOf(tc.abs, strings.NewReader(mounts))
		require.Equal(t, tc.want, got, "mountOf(%q) = %q, want %q", tc.abs, got, tc.want)
	}
	require.Equal(t, "", mountOf("/x", strings.NewReader("/dev/sdb1 /work ext4 rw 0 0\n")), "mountOf a path no mount holds")
}

func TestMachineItemsGiveTheFileSystemOnlyWhenKnown(t *testing.T) {
	m := Machine{CPUs: 4, CPU: "c", Kernel: "k", Go: "go", Commit: "abc"}
	want := "- CPUs: 4 (c)\n- Kernel: k\n- File system of the scratch directory: fs\n- Go: go\n- Library measured: commit abc\n"
	require.Equal(t, want, m.Items("fs"), `Items("fs") = %q, want %q`, m.Items("fs"), want)
	want = "- CPUs: 4 (c)\n- Kernel: k\n- Go: go\n- Library measured: commit abc\n"
	require.Equal(t, want, m.Items(""), `Items("") = %q, want %q`, m.Items(""), want)
}

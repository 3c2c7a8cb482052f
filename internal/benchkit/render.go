package benchkit

import (
	"bytes"
	"fmt"
	"strings"
	"text/tabwriter"
)

// A Style is how a benchmark prints its sections: the precision of its
// times and the columns its rows have after the median value.
type Style[R Rower] struct {
	// MicroDecimals is how many decimals a time under a millisecond gets,
	// in µs.
	MicroDecimals int
	// Columns are the headers of the columns after the median value, and
	// Cells returns a row's cells for them, one a column ("" for none).
	Columns []string
	Cells   func(r R) []string
}

// Value formats the median of r's values: "N ops/s" in a throughput
// section, a time in ms from a millisecond up, and in µs below.
func (st *Style[R]) Value(s *Section[R], r R) string {
	v := Median(r.Base().Values)
	if s.Throughput {
		return fmt.Sprintf("%.0f ops/s", v)
	}
	if v >= 1e6 {
		return fmt.Sprintf("%.2f ms", v/1e6)
	}
	return fmt.Sprintf("%.*f µs", st.MicroDecimals, v/1e3)
}

// RatioHeader names what s's ratios are, and which way is better.
func (s *Section[R]) RatioHeader() string {
	if s.Throughput {
		return "throughput ratio (higher is faster)"
	}
	return "time ratio (lower is faster)"
}

// table renders s as a Markdown table: a row's label, the median and the
// quartiles of its ratios, its median value, then st's columns.
func (st *Style[R]) table(s *Section[R]) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| row | %s: median | quartiles | median |", s.RatioHeader())
	for _, c := range st.Columns {
		fmt.Fprintf(&b, " %s |", c)
	}
	b.WriteString("\n|---|---:|---:|---:|")
	for range st.Columns {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, r := range s.Rows {
		q1, med, q3 := Quartiles(r.Base().Ratios)
		fmt.Fprintf(&b, "| %s | %.2f | %.2f-%.2f | %s |", r.Base().Label(), med, q1, q3, st.Value(s, r))
		if st.Cells != nil {
			for _, c := range st.Cells(r) {
				fmt.Fprintf(&b, " %s |", c)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Markdown renders s as a part of a Markdown report: a "###" heading of
// its title; its table, a row's label, the median and the quartiles of its
// ratios, its median value, then st's columns; and its notes, each a
// paragraph. It starts with an empty line.
func (st *Style[R]) Markdown(s *Section[R]) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "\n### %s\n\n%s", s.Title, st.table(s))
	for _, n := range s.Notes {
		fmt.Fprintf(&b, "\n%s\n", n)
	}
	return b.String()
}

// Text renders s as columns for a terminal: an empty line; its title and
// what the columns are; a row a line, its label, the median and the
// quartiles of its ratios, its median value, then its cells for st's
// columns; and its notes, each on lines of its own.
func (st *Style[R]) Text(s *Section[R]) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "\n%s (%s: median [quartiles], median value", s.Title, s.RatioHeader())
	for _, c := range st.Columns {
		fmt.Fprintf(&b, ", %s", c)
	}
	b.WriteString(")\n")
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, r := range s.Rows {
		q1, med, q3 := Quartiles(r.Base().Ratios)
		fmt.Fprintf(w, "  %s\t%.2f\t[%.2f-%.2f]\t%s", r.Base().Label(), med, q1, q3, st.Value(s, r))
		if st.Cells != nil {
			for _, c := range st.Cells(r) {
				fmt.Fprintf(w, "\t%s", c)
			}
		}
		fmt.Fprintln(w)
	}
	w.Flush()
	for _, n := range s.Notes {
		fmt.Fprintln(&b, strings.TrimRight(n, "\n"))
	}
	return b.String()
}

// A Target is one of a report's targets: a median ratio checked against a
// limit.
type Target struct {
	Measure string // what is measured, and over what
	Want    string // "at most 1.10", "at least 3.00"
	Known   bool   // the run measured it; if not, the rest is zero
	Got     float64
	Q1, Q3  float64
	Met     bool
}

// AtMost returns the target that the median of ratios is at most limit;
// it is not Known if ratios is empty.
func AtMost(measure string, ratios []float64, limit float64) Target {
	return check(measure, ratios, limit, false)
}

// AtLeast returns the target that the median of ratios is at least limit;
// it is not Known if ratios is empty.
func AtLeast(measure string, ratios []float64, limit float64) Target {
	return check(measure, ratios, limit, true)
}

func check(measure string, ratios []float64, limit float64, atLeast bool) Target {
	t := Target{Measure: measure, Want: fmt.Sprintf("at most %.2f", limit)}
	if atLeast {
		t.Want = fmt.Sprintf("at least %.2f", limit)
	}
	if len(ratios) > 0 {
		t.Q1, t.Got, t.Q3 = Quartiles(ratios)
		t.Known, t.Met = true, t.Got <= limit
		if atLeast {
			t.Met = t.Got >= limit
		}
	}
	return t
}

// status is the target for a terminal: the median, the quartiles, the
// limit and the verdict, or that the run did not measure it.
func (t Target) status() string {
	if !t.Known {
		return "not measured in this run"
	}
	return fmt.Sprintf("%.2f [%.2f-%.2f], want %s: %s", t.Got, t.Q1, t.Q3, t.Want, t.verdict("met", "NOT met"))
}

// cell is the target's result as a Markdown table cell: the median, the
// quartiles and the verdict, or "-" if the run did not measure it.
func (t Target) cell() string {
	if !t.Known {
		return "-"
	}
	return fmt.Sprintf("%.2f (%.2f-%.2f) %s", t.Got, t.Q1, t.Q3, t.verdict("**met**", "not met"))
}

// verdict returns met if t is met, and notMet if not.
func (t Target) verdict(met, notMet string) string {
	if t.Met {
		return met
	}
	return notMet
}

// TargetText renders ts for a terminal, a line a target: "target", its
// measure, then its median and quartiles, its limit and the verdict, or
// that the run did not measure it.
func TargetText(ts []Target) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "target %s: %s\n", t.Measure, t.status())
	}
	return b.String()
}

// TargetTable renders the targets of one or more runs as a Markdown table:
// a row a target, its measure and its limit, then a column a run, headed
// by heads (one a run), with the run's median, quartiles and verdict
// ("**met**" or "not met"), or "-" if the run did not measure it. Every
// run lists the same targets in the same order; the first run's measures
// and limits head the rows.
func TargetTable(heads []string, runs [][]Target) string {
	var b strings.Builder
	b.WriteString("| measure | want |")
	for _, h := range heads {
		fmt.Fprintf(&b, " %s |", h)
	}
	b.WriteString("\n|---|---|")
	for range heads {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	if len(runs) == 0 {
		return b.String()
	}
	for j, t := range runs[0] {
		fmt.Fprintf(&b, "| %s | %s |", t.Measure, t.Want)
		for _, ts := range runs {
			fmt.Fprintf(&b, " %s |", ts[j].cell())
		}
		b.WriteString("\n")
	}
	return b.String()
}

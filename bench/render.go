//go:build unix

package main

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/filetxn/filetxn/internal/benchkit"
)

// text is the run as plain columns for the terminal.
func (rep *report) text(run, runs int) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "run %d of %d, %s, took %s\n", run, runs, rep.start.UTC().Format(time.RFC3339), rep.took.Round(time.Second))
	for _, s := range rep.sections {
		b.WriteString(style.Text(s))
	}
	fmt.Fprintf(&b, "\n%s\n", benchkit.TargetText(rep.targets()))
	return b.String()
}

// targets returns the project's table of targets, checked against the run.
func (rep *report) targets() []benchkit.Target {
	atMost, atLeast := benchkit.AtMost, benchkit.AtLeast
	ratiosOf := rep.sections.Ratios
	// over returns row's value over of's, round by round, in section key:
	// a ratio to another row than the section's reference.
	over := func(key, row, of string) []float64 {
		var rs []float64
		if s := rep.sections.Find(key); s != nil {
			if r, o := s.Row(row), s.Row(of); r != nil && o != nil {
				for i := range r.Values {
					rs = append(rs, r.Values[i]/o.Values[i])
				}
			}
		}
		return rs
	}
	return []benchkit.Target{
		atMost("lock round trip (lock.Acquire+Release / open+flock+close)", ratiosOf("lock", rowLockAcquire), 1.0),
		atMost("lock round trip, thirty frames deep (/ open+flock+close as deep)", over("lock", rowLockDeep, rowOpenDeep), 1.0),
		atMost("one durable append, 100 entries (/ floor)", ratiosOf("txn-100", rowFiletxn), 1.05),
		atMost("one durable append, 10,000 entries (/ floor)", ratiosOf("txn-10000", rowFiletxn), 1.10),
		atMost("one durable append, 1,000 other files in the directory (/ none)", ratiosOf("dirsize", dirsizeRow(rowFiletxn, 1000)), 1.10),
		atMost("one durable append, 10,000 other files in the directory (/ none)", ratiosOf("dirsize", dirsizeRow(rowFiletxn, 10000)), 1.10),
		atMost("one durable append, 100,000 entries (/ floor, scaling)", ratiosOf("scaling", rowFiletxn+" @ 100,000"), 1.20),
		atLeast("8 goroutines x 100 appends (/ SQLite WAL pooled)", ratiosOf("group", rowFiletxnGroup), 3),
		atLeast("8 goroutines x 100 appends (/ SQLite WAL one connection)", over("group", rowFiletxnGroup, rowSQLiteOneConn), 2),
		atLeast("4 processes x 150 increments (/ floor; 0 lost is checked)", ratiosOf("contend", rowContendFiletxn), 0.95),
		atMost("two-file commit, ledger close + board advance (/ the two single-file transactions)", over("commit", rowCommitAll, rowCommitTwo), 1.0),
		atMost("two-file commit, ledger close + board advance (/ one single-file transaction, the close)", ratiosOf("commit", rowCommitAll), 1.3),
	}
}

// markdown renders BENCHMARKS.md: how to reproduce, the machine, the
// targets of every run, then every run's tables.
func markdown(m machine, cfg *config, reps []*report) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Benchmarks\n\n")
	p("Written by the peer benchmark in `bench/` (a module of its own, so that the library's\n")
	p("dependencies stay lean). It measures filetxn against the primitives and stores a user\n")
	p("would pick instead, interleaved in rounds on one disk; every row is a ratio to its\n")
	p("section's reference in the same round, given as the median and quartiles over the rounds.\n")
	p("Before any timing, every file-based row makes one append and must publish the same bytes\n")
	p("as `ledger.Store.Append`; every SQLite and bbolt row must read back the entry it stored.\n")
	p("Figures are from a shared, noisy machine: compare ratios, not absolute times.\n\n")
	p("Reproduce (from the repository root; the default run takes a few minutes):\n\n")
	p("```sh\n%s\n```\n\n", m.command)
	b.WriteString(m.Items(m.fsys))
	p("- Rounds per section: %d (contend: %d); lock: %d round trips per row and round; txn: %d appends; scaling: %d appends per size;\n  group: %d goroutines x %d appends; contend: %d processes x %d increments; commit: %d steps\n\n",
		cfg.rounds, cfg.rounds*contendRoundsPer, cfg.lockOps, cfg.txnOps, cfg.scalingOps, cfg.groupGoroutines, cfg.groupAppends, cfg.contendProcs, cfg.contendIncrements, min(cfg.commitOps, commitEntries))
	p("The rows:\n\n")
	p("- *floor*: `open`+`flock` of the lock file, read the file, write a temp file in the same\n  directory, fsync, rename over the target (renameio with `WithTempDir`), fsync the directory.\n")
	p("- *SQLite*: `modernc.org/sqlite`, `synchronous=FULL`, one `INSERT` per append (autocommit).\n")
	p("- *bbolt*: `go.etcd.io/bbolt` defaults (a commit fsyncs); `Batch` may run its function more than once.\n")
	p("- *contend*: each process re-executes the benchmark and increments a counter file (a number and a newline);\n  every locked row must end with exactly the bytes filetxn's `Store.Mutate` row ends with. A round is timed from\n  the common start to the last process's report that it is done (process exit is not timed).\n")
	p("- *dirsize*: filetxn's append to a %d-entry ledger whose directory also holds %s other (empty) files, and the\n  floor's with none and with the most; the reference is filetxn's append with none, so a row is what the other\n  files cost a write (its file system's share shows in the floor's rows).\n", dirsizeEntries, dirsizeCounts())
	p("- *commit*: a step closes entry k of a %d-entry ledger (`Doc.MarkDone`) and moves story k of a %d-story board from review\n  to done (`Doc.Advance`), durably; the two files share a directory and their locks one state root. The rows: the close\n  alone (one single-file transaction, the reference), the advance alone, the two as two single-file transactions (a\n  ledger `Mutate`, then a board `Mutate`), the two as one `filetxn.MutateAll`, and a bound: the syncs no commit of\n  the two files can skip, and nothing else (both new versions written to new files and fsynced, a 256-byte record\n  overwritten in place and fdatasynced, the three at once; the two renames; the directory's fsync; no lock, no read, no\n  parse or encode). Before timing, every row must leave the bytes the two single-file transactions leave, and no staged\n  file or intent record.\n", commitEntries, commitEntries)
	p("- *unlocked control*: the floor without the lock; it must lose updates in every round, or the run fails.\n")
	p("- *lock*: before timing, each row must exclude a non-blocking `flock` of another descriptor while it holds the lock.\n  The deep rows take the lock %d frames below the benchmark's loop; the deep target is filetxn's deep row over\n  the raw row at the same depth, round by round, so that both pay for the descent.\n", lockDepth)
	p("- allocs/op and B/op are the process's heap allocations during filetxn's rows (the\n  children's, in the contend section), including what the benchmark itself allocates.\n\n")
	p("![one durable append by ledger size](docs/bench/scaling.svg)\n![group throughput](docs/bench/group.svg)\n![a two-file commit](docs/bench/commit.svg)\n\n")
	heads := make([]string, len(reps))
	tss := make([][]benchkit.Target, len(reps))
	for i, rep := range reps {
		heads[i], tss[i] = fmt.Sprintf("run %d", i+1), rep.targets()
	}
	p("## Targets\n\n%s", benchkit.TargetTable(heads, tss))
	p("\nEverything above the %q heading (if any) is written by the benchmark; what follows it is\nkept when the benchmark rewrites this file.\n", notesHeading)
	for i, rep := range reps {
		p("\n## Run %d of %d (%s, %s)\n", i+1, len(reps), rep.start.UTC().Format("2006-01-02 15:04 UTC"), rep.took.Round(time.Second))
		for _, s := range rep.sections {
			b.WriteString(style.Markdown(s))
		}
	}
	p("\n")
	return b.Bytes()
}

// scalingSVG draws the median time of one durable append against the
// ledger's size, both axes logarithmic, floor and filetxn.
func scalingSVG(sec *section, sizes []int) []byte {
	const w, h, left, right, top, bottom = 660, 400, 70, 40, 40, 60
	var b bytes.Buffer
	b.WriteString(benchkit.SVGHeader(w, h))
	series := []struct{ row, color string }{{rowFloor, "#1f77b4"}, {rowFiletxn, "#d62728"}}
	ys := map[string][]float64{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, n := range sizes {
			r := sec.Row(fmt.Sprintf("%s @ %s", s.row, thousands(n)))
			v := math.NaN()
			if r != nil {
				v = benchkit.Median(r.Values) / 1e6
				lo, hi = min(lo, v), max(hi, v)
			}
			ys[s.row] = append(ys[s.row], v)
		}
	}
	if len(sizes) == 0 || math.IsInf(lo, 0) {
		b.WriteString("</svg>\n")
		return b.Bytes()
	}
	ylo, yhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if yhi == ylo {
		yhi++
	}
	xlo, xhi := math.Log10(float64(sizes[0])), math.Log10(float64(sizes[len(sizes)-1]))
	if xhi == xlo {
		xhi++
	}
	px := func(n float64) float64 { return left + (math.Log10(n)-xlo)/(xhi-xlo)*(w-left-right) }
	py := func(v float64) float64 { return top + (yhi-math.Log10(v))/(yhi-ylo)*(h-top-bottom) }
	fmt.Fprintf(&b, "<text x=\"%d\" y=\"22\" font-size=\"14\">One durable append by ledger size (median ms over the rounds of the last run, log-log)</text>\n", left)
	for e := ylo; e <= yhi; e++ {
		v := math.Pow(10, e)
		fmt.Fprintf(&b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g ms</text>\n", left, w-right, py(v), py(v), left-6, py(v)+4, v)
	}
	for _, n := range sizes {
		fmt.Fprintf(&b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", px(float64(n)), px(float64(n)), top, h-bottom, px(float64(n)), h-bottom+16, thousands(n))
	}
	fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">entries in the ledger</text>\n", (w+left)/2, h-bottom+36)
	for i, s := range series {
		var pts []string
		for k, n := range sizes {
			if v := ys[s.row][k]; !math.IsNaN(v) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(float64(n)), py(v)))
				fmt.Fprintf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", px(float64(n)), py(v), s.color)
			}
		}
		fmt.Fprintf(&b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>\n", s.color, strings.Join(pts, " "))
		fmt.Fprintf(&b, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s</text>\n", left+10, top+6+i*18, s.color, left+28, top+16+i*18, benchkit.Escape(s.row))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// groupSVG draws each group row's median throughput as a horizontal bar.
func groupSVG(sec *section) []byte {
	title := sec.Title + ": median durable appends per second (last run)"
	bars := sec.Bars(rowFiletxnGroup, func(r *result) string {
		return fmt.Sprintf("%.0f/s", benchkit.Median(r.Values))
	})
	return benchkit.BarChart(760, 270, 140, title, bars)
}

// commitSVG draws each commit row's median time per step as a horizontal
// bar, with its ratio to the reference.
func commitSVG(sec *section) []byte {
	title := "A durable two-file commit and what it replaces: median time per step (last run)"
	bars := sec.Bars(rowCommitAll, func(r *result) string { return style.Value(sec, r) })
	return benchkit.BarChart(860, 430, 150, title, bars)
}

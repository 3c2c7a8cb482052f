//go:build unix

package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/filetxn/filetxn/internal/benchkit"
	"github.com/stretchr/testify/require"
)

// TestMain lets the contend section re-execute the test binary as its
// children.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(contendChild())
	}
	os.Exit(m.Run())
}

// TestFloorPublishesTheBytesLedgerAppendPublishes guards the floor's entry
// template: if the ledger format changes, the benchmark must stop rather
// than compare rows that write different files. (Ablation: changing
// "location: n/a" in appendEntry turns it red.)
func TestFloorPublishesTheBytesLedgerAppendPublishes(t *testing.T) {
	for _, n := range []int{0, 1, 10} {
		want, err := wantAfterAppend(t.TempDir(), n, seedLedger(n), "a")
		require.NoError(t, err, "wantAfterAppend(%d entries) = %v, want nil", n, err)

		path := filepath.Join(t.TempDir(), "deferred-work.md")
		require.NoError(t, os.WriteFile(path, seedLedger(n), 0o644))
		buf := new([]byte)
		require.NoError(t, floorAppend(buf, path, n+1, "a"))
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		require.True(t, bytes.Equal(got, want), "floorAppend on %d entries wrote %q, want %q", n, got, want)

		// The floor reuses its buffer: a second append must not see the first's bytes twice.
		require.NoError(t, floorAppend(buf, path, n+2, "a"))
		got, err = os.ReadFile(path)
		require.NoError(t, err)
		want = appendEntry(want, n+2, "a")
		require.True(t, bytes.Equal(got, want), "a second floorAppend on %d entries wrote %q, want %q", n, got, want)
	}
}

// TestDeepLockTargetIsOverTheRawRowAtTheSameDepth: the deep lock target is
// filetxn's deep row over the raw row at the same depth, round by round, not
// over the section's reference at the top of the stack, so that the descent
// costs both sides of the ratio the same. (Ablation: taking the deep row's
// ratio to the reference instead gives 1.08, and the test fails.)
func TestDeepLockTargetIsOverTheRawRowAtTheSameDepth(t *testing.T) {
	sec := &section{Key: "lock", Rows: []*result{
		{Row: benchkit.Row{Name: rowOpenFlock, Ref: true, Values: []float64{100, 100, 100}}},
		{Row: benchkit.Row{Name: rowOpenDeep, Values: []float64{110, 120, 130}}},
		{Row: benchkit.Row{Name: rowLockDeep, Values: []float64{99, 108, 130}, Ratios: []float64{0.99, 1.08, 1.30}}},
	}}
	rep := &report{sections: benchkit.Sections[*result]{sec}}
	var got *benchkit.Target
	for _, tg := range rep.targets() {
		if strings.Contains(tg.Measure, "thirty frames deep") {
			got = &tg
		}
	}
	require.NotNil(t, got, "targets() has no deep lock target")
	require.InDelta(t, 0.9, got.Got, 1e-9, "deep lock target = %v, want 0.9 (the median of 99/110, 108/120, 130/130)", got.Got)
	require.True(t, got.Met, "deep lock target met = false, want true at %v", got.Got)
}

func TestRowCheckRejectsOtherBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deferred-work.md")
	f := &fileRow{path: path, seed: seedLedger(2)}
	require.NoError(t, f.reset())
	err := f.check(appendEntry(seedLedger(2), 3, "a"), 3)
	require.Error(t, err, "check of the unchanged seed against an append = nil, want an error")
}

// TestEverySectionRunsAndWritesTheReport is the smoke test CI runs: every
// section, tiny, one round, with the Markdown report and both charts.
// Among its checks are the contend section's: every locked row ends at the
// exact count and the unlocked control loses updates (ablations: making the
// control take the floor's lock fails the run with "lost no update"; taking
// the lock out of the floor's row fails it with "updates lost"), and that
// the directory-size section and its targets are in the report (ablation:
// without its case in runOnce the report lacks the section), and so are the
// two-file commit section with its bound row, its two targets and its chart
// (ablation: without its case in runOnce the report lacks the section and
// the chart is not written; without the bound in runCommit's rows, the
// report lacks it). The bound row must leave the bytes the two single-file
// transactions leave (runCommit checks every row's first step), so a
// boundStep that wrote anything else fails the run.
func TestEverySectionRunsAndWritesTheReport(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "BENCHMARKS.md")
	args := []string{"-dir", dir, "-rounds", "1", "-runs", "2", "-lock-ops", "20", "-txn-ops", "1",
		"-scaling-ops", "1", "-scaling-sizes", "10,1000", "-group-goroutines", "2", "-group-appends", "3",
		"-contend-procs", "4", "-contend-increments", "40", "-commit-ops", "2", "-md", md, "-svg", dir}
	err := withStdout(t, func() error { return run(args) })
	require.NoError(t, err, "run(%q) = %v, want nil", args, err)

	report, err := os.ReadFile(md)
	require.NoError(t, err)
	for _, want := range []string{"## Targets", "## Run 2 of 2", "### Lock round trip", "### One durable append, 10,000-entry ledger", "lost ", "of 160 per round (median ", "ledger.Store.Append @ 1,000", rowOpenDeep,
		"### One durable append, 100-entry ledger, by other files in its directory", dirsizeRow(rowFiletxn, 10000), dirsizeRow(rowFloor, 10000),
		"### A durable two-file commit", rowCommitAll, rowCommitTwo, rowCommitBound, "docs/bench/commit.svg"} {
		require.Contains(t, string(report), want, "the report lacks %q", want)
	}
	// The directory-size targets are measured, in both runs.
	for _, k := range []string{"1,000", "10,000"} {
		re := regexp.MustCompile(`\| one durable append, ` + k + ` other files in the directory \(/ none\) \| at most 1\.10 \| [0-9.]+ \([^|]*\| [0-9.]+ \(`)
		require.Regexp(t, re, string(report), "the targets table lacks the measured %s-file row", k)
	}
	// The two-file commit's targets are measured, in both runs.
	for _, want := range []string{`the two single-file transactions\) \| at most 1\.00`, `one single-file transaction, the close\) \| at most 1\.30`} {
		re := regexp.MustCompile(`\| two-file commit, ledger close \+ board advance \(/ ` + want + ` \| [0-9.]+ \([^|]*\| [0-9.]+ \(`)
		require.Regexp(t, re, string(report), "the targets table lacks the measured two-file commit row %q", want)
	}
	// A second run keeps the notes people wrote under the report.
	notes := "## Notes\n\nwhat was tried\n"
	require.NoError(t, os.WriteFile(md, append(report, notes...), 0o644))
	args = append(args[:len(args):len(args)], "-sections", "lock", "-runs", "1")
	err = withStdout(t, func() error { return run(args) })
	require.NoError(t, err, "run(%q) = %v, want nil", args, err)
	report, err = os.ReadFile(md)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(string(report), "\n\n"+notes), "the report after a rerun ends %q, want the notes %q", report[max(0, len(report)-80):], notes)
	require.NotContains(t, string(report), "## Run 2 of 2", "the rerun kept the old tables")

	for _, name := range []string{"scaling.svg", "group.svg", "commit.svg"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.NoError(t, xml.Unmarshal(data, new(struct{})), "%s is not well-formed XML", name)
		require.Contains(t, string(data), "<svg", "%s is no SVG", name)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, strings.HasPrefix(e.Name(), ".peers-"), "run left its scratch directory %s", e.Name())
	}
}

func TestBadFlagsAreRefused(t *testing.T) {
	for _, args := range [][]string{{"-sections", "nope"}, {"-rounds", "0"}, {"-scaling-sizes", "10,x"}, {"-contend-procs", "1"}, {"-commit-ops", "0"}} {
		err := run(append([]string{"-dir", t.TempDir()}, args...))
		require.Error(t, err, "run(%q) = nil, want an error", args)
	}
}

// withStdout runs fn with the process's stdout sent to the test log.
func withStdout(t *testing.T, fn func() error) error {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	saved := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	err = fn()
	os.Stdout = saved
	w.Close()
	t.Log(string(<-done))
	r.Close()
	return err
}

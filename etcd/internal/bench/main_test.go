package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/filetxn/filetxn/etcd/internal/cluster"
)

// TestMain lets the test binary be a cluster member or a contending
// process, as the benchmark's own binary is.
func TestMain(m *testing.M) {
	dispatch()
	os.Exit(m.Run())
}

// TestBenchmarkRuns runs every section at tiny sizes, writes the Markdown
// section and the chart, and checks that both name every section. The run
// itself fails if any fenced row loses an increment or a ledger on etcd
// ends with other bytes than on files: with the hand-written row's compare
// dropped (handIncrement's fenced ignored), the contended section loses
// increments and this test fails.
func TestBenchmarkRuns(t *testing.T) {
	if !cluster.Supported {
		t.Skip("a cluster of processes needs a Unix system")
	}
	dir := t.TempDir()
	md := filepath.Join(dir, "BENCHMARKS.md")
	if err := os.WriteFile(md, []byte("# Benchmarks\n\n## Notes\n\nkept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	args := []string{"-dir", dir, "-rounds", "1", "-ops", "3", "-procs", "3", "-contend-ops", "4", "-entries", "5", "-ledger-ops", "2", "-md", md, "-svg", dir}
	if err := run(args, out); err != nil {
		t.Fatalf("run(%q) = %v, want nil", args, err)
	}
	got, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, []byte("# Benchmarks\n\n## Notes\n\nkept\n")) || bytes.Count(got, []byte(beginMarker)) != 1 || bytes.Count(got, []byte(endMarker)) != 1 {
		t.Errorf("after a run %s =\n%s\nwant the old text, then the etcd section between its markers", md, got)
	}
	for _, want := range []string{"1 member", "3 members", "processes x", "ledger.Store.Append", "### Targets"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("%s lacks %q:\n%s", md, want, got)
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, "etcd.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(svg, []byte("<rect ")); n != 1+2*4 {
		t.Errorf("etcd.svg has %d rects, want the background and 8 bars", n)
	}
	svg, err = os.ReadFile(filepath.Join(dir, "etcd-contend.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(svg, []byte("<rect ")); n != 1+2*6 {
		t.Errorf("etcd-contend.svg has %d rects, want the background and 12 bars", n)
	}
}

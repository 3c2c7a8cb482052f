package runner

import (
	"os"
	"strings"
	"testing"
)

// TestDemo runs the demo small: two worker processes of five rounds each.
// Every check passes, the progress goes to stderr as plain lines, and
// nothing is left in the temporary directory.
// Ablation: giving each worker its own ledger lock (ledger.WithLockPath per
// worker) makes the ledger checks fail and the demo exit 1.
func TestDemo(t *testing.T) {
	tmp := t.TempDir()
	r := runIn(t, tmp, []string{"TMPDIR=" + tmp}, "demo", "-procs", "2", "-n", "5")
	if r.code != 0 {
		t.Fatalf("demo failed\n%s", r)
	}
	for _, want := range []string{"2 worker processes x 5 rounds", "ticks recorded in the state", "lock waits", "elapsed", "removed", "all checks passed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the demo's table lacks %q\n%s", want, r)
		}
	}
	if strings.Contains(r.stdout, "FAIL") {
		t.Errorf("a check failed\n%s", r)
	}
	if !strings.Contains(r.stderr, "demo: 10/10 rounds") || strings.Contains(r.stderr, "\r") {
		t.Errorf("progress on a pipe should be plain lines ending at 10/10\n%s", r)
	}
	if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 0 {
		t.Errorf("the demo left %v behind in its temporary directory (%v)", ents, err)
	}
}

// TestDemoKeepsItsFilesWithDir runs the demo with -dir and -json: the
// verdict is one JSON document, and the files stay.
func TestDemoKeepsItsFilesWithDir(t *testing.T) {
	dir := t.TempDir()
	r := runIn(t, dir, nil, "-json", "demo", "-procs", "2", "-n", "3", "-dir", "kept")
	if r.code != 0 {
		t.Fatalf("demo failed\n%s", r)
	}
	var v verdict
	decode(t, r, &v)
	if !v.OK || v.Procs != 2 || v.Rounds != 3 || len(v.Checks) == 0 || v.Files == nil || v.Acquisitions != 2*3*4 {
		t.Fatalf("demo -json = %+v", v)
	}
	for _, c := range v.Checks {
		if !c.OK || c.Got != c.Want {
			t.Errorf("check %q: got %d, want %d", c.Name, c.Got, c.Want)
		}
	}
	for _, f := range []string{v.Files.Ledger, v.Files.Board, v.Files.State} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("demo -dir did not keep %s: %v", f, err)
		}
	}
	// A second demo in the same directory is refused rather than mixed in.
	if r := runIn(t, dir, nil, "demo", "-procs", "1", "-n", "1", "-dir", "kept"); r.code != 1 {
		t.Fatalf("demo in a used directory: exit %d, want 1\n%s", r.code, r)
	}
}

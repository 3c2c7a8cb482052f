package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadsAndNoOpsCreateNothing: against a fresh -state-dir, a read
// (ledger list, board show) and a no-op (a close of a closed entry, an
// advance to a status already reached) exit 0 and leave the state
// directory absent: a no-op needs no lock, so it creates no lock file and
// no directory; the ledger and the board are unchanged. A change made
// afterwards creates the sidecar lock, as before. Ablation: the engine's
// MutateProbed taking a free lock first with the store's own lock options
// (which create the lock file and its directories) makes the close and
// the advance create the state directory, and this test goes red.
func TestReadsAndNoOpsCreateNothing(t *testing.T) {
	e := newEnv(t)
	for _, name := range []string{"deferred-work.md", "sprint-status.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		e.write(name, string(b))
	}
	ledger, board := e.read("deferred-work.md"), e.read("sprint-status.yaml")
	for _, args := range [][]string{
		{"ledger", "list", "-file", "deferred-work.md"},
		{"board", "show", "-file", "sprint-status.yaml"},
		{"ledger", "close", "-file", "deferred-work.md", "-date", "2026-06-01", "-note", "again", "DW-2"}, // DW-2 is closed
		{"board", "advance", "-file", "sprint-status.yaml", "3-1-digest-template", "done"},                // already done
		{"board", "advance", "-file", "sprint-status.yaml", "3-2-digest-delivery", "in-progress"},         // already past it
	} {
		e.want(0, args...)
		if _, err := os.Lstat(e.state); !os.IsNotExist(err) {
			t.Fatalf("looprunner %s on a fresh -state-dir: Lstat(%s) = %v, want it absent", strings.Join(args, " "), e.state, err)
		}
	}
	if got := e.read("deferred-work.md"); got != ledger {
		t.Errorf("ledger after the no-ops:\n%s\nwant it unchanged", got)
	}
	if got := e.read("sprint-status.yaml"); got != board {
		t.Errorf("board after the no-ops:\n%s\nwant it unchanged", got)
	}
	e.want(0, "board", "advance", "-file", "sprint-status.yaml", "3-5-bounce-handling", "ready-for-dev")
	if _, err := os.Stat(e.sidecar(e.path("sprint-status.yaml"))); err != nil {
		t.Errorf("sidecar lock after a change: %v, want it created", err)
	}
}

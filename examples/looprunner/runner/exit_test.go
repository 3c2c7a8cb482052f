package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExitCodes gives every exit code at least one command that must end
// with it, and checks that a failure is one line on stderr starting with the
// command's name, and (with -json) one JSON document on stdout.
func TestExitCodes(t *testing.T) {
	e := newEnv(t)
	ledgerFile := e.write("deferred-work.md", "### DW-1: x\nstatus: open\n\n### DW-2: y\nstatus: closed\n")
	dupLedger := e.write("dup.md", "### DW-1: x\nstatus: open\n\n### DW-1: y\nstatus: open\n")
	badLedger := e.write("bad.md", "# Deferred\n\n### DW-1: x\nstatus: open \xff\n")
	boardFile := e.write("sprint-status.yaml", testBoard)
	badBoard := e.write("bad.yaml", "generated: x\nstory_location: {project-root}/a\ndevelopment_status:\n  1-1-a: done\n")
	unordered := e.write("unordered.yaml", "development_status:\n  5-1-x: completed\n")
	quoted := e.write("quoted.yaml", "development_status:\n  \"3-1-a\": backlog\n")
	root := e.path("loops")
	for _, args := range [][]string{{"running"}, {"-paused", "paused"}, {"-max-ticks", "0", "gated"}, {"busy"}} {
		e.want(0, append([]string{"loop", "create", "-root", root}, args...)...)
	}
	// A loop whose state holds a key of the wrong type, and one whose tick
	// counter is at the largest value the format holds.
	for _, edit := range []struct{ name, value string }{{"badkey", `"x"`}, {"full", "9223372036854775807"}} {
		e.want(0, "loop", "create", "-root", root, edit.name)
		sf := filepath.Join(root, loopsDir, edit.name, ".state.loop")
		b, err := os.ReadFile(sf)
		require.NoError(t, err)
		edited := strings.Replace(string(b), `"tick_count": 0,`, `"tick_count": `+edit.value+`,`, 1)
		require.NotEqual(t, string(b), edited, "the state of %s has no \"tick_count\": 0", edit.name)
		require.NoError(t, os.WriteFile(sf, []byte(edited), 0o644))
	}
	busyFile := e.write("busy.md", "")
	hold(t, e.sidecar(busyFile))
	hold(t, loopLock(root, "busy"))

	tests := []struct {
		name    string
		code    int
		command string // the prefix of the error line; "" for success
		args    []string
		mention string // the error line must contain it
	}{
		{"done", 0, "", []string{"ledger", "list", "-file", ledgerFile}, ""},
		{"help", 0, "", []string{"ledger", "add", "-h"}, ""},
		{"guard: approve a running loop", 1, "loop approve", []string{"loop", "approve", "-root", root, "running"}, "not halted"},
		{"guard: close a malformed entry", 1, "ledger close", []string{"ledger", "close", "-file", ledgerFile, "-date", "2026-06-11", "-note", "n", "DW-2"}, "DW-2"},
		{"guard: create a loop that exists", 1, "loop create", []string{"loop", "create", "-root", root, "running"}, "exists"},
		{"guard: a board status outside the order", 1, "board advance", []string{"board", "advance", "-file", unordered, "5-1-x", "done"}, "outside the known order"},
		{"usage: no area", 2, "looprunner", []string{}, ""},
		{"usage: unknown area", 2, "looprunner", []string{"frob"}, "frob"},
		{"usage: unknown command", 2, "looprunner", []string{"ledger", "frob"}, "frob"},
		{"usage: unknown flag", 2, "ledger list", []string{"ledger", "list", "-file", ledgerFile, "-frob"}, "frob"},
		{"usage: missing flag", 2, "ledger add", []string{"ledger", "add", "-file", ledgerFile}, "-title"},
		{"usage: bad date", 2, "ledger close", []string{"ledger", "close", "-file", ledgerFile, "-date", "2026-02-30", "-note", "n", "DW-1"}, "2026-02-30"},
		{"usage: bad status", 2, "ledger list", []string{"ledger", "list", "-file", ledgerFile, "-status", "closed"}, "closed"},
		{"usage: bad gate", 2, "loop create", []string{"loop", "create", "-root", root, "-max-ticks", "many", "x"}, "max-ticks"},
		{"no such ledger", 3, "ledger list", []string{"ledger", "list", "-file", e.path("missing.md")}, "missing.md"},
		{"no such entry", 3, "ledger decide", []string{"ledger", "decide", "-file", ledgerFile, "-date", "2026-06-11", "-label", "l", "DW-7"}, "DW-7"},
		{"no such board", 3, "board show", []string{"board", "show", "-file", e.path("missing.yaml")}, "missing.yaml"},
		{"no such row", 3, "board advance", []string{"board", "advance", "-file", boardFile, "9-9-x", "done"}, "9-9-x"},
		{"no such loop", 3, "loop show", []string{"loop", "show", "-root", root, "ghost"}, "ghost"},
		{"no such loop root", 3, "loop show", []string{"loop", "show", "-root", e.path("no-root"), "running"}, "no-root"},
		{"halted by a gate", 4, "loop check-gate", []string{"loop", "check-gate", "-root", root, "gated"}, "max_ticks"},
		{"paused", 5, "loop check-gate", []string{"loop", "check-gate", "-root", root, "paused"}, "paused"},
		{"ledger not UTF-8", 65, "ledger list", []string{"ledger", "list", "-file", badLedger}, badLedger},
		{"ledger id carried twice", 65, "ledger close", []string{"ledger", "close", "-file", dupLedger, "-date", "2026-06-11", "-note", "n", "DW-1"}, "lines 1, 4"},
		{"board not YAML", 65, "board show", []string{"board", "show", "-file", badBoard}, badBoard + ": line 2"},
		{"board row it cannot rewrite", 65, "board advance", []string{"board", "advance", "-file", quoted, "3-1-a", "done"}, quoted + ": line 2: 3-1-a"},
		{"loop state it does not understand", 65, "loop show", []string{"loop", "show", "-root", root, "badkey"}, "tick_count"},
		{"a counter the format cannot hold", 65, "loop tick", []string{"loop", "tick", "-root", root, "full", "--", bin, "help"}, "tick_count"},
		{"loop lock busy", 75, "loop approve", []string{"-lock-timeout", "0", "loop", "approve", "-root", root, "busy"}, "test holds it"},
		{"lock busy", 75, "ledger add", []string{"-lock-timeout", "10ms", "ledger", "add", "-file", busyFile, "-title", "t", "-origin", "o", "-source-spec", "s", "-reason", "r"}, "test holds it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := e.with(t)
			r := e.want(tt.code, tt.args...)
			if tt.code == 0 {
				return
			}
			if tt.command == "looprunner" && len(tt.args) == 0 {
				return // the usage, several lines
			}
			oneErrorLine(t, r, tt.command)
			if !strings.Contains(r.stderr, tt.mention) {
				t.Fatalf("the error line does not mention %q\n%s", tt.mention, r)
			}
			// With -json, stdout is still one JSON document: the command's
			// own (a close reports its ids, the refused among them), else
			// the error and the exit code.
			var doc map[string]any
			r = e.want(tt.code, append([]string{"-json"}, tt.args...)...)
			decode(t, r, &doc)
			if msg, ok := doc["error"]; ok && (doc["exit_code"] != float64(tt.code) || msg == "") {
				t.Fatalf("-json failure document = %v, want exit_code %d\n%s", doc, tt.code, r)
			}
		})
	}
	if got := e.read("bad.md"); got != "# Deferred\n\n### DW-1: x\nstatus: open \xff\n" {
		t.Errorf("the ledger it did not understand was rewritten: %q", got)
	}
	// The counter at its limit failed the tick before it was marked: the
	// harness did not run and the log has no line.
	ticks, err := os.ReadFile(filepath.Join(root, loopsDir, "full", "ticks.jsonl"))
	require.NoError(t, err)
	require.Empty(t, ticks, "ticks.jsonl of the loop whose counter is full = %q, want no line", ticks)
	if _, err := os.Stat(filepath.Join(root, loopsDir, "x")); !os.IsNotExist(err) {
		t.Errorf("a refused create left a loop behind: %v", err)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	quoted := e.write("quoted.yaml", "development_status:\n  \"3-1-a\": backlog\n")
	root := e.path("loops")
	for _, args := range [][]string{{"running"}, {"-paused", "paused"}, {"-max-ticks", "0", "gated"}, {"busy"}} {
		e.want(0, append([]string{"loop", "create", "-root", root}, args...)...)
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
		{"halted by a gate", 4, "loop check-gate", []string{"loop", "check-gate", "-root", root, "gated"}, "max_ticks"},
		{"paused", 5, "loop check-gate", []string{"loop", "check-gate", "-root", root, "paused"}, "paused"},
		{"ledger not UTF-8", 65, "ledger list", []string{"ledger", "list", "-file", badLedger}, badLedger},
		{"ledger id carried twice", 65, "ledger close", []string{"ledger", "close", "-file", dupLedger, "-date", "2026-06-11", "-note", "n", "DW-1"}, "lines 1, 4"},
		{"board not YAML", 65, "board show", []string{"board", "show", "-file", badBoard}, badBoard + ": line 2"},
		{"board row it cannot rewrite", 65, "board advance", []string{"board", "advance", "-file", quoted, "3-1-a", "done"}, quoted + ": line 2: 3-1-a"},
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
	if _, err := os.Stat(filepath.Join(root, loopsDir, "x")); !os.IsNotExist(err) {
		t.Errorf("a refused create left a loop behind: %v", err)
	}
}

package runner

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fuzzCommands are the commands FuzzCommandLine runs: every one but demo
// (it starts processes) and loop tick (it runs the command it is given).
var fuzzCommands = [][]string{
	{"ledger", "add"}, {"ledger", "close"}, {"ledger", "reopen"}, {"ledger", "decide"},
	{"ledger", "archive"}, {"ledger", "list"},
	{"board", "advance"}, {"board", "show"},
	{"loop", "create"}, {"loop", "pause"}, {"loop", "resume"}, {"loop", "approve"},
	{"loop", "check-gate"}, {"loop", "show"}, {"loop", "list"},
	{"loop", "enable-schedule"}, {"loop", "disable-schedule"}, {"loop", "delete"},
	{"lock", "holder"}, {"lock", "sidecar"},
	{"version"}, {"help"},
}

// exitCodes are the documented exit codes of the commands above.
var exitCodes = []int{exitOK, exitRefused, exitUsage, exitNotFound, exitHalted, exitPaused, exitDataError, exitBusy}

const fuzzLedger = "# Deferred Work\n\n### DW-1: Retry SMTP\norigin: review of 3-3\nlocation: n/a\nsource_spec: `spec-3-3.md`\nreason: later\nstatus: open\n\n" +
	"### DW-2: Harden unicode\norigin: review of 3-2\nsource_spec: `spec-3-2.md`\nreason: scope\nstatus: done 2026-06-11\n"

const fuzzBoard = "development_status:\n  epic-1: in-progress\n  1-1-login: review\n  1-2-digest: backlog\n  epic-1-retrospective: optional\n"

// FuzzCommandLine runs the command line in this process on arguments the
// fuzzer makes (the area and command from a list, every later argument
// free, NUL-separated) against a ledger, a board, a loop and odd files
// (empty, a lone BOM, invalid UTF-8, a directory). Whatever the arguments,
// it does not panic, exits with a documented code, reports a failure on
// stderr (one line, starting with the command's name, unless it is a usage
// error that prints the usage), with -json also as {error, exit_code} on
// stdout, and a command that fails changes no file, byte for byte. An
// argument with a path separator is skipped, so that every file it names
// is in the test's directory.
func FuzzCommandLine(f *testing.F) {
	seeds := []struct {
		cmd  int
		args string
	}{
		{0, "-file\x00dw.md\x00-title\x00T\x00-origin\x00o\x00-source-spec\x00s\x00-reason\x00r"},
		{0, "-file\x00dw.md\x00-title\x00\x00-origin\x00o\x00-source-spec\x00s\x00-reason\x00r"},
		{0, "-file\x00dw.md\x00-title\x00T\x00-origin\x00o\x00-source-spec\x00s\x00-reason\x00r\x00-severity\x00urgent"},
		{0, "-file\x00bad.md\x00-title\x00T\x00-origin\x00o\x00-source-spec\x00s\x00-reason\x00r"},
		{1, "-file\x00dw.md\x00-date\x002026-02-30\x00-note\x00n\x00DW-1"},
		{1, "-file\x00dw.md\x00-date\x002026-06-12\x00-note\x00n\x00DW-1\x00DW-99"},
		{1, "-json\x00-file\x00bom.md\x00-date\x002026-06-12\x00-note\x00n\x00DW-1"},
		{3, "-file\x00dw.md\x00-date\x002026-06-12\x00-label\x00L\x00DW-1"},
		{4, "-file\x00dw.md\x00-before\x002026-13-01"},
		{4, "-file\x00dir\x00-stamp\x002026-06-12"},
		{5, "-file\x00empty.md\x00-status\x00all"},
		{6, "-file\x00ss.yaml\x001-2-digest\x00in-progress"},
		{6, "-file\x00ss.yaml\x001-1-login\x00bogus"},
		{6, "-file\x00ss.yaml\x00-allow-unordered\x001-1-login\x00blocked"},
		{7, "-json\x00-file\x00bad.md"},
		{8, "-root\x00loops\x00-max-ticks\x00-1\x00x"},
		{8, "-root\x00loops\x00-max-ticks\x0099999999999999999999\x00x"},
		{8, "-root\x00loops\x00-budget-usd\x00NaN\x00-expires-at\x002026-02-30T00:00:00Z\x00y"},
		{8, "-root\x00loops\x00-tick-timeout\x000s\x00..\x00z"},
		{9, "-root\x00loops\x00-reason\x00r\x00t"},
		{12, "-root\x00loops\x00t"},
		{17, "-root\x00loops\x00t"},
		{18, "dw.md"},
		{19, "ss.yaml"},
		{21, "ledger\x00add"},
		{21, "-json"},          // help takes the global flags after it
		{21, "-json\x00bogus"}, // and reports its usage error as JSON
		{21, "-0"},             // and names itself in a flag error
	}
	for _, s := range seeds {
		f.Add(uint8(s.cmd), s.args)
	}
	f.Fuzz(func(t *testing.T, cmd uint8, tail string) {
		args := slices.Clone(fuzzCommands[int(cmd)%len(fuzzCommands)])
		if tail != "" {
			args = append(args, strings.Split(tail, "\x00")...)
		}
		for _, a := range args {
			if strings.ContainsAny(a, `/\`) || strings.HasPrefix(a, "~") || len(args) > 40 {
				return // a file outside the test's directory, or a runaway
			}
		}
		dir := t.TempDir()
		t.Chdir(dir)
		t.Setenv("FILETXN_STATE_DIR", filepath.Join(dir, "state"))
		t.Setenv("LOOPSTATE_ROOT", "")
		for name, data := range map[string]string{
			"dw.md": fuzzLedger, "ss.yaml": fuzzBoard, "empty.md": "", "bom.md": "\ufeff", "bad.md": "### DW-1: \xff\xfe\nstatus: open\n",
		} {
			if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Mkdir("dir", 0o755); err != nil {
			t.Fatal(err)
		}
		if r := runHere("loop", "create", "-root", "loops", "t"); r.code != 0 {
			t.Fatalf("setup: %s", r)
		}
		before := snapshot(t, dir)

		r := runHere(args...)
		if !slices.Contains(exitCodes, r.code) {
			t.Fatalf("exit code %d is not documented\n%s", r.code, r)
		}
		if r.code == 0 {
			return
		}
		name := args[0]
		switch {
		case name == "help":
			name = "looprunner: help" // help names no command of its own
		case len(args) > 1 && name != "version":
			name += " " + args[1]
		}
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		oneLine := len(lines) == 1 && strings.HasSuffix(r.stderr, "\n") && strings.HasPrefix(r.stderr, name+": ")
		if !oneLine && !(r.code == exitUsage && strings.HasPrefix(r.stderr, "usage: ")) {
			t.Fatalf("a failure is one line on stderr that starts with %q\n%s", name+": ", r)
		}
		var doc struct {
			Error    string   `json:"error"`
			ExitCode int      `json:"exit_code"`
			Unknown  []string `json:"unknown"`
		}
		if slices.Contains(args, "-json") && oneLine {
			// One JSON document: {error, exit_code}, or the result of a
			// close that closed what it knew and names the ids it did not.
			err := json.Unmarshal([]byte(r.stdout), &doc)
			if err != nil || (doc.Unknown == nil && (doc.ExitCode != r.code || doc.Error == "")) {
				t.Fatalf("with -json a failure is one JSON document, {error, exit_code} (%v)\n%s", err, r)
			}
		}
		switch {
		case r.code == exitHalted || r.code == exitPaused:
			return // check-gate's answers: a halt it makes is written
		case r.code == exitNotFound && (strings.HasPrefix(r.stdout, "closed: ") || doc.Unknown != nil):
			return // ledger close closes the ids it knows, then fails on the others
		}
		if after := snapshot(t, dir); !sameFiles(before, after) {
			t.Fatalf("a command that failed changed the files\nbefore %q\nafter  %q\n%s", before, after, r)
		}
	})
}

// snapshot maps every regular file under dir, lock files and the state
// directory aside (a lock file is written by taking the lock), to its
// bytes.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p == filepath.Join(dir, "state"):
			return filepath.SkipDir
		case d.IsDir(), strings.HasSuffix(p, ".lock"):
			return nil
		}
		b, err := os.ReadFile(p)
		m[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameFiles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal([]byte(v), []byte(w)) {
			return false
		}
	}
	return true
}

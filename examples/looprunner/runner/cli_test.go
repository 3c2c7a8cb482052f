package runner

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// runHere runs the command line args in this process, as main does, and
// returns what it printed and its exit code. The commands that only parse
// and print need no binary.
func runHere(args ...string) result {
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(""), &stdout, &stderr)
	return result{args: args, stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// everyCommand returns the command line of every command, area first:
// {"ledger", "add"}, ..., {"demo"}, {"version"}.
func everyCommand() [][]string {
	var out [][]string
	for _, a := range areas {
		for _, n := range names(commands[a.name]) {
			out = append(out, []string{a.name, n})
		}
	}
	for _, n := range names(topLevel) {
		out = append(out, []string{n})
	}
	return out
}

// placeholderOfAType is a flag in help whose placeholder is a Go type
// rather than a word that says what to give.
var placeholderOfAType = regexp.MustCompile(`(?m)^\s+-\S+ (string|value|int|uint|float|duration)\b`)

// TestHelpOfEveryCommandGoesToStdout: -h, -help, --help and help AREA
// COMMAND print the command's help on stdout with exit 0: a usage line with
// its required flags and positional arguments, its one-line summary, and
// flags with placeholders that say what to give. Internal flags are hidden.
func TestHelpOfEveryCommandGoesToStdout(t *testing.T) {
	for _, cmd := range everyCommand() {
		name := strings.Join(cmd, " ")
		c := commands[cmd[0]][cmd[len(cmd)-1]]
		if len(cmd) == 1 {
			c = topLevel[cmd[0]]
		}
		var first string
		for _, args := range [][]string{
			append(append([]string{}, cmd...), "-h"),
			append(append([]string{}, cmd...), "-help"),
			append(append([]string{}, cmd...), "--help"),
			append([]string{"help"}, cmd...),
		} {
			r := runHere(args...)
			require.Equal(t, 0, r.code, "looprunner %q: exit %d, want 0\n%s", args, r.code, r)
			require.Empty(t, r.stderr, "looprunner %q: stderr = %q, want nothing", args, r.stderr)
			if first == "" {
				first = r.stdout
			}
			require.Equal(t, first, r.stdout, "looprunner %q prints another help than %q", args, cmd)
		}
		usage, _, _ := strings.Cut(first, "\n")
		wantPrefix := "usage: looprunner " + name + " "
		require.True(t, strings.HasPrefix(usage, wantPrefix), "%s -h: usage line %q, want it to start with %q", name, usage, wantPrefix)
		require.True(t, strings.HasSuffix(usage, "[flags]"+prefixed(" ", c.args)), "%s -h: usage line %q, want it to end with the arguments %q", name, usage, c.args)
		require.Contains(t, first, "\n"+c.summary+"\n", "%s -h lacks its summary", name)
		require.NotRegexp(t, placeholderOfAType, first, "%s -h: a flag's placeholder is a type, not a word", name)
		require.NotContains(t, first, "-worker", "%s -h shows an internal flag", name)
	}
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// TestHelpMarksRequiredFlags: a command's required flags are in its usage
// line and marked in its flag list.
func TestHelpMarksRequiredFlags(t *testing.T) {
	tests := []struct {
		args  []string
		usage string
	}{
		{[]string{"ledger", "add"}, "usage: looprunner ledger add -file FILE -title TITLE -origin WHERE -source-spec SPEC -reason WHY [flags]"},
		{[]string{"ledger", "close"}, "usage: looprunner ledger close -file FILE -date DATE -note NOTE [flags] ID..."},
		{[]string{"board", "advance"}, "usage: looprunner board advance -file FILE [flags] KEY STATUS"},
		{[]string{"loop", "tick"}, "usage: looprunner loop tick -root DIR [flags] NAME -- CMD [ARG...]"},
		{[]string{"lock", "holder"}, "usage: looprunner lock holder [flags] PATH"},
	}
	for _, tt := range tests {
		r := runHere(append(tt.args, "-h")...)
		usage, _, _ := strings.Cut(r.stdout, "\n")
		require.Equal(t, tt.usage, usage, "looprunner %q -h: usage line = %q, want %q", tt.args, usage, tt.usage)
	}
	r := runHere("ledger", "add", "-h")
	require.Regexp(t, `(?m)^  -title TITLE +the TITLE of the entry \(required\)$`, r.stdout, "ledger add -h does not mark -title required")
	require.Regexp(t, `(?m)^  -severity SEVERITY +its SEVERITY: critical, high, medium or low$`, r.stdout, "ledger add -h: -severity")
}

// TestHelpOfAreas: an area's help (AREA -h, AREA help, help AREA, and help
// AREA -h) lists its commands on stdout with exit 0, and so does the
// binary's (-h, help); the global flags may follow help.
func TestHelpOfAreas(t *testing.T) {
	for _, a := range areas {
		for _, args := range [][]string{{a.name, "-h"}, {a.name, "--help"}, {a.name, "help"}, {"help", a.name}, {"help", a.name, "-h"}, {"help", "-json", a.name}} {
			r := runHere(args...)
			require.Equal(t, 0, r.code, "looprunner %q: exit %d, want 0\n%s", args, r.code, r)
			require.Empty(t, r.stderr, "looprunner %q: stderr = %q, want nothing", args, r.stderr)
			require.True(t, strings.HasPrefix(r.stdout, "usage: looprunner "+a.name+" COMMAND"), "looprunner %q = %q, want the area's usage", args, r.stdout)
			for _, n := range names(commands[a.name]) {
				require.Regexp(t, `(?m)^  `+regexp.QuoteMeta(n)+` `, r.stdout, "looprunner %q does not list %s", args, n)
			}
		}
	}
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"help", "help"}, {"-json", "help"}, {"help", "-h"}, {"help", "-json"}} {
		r := runHere(args...)
		require.Equal(t, 0, r.code, "looprunner %q: exit %d, want 0\n%s", args, r.code, r)
		require.Contains(t, r.stdout, "usage: looprunner ", "looprunner %q", args)
		require.Contains(t, r.stdout, "  loop tick ", "looprunner %q does not list loop tick", args)
		require.Empty(t, r.stderr, "looprunner %q: stderr = %q, want nothing", args, r.stderr)
	}
	// Asked for nothing, the usage is an error: stderr, exit 2.
	r := runHere()
	require.Equal(t, 2, r.code, "looprunner: exit %d, want 2", r.code)
	require.Empty(t, r.stdout, "looprunner: stdout = %q, want nothing", r.stdout)
	require.Contains(t, r.stderr, "usage: looprunner ", "looprunner: stderr")
}

// TestUsageErrorsSpeakTheCommandLine: a usage error is one line on stderr,
// nothing on stdout and exit 2, in the command line's own words: the flag
// it came from, what it wants, and the nearest name for a typo.
func TestUsageErrorsSpeakTheCommandLine(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "deferred-work.md")
	tests := []struct {
		args []string
		line string
	}{
		{[]string{"legder", "list"}, `looprunner: unknown command "legder"; did you mean "ledger"? (want ledger, board, loop, lock, batch, demo, version, help)`},
		{[]string{"ledger", "clsoe"}, `looprunner: ledger: unknown command "clsoe"; did you mean "close"? (want add, archive, close, decide, list, reopen)`},
		{[]string{"loop", "chek-gate"}, `looprunner: loop: unknown command "chek-gate"; did you mean "check-gate"? (want approve, check-gate, create, delete, disable-schedule, enable-schedule, list, pause, resume, show, tick)`},
		{[]string{"ledger"}, `looprunner: ledger: missing command (want add, archive, close, decide, list, reopen); see 'looprunner ledger -h'`},
		{[]string{"ledger", "list", "-fiel", file}, `ledger list: unknown flag -fiel; did you mean -file?`},
		{[]string{"ledger", "list", "-frob"}, `ledger list: unknown flag -frob; see 'looprunner ledger list -h'`},
		{[]string{"ledger", "list"}, `ledger list: missing -file; see 'looprunner ledger list -h'`},
		{[]string{"ledger", "list", "-file"}, `ledger list: -file needs a value: -file FILE; see 'looprunner ledger list -h'`},
		{[]string{"-lock-timeout", "5", "ledger", "list", "-file", file}, `looprunner: -lock-timeout "5": a duration needs a unit: 5s, 5ms or 5m`},
		{[]string{"ledger", "list", "-lock-timeout", "soon", "-file", file}, `ledger list: -lock-timeout "soon": want a duration such as 30s, 500ms or 2m; see 'looprunner ledger list -h'`},
		{[]string{"demo", "-procs", "many"}, `demo: -procs "many": want an integer; see 'looprunner demo -h'`},
		{[]string{"ledger", "add", "-file", file, "-title", "t", "-origin", "o", "-source-spec", "s", "-reason", "r", "-severity", "urgent"}, `ledger add: -severity "urgent": must be one of critical, high, medium, low`},
		{[]string{"ledger", "close", "-file", file, "-date", "2026-02-30", "-note", "n", "DW-1"}, `ledger close: -date "2026-02-30": must be a calendar date, YYYY-MM-DD`},
		{[]string{"loop", "tick", "-root", dir, "-timeout", "5", "ci", "--", "true"}, `loop tick: -timeout "5": a duration needs a unit: 5s, 5ms or 5m; see 'looprunner loop tick -h'`},
		{[]string{"loop", "create", "-root", dir, "-tick-timeout", "90", "ci"}, `loop create: -tick-timeout "90": want a duration with a unit, such as 90s or 30m; see 'looprunner loop create -h'`},
		{[]string{"help", "ledger", "frob"}, `looprunner: help: ledger: unknown command "frob" (want add, archive, close, decide, list, reopen)`},
		{[]string{"help", "demo", "x"}, `looprunner: help: demo has no commands`},
		{[]string{"loop", "create", "-root", dir, "-max-ticks", "-3", "ci"}, `loop create: -max-ticks "-3": want an integer of at least 0; see 'looprunner loop create -h'`},
		{[]string{"loop", "create", "-root", dir, "-checkpoint-every", "0", "ci"}, `loop create: -checkpoint-every "0": want an integer of at least 1; see 'looprunner loop create -h'`},
		{[]string{"loop", "create", "-root", dir, "-budget-usd", "-1", "ci"}, `loop create: -budget-usd "-1": want a number of at least 0; see 'looprunner loop create -h'`},
		{[]string{"loop", "create", "-root", dir, "-budget-seconds", "NaN", "ci"}, `loop create: -budget-seconds "NaN": want a number such as 2.5; see 'looprunner loop create -h'`},
		{[]string{"loop", "create", "-root", dir, "-tick-timeout", "0s", "ci"}, `loop create: -tick-timeout "0s": want a positive duration; see 'looprunner loop create -h'`},
		{[]string{"loop", "create", "-root", dir, "-expires-at", "2026-07-01T18:00:00.5Z", "ci"}, `loop create: -expires-at "2026-07-01T18:00:00.5Z": want whole seconds; see 'looprunner loop create -h'`},
	}
	for _, tt := range tests {
		r := runHere(tt.args...)
		require.Equal(t, 2, r.code, "looprunner %q: exit %d, want 2\n%s", tt.args, r.code, r)
		require.Empty(t, r.stdout, "looprunner %q: stdout = %q, want nothing", tt.args, r.stdout)
		require.Equal(t, tt.line+"\n", r.stderr, "looprunner %q: stderr = %q, want %q", tt.args, r.stderr, tt.line)
	}
	_, err := os.Stat(file)
	require.ErrorIs(t, err, os.ErrNotExist, "a refused ledger add created %s", file)
	_, err = os.Stat(filepath.Join(dir, loopsDir))
	require.ErrorIs(t, err, os.ErrNotExist, "a refused loop create made %s", loopsDir)
}

// TestDidYouMean: a typo of a name suggests it, a word far from every name
// suggests nothing.
func TestDidYouMean(t *testing.T) {
	tests := []struct {
		word       string
		candidates []string
		want       string
	}{
		{"legder", []string{"ledger", "board"}, `; did you mean "ledger"?`},
		{"bord", []string{"ledger", "board"}, `; did you mean "board"?`},
		{"ls", []string{"list", "lock"}, ""},
		{"enable", []string{"enable-schedule", "disable-schedule"}, `; did you mean "enable-schedule"?`},
		{"frob", []string{"ledger", "board", "loop", "lock"}, ""},
		{"-stat-dir", []string{"-state-dir", "-json"}, "; did you mean -state-dir?"},
		{"ledger", []string{"ledger"}, ""},
	}
	for _, tt := range tests {
		got := didYouMean(tt.word, tt.candidates)
		require.Equal(t, tt.want, got, "didYouMean(%q, %q) = %q, want %q", tt.word, tt.candidates, got, tt.want)
	}
}

// TestVersionPrintsTheModuleVersion: version prints the module and its
// version from the build information ("(devel)" when the build did not
// know it, then with the commit if it did), and with -json the same as one
// document.
func TestVersionPrintsTheModuleVersion(t *testing.T) {
	e := newEnv(t)
	r := e.want(0, "version")
	require.Regexp(t, `^looprunner github\.com/filetxn/filetxn (v\d+\.\d+\.\d+\S*|\(devel\))( \(.*\))?\n$`, r.stdout, "looprunner version = %q", r.stdout)
	var bi buildInfo
	decode(t, e.want(0, "-json", "version"), &bi)
	require.Equal(t, "github.com/filetxn/filetxn", bi.Module, "version -json: module = %q", bi.Module)
	require.Regexp(t, `^(v\d+\.\d+\.\d+\S*|\(devel\))$`, bi.Version, "version -json: version = %q", bi.Version)
	require.Contains(t, r.stdout, " "+bi.Version, "version = %q, want the version of -json, %q", r.stdout, bi.Version)
	oneErrorLine(t, e.want(2, "version", "extra"), "version")
}

// TestVersionOfABuild: what version says for a release, a build in a
// checkout and a build that knew nothing.
func TestVersionOfABuild(t *testing.T) {
	main := debug.Module{Path: "github.com/filetxn/filetxn"}
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "4e3876d0c1f2a3b4c5d6e7f8091a2b3c4d5e6f70"}, {Key: "vcs.time", Value: "2026-12-01T08:11:00Z"}, {Key: "vcs.modified", Value: "true"}}
	release, devel := main, main
	release.Version, devel.Version = "v0.3.0", "(devel)"
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"a release", &debug.BuildInfo{GoVersion: "go1.26.8", Main: release}, "looprunner github.com/filetxn/filetxn v0.3.0 (go1.26.8)"},
		{"a checkout with its commit", &debug.BuildInfo{GoVersion: "go1.26.8", Main: devel, Settings: vcs}, "looprunner github.com/filetxn/filetxn (devel) (commit 4e3876d0c1f2, modified, go1.26.8)"},
		{"a checkout without", &debug.BuildInfo{GoVersion: "go1.26.8", Main: devel}, "looprunner github.com/filetxn/filetxn (devel) (go1.26.8)"},
		{"no build information", nil, "looprunner github.com/filetxn/filetxn (devel)"},
	}
	for _, tt := range tests {
		got := buildInfoOf(tt.bi, tt.bi != nil).String()
		require.Equal(t, tt.want, got, "version of %s = %q, want %q", tt.name, got, tt.want)
	}
}

// TestTickExitCodes: a scheduler can tell how a tick went from the exit
// code alone, and with -json stdout is the tick's record and nothing else,
// whatever the harness printed.
// Ablations: loopTick returning nil instead of tickExit's error makes every
// row but the first and the last exit 0 (and TestTickTimeout with it);
// the harness's stdout sent to stdout under -json puts the help text in
// front of the record of the ok row. The harness that cannot be started is a
// file without the execute bit on Unix, and on Windows (which has no such
// bit) a .exe that is not a program.
func TestTickExitCodes(t *testing.T) {
	e := newEnv(t)
	root := e.path("loops")
	notExec := e.write("not-executable", "#!/bin/sh\n")
	if runtime.GOOS == "windows" {
		notExec = e.write("not-executable.exe", "not a program\n")
	}
	for _, name := range []string{"ci", "halted", "paused"} {
		e.want(0, "loop", "create", "-root", root, name)
	}
	e.want(0, "loop", "create", "-root", root, "-max-ticks", "0", "gated")
	e.want(4, "loop", "check-gate", "-root", root, "gated") // halts it
	e.want(0, "loop", "pause", "-root", root, "paused")
	tests := []struct {
		name    string
		loop    string
		harness []string
		code    int
		outcome string
	}{
		{"ok", "ci", []string{bin, "help"}, 0, "ok"}, // help prints to stdout: the harness's noise
		{"the harness failed", "ci", []string{bin, "frob"}, 6, "fail"},
		{"the harness was not found", "ci", []string{filepath.Join(e.dir, "no-such-harness")}, 127, "fail"},
		{"the harness cannot be started", "ci", []string{notExec}, 126, "fail"},
		{"skipped: the loop is halted", "gated", []string{bin, "help"}, 4, "skipped"},
		{"skipped: the loop is paused", "paused", []string{bin, "help"}, 0, "skipped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := e.with(t)
			args := append([]string{"loop", "tick", "-root", root, tt.loop, "--"}, tt.harness...)
			r := e.want(tt.code, args...)
			if tt.code != 0 {
				require.True(t, strings.HasSuffix(r.stderr, "\n"), "stderr does not end a line")
				lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
				require.True(t, strings.HasPrefix(lines[len(lines)-1], "loop tick: "+tt.loop+": tick "), "loop tick %s: the last line of stderr = %q, want the tick's error", tt.name, lines[len(lines)-1])
			}
			rec := tick(t, e.want(tt.code, append([]string{"-json"}, args...)...))
			require.Equal(t, tt.outcome, rec.Outcome, "loop tick -json %s: outcome = %q, want %q", tt.name, rec.Outcome, tt.outcome)
		})
	}
}

// TestTickReportsAMalformedCostLine: a harness whose last line names
// "cost" but is not a cost line is told so on stderr, as the tick's note
// says (the tick's cost is zero); a good cost line is recorded, and a last
// line that is not about cost is nobody's business. The harness prints a
// line before its last one, which under -json goes to stderr.
// Ablation: with the harness's stdout sent to stdout under -json, the first
// line lands in front of the record, and decoding it fails.
func TestTickReportsAMalformedCostLine(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	e := newEnv(t)
	root := e.path("loops")
	e.want(0, "loop", "create", "-root", root, "ci")
	tests := []struct {
		last string
		why  string // the reason on stderr; "" for no warning
		usd  float64
	}{
		{`{"cost": {"usd": 0.25, "tokens": 1200}, "note": "triaged"}`, "", 0.25},
		{`{"cost": {"usd": "a lot"}}`, "cost.usd is string, want a number", 0},
		{`{"cost": {"tokens": -5}}`, "cost.tokens -5 is negative", 0},
		{`{"cost": {"usd": 1}`, "not JSON", 0},
		{`all done`, "", 0},
	}
	for i, tt := range tests {
		r := e.want(0, "-json", "loop", "tick", "-root", root, "ci", "--", sh, "-c", "echo noise; echo '"+tt.last+"'")
		rec := tick(t, r)
		require.Equal(t, tt.usd, rec.Cost.USD, "tick with last line %s: cost.usd = %v, want %v", tt.last, rec.Cost.USD, tt.usd)
		require.True(t, strings.HasPrefix(r.stderr, "noise\n"), "tick -json: the harness's stdout should go to stderr, got %q", r.stderr)
		if tt.why == "" {
			require.NotContains(t, r.stderr, "cost line", "tick with last line %s: stderr = %q, want no warning", tt.last, r.stderr)
			continue
		}
		want := fmt.Sprintf("loop tick: ci: tick %d: malformed cost line (%s), counted as no cost\n", i+1, tt.why)
		require.True(t, strings.HasSuffix(r.stderr, want), "tick with last line %s: stderr = %q, want it to end with %q", tt.last, r.stderr, want)
		require.Contains(t, rec.Note, "malformed cost line ("+tt.why+")", "tick with last line %s: note = %q", tt.last, rec.Note)
	}
}

// TestLoopRootThatDoesNotExist: every loop command but create refuses a
// -root that does not exist with exit 3, and creates nothing; create makes
// it. Ablation: without openRoot's check, loop list prints an empty table
// with exit 0.
func TestLoopRootThatDoesNotExist(t *testing.T) {
	e := newEnv(t)
	typo := e.path("typo")
	for _, args := range [][]string{
		{"loop", "list", "-root", typo},
		{"loop", "show", "-root", typo, "ci"},
		{"loop", "pause", "-root", typo, "ci"},
		{"loop", "tick", "-root", typo, "ci", "--", bin, "help"},
		{"-json", "loop", "list", "-root", typo},
	} {
		r := e.want(3, args...)
		require.Contains(t, r.stderr, "no such root: -root "+typo+" does not exist", "looprunner %q", args)
		_, err := os.Stat(typo)
		require.ErrorIs(t, err, os.ErrNotExist, "looprunner %q created the root", args)
	}
	e.want(0, "loop", "create", "-root", typo, "ci")
	e.want(0, "loop", "list", "-root", typo)
}

// TestLoopCreateSaysWhereARootNamedLoopsPutsTheLoop: -root loops holds its
// loops in loops/loops/NAME; create says so, loudly, once.
func TestLoopCreateSaysWhereARootNamedLoopsPutsTheLoop(t *testing.T) {
	e := newEnv(t)
	r := e.want(0, "loop", "create", "-root", "loops", "ci")
	require.Equal(t, "created ci in "+filepath.Join("loops", "loops", "ci")+"\n", r.stdout, "loop create -root loops: stdout")
	want := fmt.Sprintf("loop create: note: -root is the directory that holds loops/: this loop is %s (for %s, give -root .)\n",
		filepath.Join("loops", "loops", "ci"), filepath.Join("loops", "ci"))
	require.Equal(t, want, r.stderr, "loop create -root loops: stderr = %q, want %q", r.stderr, want)
	r = e.want(0, "loop", "create", "-root", "loops", "docs")
	require.Empty(t, r.stderr, "a second loop in the same root: stderr = %q, want nothing", r.stderr)
	r = e.want(0, "loop", "create", "-root", ".", "nightly")
	require.Empty(t, r.stderr, "loop create -root .: stderr = %q, want nothing", r.stderr)
	_, err := os.Stat(filepath.Join(e.dir, loopsDir, "nightly", ".state.loop"))
	require.NoError(t, err, "loop create -root . did not make loops/nightly")
}

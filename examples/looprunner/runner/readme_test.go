package runner

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeSnippetsAreCopiedFromExamples: every Go block of the README is
// a verbatim part of an example file the tests compile and run (a
// package's example_test.go, the root's example*_test.go), or of the
// first program, examples/first/main.go (the root's first three blocks are
// also checked by the root package's TestReadmeExampleIsCompiled).
func TestReadmeSnippetsAreCopiedFromExamples(t *testing.T) {
	readme := readFile(t, "../../../README.md")
	examples, err := filepath.Glob("../../../*/example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Glob("../../../example*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	examples = append(append(examples, root...), "../../first/main.go")
	var sources []string
	for _, f := range examples {
		sources = append(sources, readFile(t, f))
	}
	blocks := 0
	for rest := readme; ; {
		var ok bool
		if _, rest, ok = strings.Cut(rest, "```go\n"); !ok {
			break
		}
		block, after, ok := strings.Cut(rest, "```")
		if !ok {
			t.Fatal("README.md has an unclosed Go block")
		}
		rest = after
		blocks++
		found := false
		for _, src := range sources {
			found = found || strings.Contains(src, block)
		}
		if !found {
			t.Errorf("README.md's Go block %d is not part of any example_test.go:\n%s", blocks, block)
		}
	}
	if blocks < 5 {
		t.Errorf("README.md has %d Go blocks, want the first program, the engine's two, the ledger's and the board's", blocks)
	}
}

// readmePending names the commands the README does not list yet: their
// rows are the README's maintainer's to add. Each test below fails once the
// README lists one, so that it leaves this list then.
var readmePending = map[string]bool{}

// TestReadmeListsEveryCommand: the README's table of commands names every
// command the binary has (but those pending).
func TestReadmeListsEveryCommand(t *testing.T) {
	readme := readFile(t, "../../../README.md")
	for _, cmd := range everyCommand() {
		area, name := cmd[0], cmd[len(cmd)-1]
		if readmePending[name] && len(cmd) == 1 {
			require.NotContains(t, readme, "| `"+name, "README.md lists %s: take it off readmePending", name)
			continue
		}
		if len(cmd) == 1 {
			require.Contains(t, readme, "| `"+name, "README.md does not list %s", name)
			continue
		}
		if !strings.Contains(readme, "`"+area+" "+name) && !strings.Contains(readme, name+"\\|") && !strings.Contains(readme, "\\|"+name) {
			t.Errorf("README.md does not list %s %s", area, name)
		}
	}
}

// TestReadmeFlagsAreTheCommandsFlags: in the README's table of commands,
// every flag a row gives a command is one of the command's flags, and every
// flag of the command (but the global ones) is in its row.
func TestReadmeFlagsAreTheCommandsFlags(t *testing.T) {
	readme := readFile(t, "../../../README.md")
	_, table, ok := strings.Cut(readme, "| command | what it does |\n|---|---|\n")
	require.True(t, ok, "README.md has no table of commands")
	table, _, _ = strings.Cut(table, "\n\n")
	flagRe := regexp.MustCompile(`(?:^|[\s\[(` + "`" + `])-([a-z][a-z-]*)`)
	span := regexp.MustCompile("`([^`]*)`")
	rows := 0
	for _, row := range strings.Split(table, "\n") {
		cells := strings.Split(strings.ReplaceAll(row, "\\|", "\x00"), " | ")
		rowFlags := map[string]bool{}
		for _, m := range flagRe.FindAllStringSubmatch(row, -1) {
			rowFlags[m[1]] = true
		}
		for _, sp := range span.FindAllStringSubmatch(cells[0], -1) {
			words := strings.Fields(strings.ReplaceAll(sp[1], "\x00", "|"))
			var cmds [][]string
			if _, ok := topLevel[words[0]]; ok {
				cmds = [][]string{{words[0]}}
			} else {
				for _, n := range strings.Split(words[1], "|") {
					cmds = append(cmds, []string{words[0], n})
				}
			}
			for _, cmd := range cmds {
				rows++
				help := runHere(append(cmd, "-h")...)
				require.Equal(t, 0, help.code, "looprunner %q -h: exit %d\n%s", cmd, help.code, help)
				own, _, _ := strings.Cut(help.stdout, "\nglobal flags")
				has := map[string]bool{}
				for _, m := range regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(own, -1) {
					has[m[1]] = true
				}
				for _, m := range flagRe.FindAllStringSubmatch(sp[1], -1) {
					require.True(t, has[m[1]], "README.md gives %q the flag -%s, which it does not have", cmd, m[1])
				}
				for f := range has {
					require.True(t, rowFlags[f], "README.md's row of %q does not name its flag -%s", cmd, f)
				}
			}
		}
	}
	want := len(everyCommand()) - len(readmePending)
	require.Equal(t, want, rows, "README.md's table has %d commands, want %d", rows, want)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadmeSessionIsWhatTheCommandsPrint: the README's session on the
// sample ledger and board (its console block) is what looprunner prints:
// each "$ looprunner ..." line is run, in order, in a directory holding
// copies of examples/testdata's deferred-work.md and sprint-status.yaml,
// with FILETXN_STATE_DIR set as the README's set-up sets it, and its
// standard output then its standard error must be the lines that follow
// it; the exit codes are those the README gives.
func TestReadmeSessionIsWhatTheCommandsPrint(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the README's session is a Unix shell's: a path prints with backslashes here")
	}
	readme := readFile(t, "../../../README.md")
	_, session, ok := strings.Cut(readme, "```console\n")
	require.True(t, ok, "README.md has no console block")
	session, _, ok = strings.Cut(session, "```")
	require.True(t, ok, "README.md's console block is not closed")
	dir := t.TempDir()
	for _, name := range []string{"deferred-work.md", "sprint-status.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	env := []string{"FILETXN_STATE_DIR=" + filepath.Join(dir, "state")}
	var codes []int
	for _, step := range strings.Split(strings.TrimPrefix(session, "$ "), "\n$ ") {
		line, want, _ := strings.Cut(step, "\n")
		want = strings.TrimSuffix(want, "\n") + "\n" // the split took the newline before "$ "
		args := shellWords(t, line)
		require.Equal(t, "looprunner", args[0], "README.md's session runs %q, want looprunner", line)
		r := runIn(t, dir, env, args[1:]...)
		require.Equal(t, want, r.stdout+r.stderr, "$ %s: printed %q, want README.md's %q", line, r.stdout+r.stderr, want)
		codes = append(codes, r.code)
	}
	// The README says: the second close and the last command exit 3.
	require.Equal(t, []int{0, 0, 0, 3, 0, 0, 0, 0, 3}, codes, "exit codes of README.md's session")
}

// shellWords splits line into words as sh would for the README's commands:
// on spaces, with double quotes around a word that holds spaces.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	quoted, inWord := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, w.String())
				w.Reset()
			}
			inWord = false
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	require.False(t, quoted, "README.md's command %q has an unclosed quote", line)
	if inWord {
		words = append(words, w.String())
	}
	return words
}

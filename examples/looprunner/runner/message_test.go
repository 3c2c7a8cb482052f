package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLibraryErrorsAreSaidInTheCommandLinesWords: an error of the library
// reaches the person in the command line's words, as "ledger close: no
// entry DW-99 in deferred-work.md" does: the file and what it is instead of
// the Go operation and the sentinel ("Read adir: atomicfile: not a regular
// file: directory"), the loop and its root instead of the state file and
// "filetxn: not found", no package names; the exit code is unchanged, and
// -json keeps its fields (error, exit_code) with the same words. A count of
// arguments is singular for one. Ablation: making cli.message return
// err.Error() on one line (the old rendering) turns every library row red;
// count's "1 arguments" turns the argument rows red.
func TestLibraryErrorsAreSaidInTheCommandLinesWords(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, os.Mkdir(e.path("adir"), 0o755))
	require.NoError(t, os.Mkdir(e.path("work"), 0o755))
	e.want(0, "loop", "create", "-root", "work", "nightly")
	e.write("deferred-work.md", "### DW-1: x\nstatus: open\n")
	e.write("sprint-status.yaml", testBoard)
	tests := []struct {
		args []string
		code int
		line string // stderr, without the newline
	}{
		{[]string{"ledger", "list", "-file", "adir"}, exitDataError, "ledger list: adir is a directory, not a ledger file"},
		{[]string{"ledger", "close", "-file", "adir", "-date", "2026-06-11", "-note", "n", "DW-1"}, exitDataError, "ledger close: adir is a directory, not a ledger file"},
		{[]string{"board", "show", "-file", "adir"}, exitDataError, "board show: adir is a directory, not a board file"},
		{[]string{"loop", "show", "-root", "work", "nope"}, exitNotFound, "loop show: no loop nope in work"},
		{[]string{"loop", "pause", "-root", "work", "nope"}, exitNotFound, "loop pause: no loop nope in work"},
		{[]string{"loop", "create", "-root", "work", "nightly"}, exitRefused, "loop create: loop nightly exists (" + filepath.Join("work", "loops", "nightly") + ")"},
		{[]string{"ledger", "close", "-file", "deferred-work.md", "-date", "2026-06-11", "-note", "n", "DW-99"}, exitNotFound, "ledger close: no entry DW-99 in deferred-work.md"},
		{[]string{"loop", "show", "-root", "work"}, exitUsage, "loop show: want one loop name, got no arguments; see 'looprunner loop show -h'"},
		{[]string{"loop", "show", "-root", "work", "a", "b"}, exitUsage, "loop show: want one loop name, got 2 arguments; see 'looprunner loop show -h'"},
		{[]string{"board", "advance", "-file", "sprint-status.yaml", "3-3-export"}, exitUsage, "board advance: want KEY STATUS, got 1 argument; see 'looprunner board advance -h'"},
		{[]string{"ledger", "decide", "-file", "deferred-work.md", "-date", "2026-06-11", "-label", "l", "DW-1", "DW-2"}, exitUsage, "ledger decide: want one id, got 2 arguments; see 'looprunner ledger decide -h'"},
	}
	for _, tt := range tests {
		r := e.want(tt.code, tt.args...)
		require.Equal(t, tt.line+"\n", r.stderr, "looprunner %q: stderr = %q, want %q", tt.args, r.stderr, tt.line)
		var doc map[string]any
		decode(t, e.want(tt.code, append([]string{"-json"}, tt.args...)...), &doc)
		want := strings.TrimPrefix(tt.line, tt.args[0]+" "+tt.args[1]+": ")
		require.Equal(t, want, doc["error"], "looprunner -json %q: error = %q, want %q", tt.args, doc["error"], want)
		require.Equal(t, float64(tt.code), doc["exit_code"], "looprunner -json %q: exit_code = %v, want %d", tt.args, doc["exit_code"], tt.code)
	}
}

// TestAFileNamedAsAPackageIsStillNamed: a file whose name is a package's
// ("board", "ledger") is named in the message all the same: the package
// names are dropped from the library's text before the Go operation is,
// so the path that follows "Decode " is never taken for one. Ablation
// (run): dropping the operations first (as before this fix) leaves
// "board: line 1: ..." whose "board: " then goes as the package's, and the
// message names no file.
func TestAFileNamedAsAPackageIsStillNamed(t *testing.T) {
	e := newEnv(t)
	e.write("board", "garbage: [\n")
	r := e.want(exitDataError, "board", "show", "-file", "board")
	require.Equal(t, "board show: board: line 1: not valid YAML: did not find expected node content\n", r.stderr,
		"looprunner board show -file board: stderr = %q, want it to name the file", r.stderr)
}

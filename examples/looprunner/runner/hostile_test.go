package runner

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/testkit"
)

// An odd input is what a data file can be that a store does not expect:
// its setup makes it at path (creating what it needs around it), or skips.
type oddInput struct {
	name  string
	setup func(t *testing.T, path string)
}

func content(b []byte) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		require.NoError(t, os.WriteFile(path, b, 0o644))
	}
}

// oddInputs are the inputs every store meets, with what each store's
// seed (a valid file of its format) becomes.
func oddInputs(seed []byte, many []byte) []oddInput {
	crlf := bytes.ReplaceAll(seed, []byte("\n"), []byte("\r\n"))
	var mixed []byte // every other line ends in CRLF
	for i, line := range bytes.SplitAfter(seed, []byte("\n")) {
		if i%2 == 0 {
			line = bytes.ReplaceAll(line, []byte("\n"), []byte("\r\n"))
		}
		mixed = append(mixed, line...)
	}
	return []oddInput{
		{"empty file", content(nil)},
		{"lone BOM", content([]byte("\ufeff"))},
		{"BOM and content", content(append([]byte("\ufeff"), seed...))},
		{"invalid UTF-8", content(append(append([]byte{}, seed...), "\xff\xfe bad\n"...))},
		{"NUL bytes", content(append(append([]byte{}, seed...), "\x00\x00\n"...))},
		{"one 10 MB line", content(append(append(append([]byte{}, seed...), "# "...), bytes.Repeat([]byte("x"), 10<<20)...))},
		{"100,000 entries", content(many)},
		{"CRLF", content(crlf)},
		{"mixed line endings", content(mixed)},
		{"directory", func(t *testing.T, p string) { require.NoError(t, os.Mkdir(p, 0o755)) }},
		{"FIFO", func(t *testing.T, p string) {
			if err := mkfifo(p); err != nil {
				t.Skipf("no FIFO here: %v", err)
			}
		}},
		{"socket", func(t *testing.T, p string) {
			if runtime.GOOS == "windows" {
				t.Skip("no unix socket files on Windows")
			}
			// sun_path holds about 100 bytes: listen from the directory.
			t.Chdir(filepath.Dir(p))
			l, err := net.Listen("unix", filepath.Base(p))
			if err != nil {
				t.Skipf("no unix socket here: %v", err)
			}
			t.Cleanup(func() { l.Close() })
		}},
		{"symlink loop", func(t *testing.T, p string) {
			testkit.Skip(t, testkit.NoSymlinks)
			if err := os.Symlink(filepath.Base(p)+".b", p); err != nil {
				t.Skipf("no symbolic links here: %v", err)
			}
			require.NoError(t, os.Symlink(filepath.Base(p), p+".b"))
		}},
		{"dangling symlink", func(t *testing.T, p string) {
			testkit.Skip(t, testkit.NoSymlinks)
			if err := os.Symlink("missing-"+filepath.Base(p), p); err != nil {
				t.Skipf("no symbolic links here: %v", err)
			}
		}},
		{"read-only file", func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, seed, 0o444))
		}},
		{"read-only directory", func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, seed, 0o644))
			require.NoError(t, os.Chmod(filepath.Dir(p), 0o555))
			t.Cleanup(func() { os.Chmod(filepath.Dir(p), 0o755) })
		}},
	}
}

// fileState is what a path is, for before-and-after comparisons: its mode
// and, for a regular file, its bytes; for a link, where it points.
func fileState(path string) string {
	fi, err := os.Lstat(path)
	if err != nil {
		return "missing"
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		l, _ := os.Readlink(path)
		return "link to " + l
	case fi.Mode().IsRegular():
		b, _ := os.ReadFile(path)
		return fmt.Sprintf("%v %d bytes, sha256 %x", fi.Mode(), len(b), sha256.Sum256(b))
	}
	return fi.Mode().String()
}

// dirState is fileState of everything under dir (lock files and the state
// directory of the sidecar locks aside).
func dirState(dir string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			fmt.Fprintf(&b, "%s: %v\n", p, err)
		case d.IsDir() && d.Name() == "state":
			return filepath.SkipDir
		case !strings.HasSuffix(p, ".lock"):
			fmt.Fprintf(&b, "%s: %s\n", p, fileState(p))
		}
		return nil
	})
	return b.String()
}

// hostileStore is a store as the command line reaches it: where its file
// is, how to make it, and the commands that read and write it.
type hostileStore struct {
	name   string
	file   string       // the data file, relative to the sandbox
	create func(e *env) // makes what the file needs around it (a loop), or nil
	seed   []byte       // a valid file
	many   []byte       // a valid file with 100,000 entries
	cmds   [][]string   // "F" stands for file
}

func hostileStores(t *testing.T) []hostileStore {
	var ledger100k bytes.Buffer
	ledger100k.WriteString("# Deferred Work\n\n")
	for i := 1; i <= 100000; i++ {
		fmt.Fprintf(&ledger100k, "### DW-%d: t\norigin: o%d\nsource_spec: `s`\nreason: r\nstatus: open\n\n", i, i)
	}
	var board100k bytes.Buffer
	board100k.WriteString("development_status:\n  epic-1: in-progress\n  1-2-digest: backlog\n")
	for i := 3; i <= 100000; i++ {
		fmt.Fprintf(&board100k, "  1-%d-s: backlog\n", i)
	}
	// A loop's state, as loop create writes it, and the same with 100,000
	// top-level keys it does not know (which it keeps).
	e := newEnv(t)
	e.want(0, "loop", "create", "-root", "loops", "t")
	loopSeed, err := os.ReadFile(e.path(filepath.Join("loops", "loops", "t", ".state.loop")))
	require.NoError(t, err)
	var loop100k bytes.Buffer
	loop100k.WriteString("{\n")
	for i := 1; i <= 100000; i++ {
		fmt.Fprintf(&loop100k, "  \"x-%d\": %d,\n", i, i)
	}
	loop100k.Write(loopSeed[2:])

	return []hostileStore{
		{name: "ledger", file: "dw.md", seed: []byte(fuzzLedger), many: ledger100k.Bytes(), cmds: [][]string{
			{"ledger", "list", "-file", "F"},
			{"ledger", "add", "-file", "F", "-title", "T", "-origin", "o", "-source-spec", "s", "-reason", "r"},
			{"ledger", "close", "-file", "F", "-date", "2026-06-12", "-note", "n", "DW-1"},
			{"ledger", "archive", "-file", "F"},
		}},
		{name: "board", file: "ss.yaml", seed: []byte(fuzzBoard), many: board100k.Bytes(), cmds: [][]string{
			{"board", "show", "-file", "F"},
			{"board", "advance", "-file", "F", "1-2-digest", "in-progress"},
		}},
		{name: "loop", file: filepath.Join("loops", "loops", "t", ".state.loop"), seed: loopSeed, many: loop100k.Bytes(),
			create: func(e *env) { e.want(0, "loop", "create", "-root", "loops", "t") },
			cmds: [][]string{
				{"loop", "show", "-root", "loops", "t"},
				{"loop", "pause", "-root", "loops", "-reason", "r", "t"},
				{"loop", "resume", "-root", "loops", "t"},
			}},
	}
}

// want is what a store's commands give for an odd input: one exit code for
// every command, or codes per command (by its name, "list", "add", ...).
type want struct {
	code  int
	codes map[string]int
}

func (w want) of(cmd string) int {
	if c, ok := w.codes[cmd]; ok {
		return c
	}
	return w.code
}

var (
	works     = want{code: exitOK}
	refused65 = want{code: exitDataError}
)

// hostileWants maps store and input to what the commands give. A missing
// entry is works. Reading never changes a byte; a failing command changes
// no byte of the data file (see TestHostileInput).
func hostileWants(root bool) map[string]want {
	readOnlyDir := want{code: exitRefused, codes: map[string]int{"list": exitOK, "show": exitOK}} // not root
	if root || runtime.GOOS == "windows" {
		readOnlyDir = works // a directory's mode stops neither root nor Windows
	}
	return map[string]want{
		"ledger/invalid UTF-8":       refused65,
		"ledger/directory":           refused65,
		"ledger/FIFO":                refused65,
		"ledger/socket":              refused65,
		"ledger/symlink loop":        {code: exitRefused},
		"ledger/dangling symlink":    {code: exitOK, codes: map[string]int{"list": exitNotFound}}, // add creates the link's target
		"ledger/read-only file":      {code: exitRefused, codes: map[string]int{"list": exitOK}},
		"ledger/read-only directory": readOnlyDir,
		"board/empty file":           refused65, // not a board: no development_status
		"board/lone BOM":             refused65,
		"board/invalid UTF-8":        refused65,
		"board/NUL bytes":            refused65, // YAML allows no control characters
		"board/directory":            refused65,
		"board/FIFO":                 refused65,
		"board/socket":               refused65,
		"board/symlink loop":         {code: exitRefused},
		"board/dangling symlink":     {code: exitNotFound},
		"board/read-only file":       {code: exitRefused, codes: map[string]int{"show": exitOK}},
		"board/read-only directory":  readOnlyDir,
		"loop/empty file":            refused65,
		"loop/lone BOM":              refused65,
		"loop/BOM and content":       refused65, // JSON has no BOM (RFC 8259); the state is our own format
		"loop/invalid UTF-8":         refused65,
		"loop/NUL bytes":             refused65,
		"loop/one 10 MB line":        refused65, // a "# ..." line after the object is not JSON
		"loop/directory":             refused65,
		"loop/FIFO":                  refused65,
		"loop/socket":                refused65,
		"loop/symlink loop":          {code: exitRefused},
		"loop/dangling symlink":      {code: exitNotFound},
		"loop/read-only file":        {code: exitRefused, codes: map[string]int{"show": exitOK}}, // resume: not paused
		"loop/read-only directory":   readOnlyDir,
	}
}

// TestHostileInputGetsAResultOrAClearError runs every store's commands on
// every odd input through the command line (an empty file, a lone BOM, BOM
// and content, invalid UTF-8, NUL bytes, a 10 MB line, 100,000 entries,
// CRLF and mixed line endings, a directory, a FIFO, a socket, a symlink
// loop, a dangling symlink, a read-only file and directory): each gives
// the exit code the table says, within the run's bound (a FIFO must not
// hang a read); a failure is one line on stderr naming the command and the
// file, without a panic; a read never changes the file, and a failed
// command changes no byte of it. A file that must be changed keeps its BOM.
func TestHostileInputGetsAResultOrAClearError(t *testing.T) {
	wants := hostileWants(os.Geteuid() == 0)
	for _, st := range hostileStores(t) {
		for _, in := range oddInputs(st.seed, st.many) {
			t.Run(st.name+"/"+in.name, func(t *testing.T) {
				e := newEnv(t)
				if st.create != nil {
					st.create(e)
				}
				p := e.path(st.file)
				require.NoError(t, os.RemoveAll(p))
				in.setup(t, p)
				w, ok := wants[st.name+"/"+in.name]
				if !ok {
					w = works
				}
				for _, c := range st.cmds {
					args := slices.Clone(c)
					if i := slices.Index(args, "F"); i >= 0 {
						args[i] = st.file
					}
					before := fileState(p)
					r := e.run(args...)
					after := fileState(p)
					name := c[0] + " " + c[1]
					require.Equal(t, w.of(c[1]), r.code, "looprunner %s on %s: exit %d, want %d\n%s", name, in.name, r.code, w.of(c[1]), r)
					require.NotContains(t, r.stderr, "panic", "%s", r)
					if r.code != exitOK {
						names := regexp.QuoteMeta(filepath.Base(st.file))
						if st.name == "loop" {
							names = `(` + names + `|\bt\b)` // or the loop by its name
						}
						require.Regexp(t, "^"+regexp.QuoteMeta(name)+`: [^\n]*`+names+`[^\n]*\n$`, r.stderr,
							"looprunner %s on %s: a failure is one line naming the file\n%s", name, in.name, r)
					}
					if r.code != exitOK || c[1] == "list" || c[1] == "show" {
						require.Equal(t, before, after, "looprunner %s on %s changed the file\n%s", name, in.name, r)
					}
					if r.code == exitOK && bytes.HasPrefix(st.seed, []byte("\ufeff")) == false && strings.HasPrefix(in.name, "BOM") {
						b, _ := os.ReadFile(p)
						require.True(t, bytes.HasPrefix(b, []byte("\ufeff")), "looprunner %s on %s dropped the BOM", name, in.name)
					}
				}
			})
		}
	}
}

// TestAbsurdArgumentsAreRefusedAndChangeNothing: an impossible date, an
// unknown status, negative, huge and non-finite gate numbers, an empty
// title, loop names that are paths or too long are usage errors (exit 2)
// that name the flag or the value and leave every file as it was; names
// with ".." and of 255 bytes work, and one of 256 bytes is refused with
// the system's reason.
func TestAbsurdArgumentsAreRefusedAndChangeNothing(t *testing.T) {
	n255 := strings.Repeat("a", 252) + ".md"
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string // in the one line on stderr
	}{
		{"impossible date", []string{"ledger", "close", "-file", "dw.md", "-date", "2026-02-30", "-note", "n", "DW-1"}, exitUsage, `-date "2026-02-30"`},
		{"month 13", []string{"ledger", "decide", "-file", "dw.md", "-date", "2026-13-01", "-label", "L", "DW-1"}, exitUsage, `-date "2026-13-01"`},
		{"empty title", []string{"ledger", "add", "-file", "dw.md", "-title", "", "-origin", "o", "-source-spec", "s", "-reason", "r"}, exitUsage, "-title"},
		{"unknown severity", []string{"ledger", "add", "-file", "dw.md", "-title", "T", "-origin", "o", "-source-spec", "s", "-reason", "r", "-severity", "urgent"}, exitUsage, `"urgent"`},
		{"unknown status", []string{"board", "advance", "-file", "ss.yaml", "1-2-digest", "bogus"}, exitUsage, `"bogus"`},
		{"status in capitals", []string{"board", "advance", "-file", "ss.yaml", "1-2-digest", "Done"}, exitUsage, `"Done"`},
		{"negative gate", []string{"loop", "create", "-root", "loops", "-max-ticks", "-1", "x"}, exitUsage, "-max-ticks"},
		{"huge gate", []string{"loop", "create", "-root", "loops", "-max-ticks", "99999999999999999999", "x"}, exitUsage, "-max-ticks"},
		{"infinite budget", []string{"loop", "create", "-root", "loops", "-budget-usd", "1e309", "x"}, exitUsage, "-budget-usd"},
		{"NaN budget", []string{"loop", "create", "-root", "loops", "-budget-usd", "NaN", "x"}, exitUsage, "-budget-usd"},
		{"zero checkpoint", []string{"loop", "create", "-root", "loops", "-checkpoint-every", "0", "x"}, exitUsage, "-checkpoint-every"},
		{"impossible expiry", []string{"loop", "create", "-root", "loops", "-expires-at", "2026-02-30T00:00:00Z", "x"}, exitUsage, "-expires-at"},
		{"loop name ..", []string{"loop", "create", "-root", "loops", ".."}, exitUsage, `".."`},
		{"loop name a path", []string{"loop", "create", "-root", "loops", "a/../b"}, exitUsage, `"a/../b"`},
		{"loop name of 255 bytes", []string{"loop", "create", "-root", "loops", strings.Repeat("l", 255)}, exitUsage, "invalid loop name"},
		{"ledger name of 256 bytes", []string{"ledger", "add", "-file", strings.Repeat("a", 253) + ".md", "-title", "T", "-origin", "o", "-source-spec", "s", "-reason", "r"}, exitRefused, strings.Repeat("a", 253) + ".md"}, // and the system's reason, in its words
		{"ledger name of 255 bytes", []string{"ledger", "add", "-file", n255, "-title", "T", "-origin", "o", "-source-spec", "s", "-reason", "r"}, exitOK, ""},
		{"the same ledger through ..", []string{"ledger", "close", "-file", filepath.Join("sub", "..", "dw.md"), "-date", "2026-06-12", "-note", "n", "DW-1"}, exitOK, ""},
		{"the board through ..", []string{"board", "advance", "-file", filepath.Join("sub", "..", "ss.yaml"), "1-2-digest", "done"}, exitOK, ""},
		{"a huge gate that fits", []string{"loop", "create", "-root", "loops", "-max-ticks", "9223372036854775807", "big"}, exitOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.code == exitRefused && strings.Contains(tc.name, "256 bytes") {
				testkit.Skip(t, "Wine 8 reports a name longer than the file system allows as not found (ERROR_FILE_NOT_FOUND)")
			}
			e := newEnv(t)
			require.NoError(t, os.WriteFile(e.path("dw.md"), []byte(fuzzLedger), 0o644))
			require.NoError(t, os.WriteFile(e.path("ss.yaml"), []byte(fuzzBoard), 0o644))
			require.NoError(t, os.Mkdir(e.path("sub"), 0o755))
			require.NoError(t, os.Mkdir(e.path("loops"), 0o755))
			before := dirState(e.dir)
			r := e.run(tc.args...)
			require.Equal(t, tc.code, r.code, "looprunner %s: exit %d, want %d\n%s", strings.Join(tc.args, " "), r.code, tc.code, r)
			if tc.code == exitOK {
				return
			}
			name := tc.args[0] + " " + tc.args[1]
			require.Regexp(t, "^"+regexp.QuoteMeta(name)+": [^\n]*\n$", r.stderr, "a failure is one line\n%s", r)
			require.Contains(t, r.stderr, tc.says, "looprunner %s: the error names %q\n%s", strings.Join(tc.args, " "), tc.says, r)
			require.Equal(t, before, dirState(e.dir), "looprunner %s changed a file\n%s", strings.Join(tc.args, " "), r)
		})
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/etcd"
	"github.com/filetxn/filetxn/etcd/internal/etcdtest"
	"github.com/filetxn/filetxn/lock"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// childArgs names the environment variable that gives a child process
// (see childRun) its command lines, as a JSON list of argument lists.
const childArgs = "LOOPRUNNER_TEST_ARGS"

func TestMain(m *testing.M) {
	if os.Getenv(cliEnv) == "1" { // a command of etcd-demo
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	etcdtest.Register("looprunner", childRun)
	etcdtest.Register("hold", childHold)
	etcdtest.Main(m)
}

// childRun runs each command line of $LOOPRUNNER_TEST_ARGS in turn, one
// invocation of the command each, and returns the first non-zero exit code.
func childRun() int {
	var lines [][]string
	if err := json.Unmarshal([]byte(os.Getenv(childArgs)), &lines); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for _, args := range lines {
		if code := run(args, os.Stdin, os.Stdout, os.Stderr); code != 0 {
			return code
		}
	}
	return 0
}

// childHold takes the lock file $LOOPRUNNER_TEST_LOCK, says "held" on
// stdout, and holds it until its stdin closes.
func childHold() int {
	opt := lock.WithPurpose("test holds it")
	if os.Getenv(childNoHolder) == "1" {
		opt = lock.WithoutHolder() // as bmad-loop holds a lock
	}
	h, err := lock.Acquire(context.Background(), os.Getenv(childLock), opt)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("held")
	io.Copy(io.Discard, os.Stdin)
	h.Release()
	return 0
}

// childLock names the environment variable that gives childHold its lock;
// childNoHolder, set to 1, has it write no holder record.
const (
	childLock     = "LOOPRUNNER_TEST_LOCK"
	childNoHolder = "LOOPRUNNER_TEST_NOHOLDER"
)

// result is what one run of the command printed and how it exited.
type result struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("looprunner %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// sandbox is a test's working directory (the test runs in it), state
// directory for the sidecar locks, and a key prefix of its own in etcd.
type sandbox struct {
	t      *testing.T
	dir    string
	eps    string // the cluster's endpoints, comma-separated
	prefix string
	client *etcd.Backend // a backend of the test's own, on prefix
}

var prefixes int

func newSandbox(t *testing.T, c *etcdtest.Cluster) *sandbox {
	dir := t.TempDir()
	t.Chdir(dir)
	prefixes++
	s := &sandbox{t: t, dir: dir, eps: strings.Join(c.Endpoints(), ","), prefix: fmt.Sprintf("test%d", prefixes)}
	b, err := etcd.New(c.Client(t), s.prefix)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	s.client = b
	return s
}

// run runs the command in this process with -state-dir the sandbox's.
func (s *sandbox) run(args ...string) result {
	s.t.Helper()
	var stdout, stderr bytes.Buffer
	all := append([]string{"-state-dir", filepath.Join(s.dir, "state")}, args...)
	code := run(all, strings.NewReader(""), &stdout, &stderr)
	return result{args: args, stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// etcd runs the command with the sandbox's -etcd and -etcd-prefix.
func (s *sandbox) etcd(args ...string) result {
	s.t.Helper()
	return s.run(append([]string{"-etcd", s.eps, "-etcd-prefix", s.prefix}, args...)...)
}

// want fails the test unless r exited with code.
func (s *sandbox) want(code int, r result) result {
	s.t.Helper()
	require.Equal(s.t, code, r.code, "exit %d, want %d\n%s", r.code, code, r)
	return r
}

// doc returns the document name in etcd, nil when there is none.
func (s *sandbox) doc(name string) []byte {
	s.t.Helper()
	data, err := s.client.Get(context.Background(), name)
	require.NoError(s.t, err)
	return data
}

// put writes the document name in etcd under the lock named lockName, as
// a writer on etcd would.
func (s *sandbox) put(lockName, name string, data []byte) {
	s.t.Helper()
	ctx := context.Background()
	h, err := s.client.Lock(ctx, lockName, true)
	require.NoError(s.t, err)
	defer h.Release()
	require.NoError(s.t, s.client.Commit(ctx, []filetxn.Held{h}, []filetxn.Put{{Name: name, Data: data}}, false))
}

// sidecar returns the lock file that guards the file f in the sandbox.
func (s *sandbox) sidecar(f string) string {
	s.t.Helper()
	abs, err := filepath.Abs(f)
	require.NoError(s.t, err)
	p, err := lock.SidecarPath(filepath.Join(s.dir, "state"), abs)
	require.NoError(s.t, err)
	return p
}

func write(t *testing.T, name string, data []byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(name), 0o755))
	require.NoError(t, os.WriteFile(name, data, 0o644))
}

func read(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	return data
}

// corpus returns the corpus files of testdata/dir: real ledgers or boards
// from public projects.
func corpus(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testdata(t), dir, "*"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

var testdataDir string

func testdata(t *testing.T) string {
	t.Helper()
	if testdataDir == "" {
		wd, err := os.Getwd()
		require.NoError(t, err)
		testdataDir = filepath.Join(wd, "testdata")
	}
	return testdataDir
}

// TestOnEtcd runs the command line against one real etcd cluster, each
// subtest under a key prefix of its own.
func TestOnEtcd(t *testing.T) {
	testdata(t) // before any subtest leaves the package's directory
	c := etcdtest.Start(t, 3)

	// Every corpus ledger and board goes into etcd and back out byte for
	// byte: the document in etcd is the file's bytes, and the file exported
	// from it is too. A file the store refuses is refused, and nothing
	// reaches etcd. Ablation: an import that drops the file's last byte
	// fails it at the first ledger.
	t.Run("RoundTripIsByteForByte", func(t *testing.T) {
		s := newSandbox(t, c)
		for _, k := range []struct{ area, dir string }{{"ledger", "ledgers"}, {"board", "boards"}} {
			for _, src := range corpus(t, k.dir) {
				want := read(t, src)
				name := filepath.Join(k.dir, filepath.Base(src))
				write(t, name, want)
				r := s.etcd(k.area, "import", name)
				if r.code == 65 {
					// A file the store refuses is refused by import too,
					// and nothing reaches etcd.
					require.Nil(t, s.doc(name), "%s refused, yet in etcd", name)
					t.Logf("%s: refused as it should be: %s", name, r.stderr)
					continue
				}
				s.want(0, r)
				require.Equal(t, want, s.doc(name), "etcd's %s after import", name)
				// The store on etcd reads it as a command reads a file.
				show := "list"
				if k.area == "board" {
					show = "show"
				}
				s.want(0, s.etcd(k.area, show, "-file", name))
				require.NoError(t, os.Remove(name))
				s.want(0, s.etcd(k.area, "export", name))
				require.Equal(t, want, read(t, name), "%s after export", name)
				r = s.want(0, s.etcd(k.area, "export", name))
				require.Contains(t, r.stdout, "nothing written", "%s", r)
			}
		}
	})

	// A destination that differs is replaced when it is still what the
	// last copy made (a fast-forward, both ways), and refused and left as
	// it is when it changed since, or when no copy is recorded, unless
	// -force; the same bytes write nothing. Ablations: without the -force
	// check the refusals exit 0; without the record (base always "") the
	// fast-forwards exit 1; either way the test fails.
	t.Run("ADifferentDestinationIsReplacedOnlyIfUnchangedSinceTheLastCopy", func(t *testing.T) {
		s := newSandbox(t, c)
		one := read(t, corpus(t, "ledgers")[0])
		two := append(bytes.Clone(one), "\n<!-- changed on files -->\n"...)
		addOnEtcd := func(title string) {
			s.want(0, s.etcd("ledger", "add", "-file", "dw.md", "-title", title, "-origin", title, "-source-spec", "s", "-reason", "r"))
		}
		write(t, "dw.md", one)
		s.want(0, s.etcd("ledger", "import", "dw.md"))
		r := s.want(0, s.etcd("ledger", "import", "dw.md"))
		require.Contains(t, r.stdout, "nothing written", "%s", r)

		// The file changed, etcd did not: import replaces etcd's copy.
		write(t, "dw.md", two)
		r = s.want(0, s.etcd("ledger", "import", "dw.md"))
		require.Contains(t, r.stdout, "replacing the last copy", "%s", r)
		require.Equal(t, two, s.doc("dw.md"))
		// etcd changed, the file did not: export refreshes the file.
		addOnEtcd("on etcd 1")
		r = s.want(0, s.etcd("ledger", "export", "dw.md"))
		require.Contains(t, r.stdout, "replacing the last copy", "%s", r)
		require.Equal(t, s.doc("dw.md"), read(t, "dw.md"))

		// Both changed: both ways are refused, and nothing changes.
		local := append(read(t, "dw.md"), "\n<!-- changed on files again -->\n"...)
		write(t, "dw.md", local)
		addOnEtcd("on etcd 2")
		onEtcd := s.doc("dw.md")
		r = s.want(1, s.etcd("ledger", "import", "dw.md"))
		require.Contains(t, r.stderr, "the document changed since the last copy", "%s", r)
		require.Contains(t, r.stderr, "-force", "%s", r)
		require.Equal(t, onEtcd, s.doc("dw.md"), "a refused import changed etcd")
		r = s.want(1, s.etcd("ledger", "export", "dw.md"))
		require.Contains(t, r.stderr, "the file changed since the last copy", "%s", r)
		require.Equal(t, local, read(t, "dw.md"), "a refused export changed the file")

		r = s.want(0, s.etcd("-json", "ledger", "export", "-force", "dw.md"))
		var res copyResult
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), "%s", r)
		require.Equal(t, copyResult{Prefix: s.prefix, Copied: []docResult{{File: "dw.md", Name: "dw.md", Bytes: len(onEtcd), Written: true, Replaced: true, Forced: true}}}, res)
		require.Equal(t, onEtcd, read(t, "dw.md"))

		// With no record (another state directory) a difference is refused.
		write(t, "dw.md", two)
		r = s.want(1, s.run("-state-dir", filepath.Join(s.dir, "other"), "-etcd", s.eps, "-etcd-prefix", s.prefix, "ledger", "import", "dw.md"))
		require.Contains(t, r.stderr, "no copy between them is recorded here", "%s", r)
		s.want(0, s.run("-state-dir", filepath.Join(s.dir, "other"), "-etcd", s.eps, "-etcd-prefix", s.prefix, "ledger", "import", "-force", "dw.md"))
		require.Equal(t, two, s.doc("dw.md"))

		// A missing source is exit 3; a file that is not a board is 65.
		s.want(3, s.etcd("ledger", "import", "none.md"))
		s.want(3, s.etcd("ledger", "export", "none.md"))
		write(t, "ss.yaml", []byte("development_status: [unclosed\n"))
		s.want(65, s.etcd("board", "import", "ss.yaml"))
		require.Nil(t, s.doc("ss.yaml"))
	})

	// A ledger's archive goes with it, both ways, and a refusal of either
	// copies neither. Ablation: a kind without the archive (archive
	// returning "") leaves it behind, and the test fails.
	t.Run("TheArchiveGoesWithItsLedger", func(t *testing.T) {
		s := newSandbox(t, c)
		ledgers := corpus(t, "ledgers")
		dw, arch := read(t, ledgers[0]), read(t, ledgers[1])
		write(t, "p/deferred-work.md", dw)
		write(t, "p/deferred-work-archive.md", arch)
		r := s.want(0, s.etcd("ledger", "import", "p/deferred-work.md"))
		require.Equal(t, fmt.Sprintf("p/deferred-work-archive.md: copied into etcd (%d bytes)\np/deferred-work.md: copied into etcd (%d bytes)\n", len(arch), len(dw)), r.stdout)
		require.Equal(t, arch, s.doc("p/deferred-work-archive.md"))
		require.Equal(t, dw, s.doc("p/deferred-work.md"))

		require.NoError(t, os.RemoveAll("p"))
		require.NoError(t, os.Mkdir("p", 0o755))
		write(t, "p/deferred-work.md", dw)
		s.want(0, s.etcd("ledger", "export", "p/deferred-work.md"))
		require.Equal(t, arch, read(t, "p/deferred-work-archive.md"))

		// An archive that changed on both sides refuses the copy of both.
		write(t, "p/deferred-work-archive.md", append(bytes.Clone(arch), "\n"...))
		write(t, "p/deferred-work.md", append(bytes.Clone(dw), "\n"...))
		s.put("p/deferred-work.md", "p/deferred-work-archive.md", append(bytes.Clone(arch), "<!-- changed on etcd -->\n"...))
		r = s.want(1, s.etcd("ledger", "import", "p/deferred-work.md"))
		require.Contains(t, r.stderr, "deferred-work-archive.md differs", "%s", r)
		require.Equal(t, dw, s.doc("p/deferred-work.md"), "a refused import wrote the ledger")
	})

	// The ledger's other commands and batch run on etcd too: a close and
	// an archive with -etcd change the documents, not files, and export
	// brings the ledger and its archive back; a batch of a ledger add and
	// a board advance commits both documents on etcd.
	t.Run("CloseArchiveAndBatchOnEtcd", func(t *testing.T) {
		s := newSandbox(t, c)
		add := func(title string) {
			s.want(0, s.etcd("ledger", "add", "-file", "p/deferred-work.md", "-title", title, "-origin", title, "-source-spec", "s", "-reason", "r"))
		}
		add("one")
		add("two")
		s.want(0, s.etcd("ledger", "close", "-file", "p/deferred-work.md", "-date", "2026-06-11", "-note", "fixed", "DW-1"))
		s.want(0, s.etcd("ledger", "archive", "-file", "p/deferred-work.md", "-stamp", "2026-06-20"))
		require.Contains(t, string(s.doc("p/deferred-work-archive.md")), "### DW-1: one")
		_, err := os.Stat("p")
		require.ErrorIs(t, err, os.ErrNotExist, "ledger commands with -etcd made a directory")

		require.NoError(t, os.Mkdir("p", 0o755))
		r := s.want(0, s.etcd("ledger", "export", "p/deferred-work.md"))
		require.Contains(t, r.stdout, "p/deferred-work-archive.md: copied from etcd", "%s", r)
		require.Equal(t, s.doc("p/deferred-work-archive.md"), read(t, "p/deferred-work-archive.md"))
		require.Equal(t, s.doc("p/deferred-work.md"), read(t, "p/deferred-work.md"))

		write(t, "ss.yaml", demoBoard())
		s.want(0, s.etcd("board", "import", "ss.yaml"))
		require.NoError(t, os.Remove("ss.yaml"))
		var stdout, stderr bytes.Buffer
		batch := `{"op":"ledger.add","file":"p/deferred-work.md","title":"three","origin":"three","source_spec":"s","reason":"r"}
{"op":"board.advance","file":"ss.yaml","key":"` + demoStoryKey(0) + `","status":"review"}
`
		code := run([]string{"-state-dir", filepath.Join(s.dir, "state"), "-etcd", s.eps, "-etcd-prefix", s.prefix, "batch"}, strings.NewReader(batch), &stdout, &stderr)
		require.Equal(t, 0, code, "batch on etcd: %s%s", stdout.String(), stderr.String())
		require.Contains(t, string(s.doc("p/deferred-work.md")), "### DW-3: three")
		require.Contains(t, string(s.doc("ss.yaml")), demoStoryKey(0)+": review")
		_, err = os.Stat("ss.yaml")
		require.ErrorIs(t, err, os.ErrNotExist, "batch with -etcd wrote the board's file")
	})

	// import and export take the file's lock and etcd's: with either held
	// by another, -lock-timeout 0 fails them (exit 75) and nothing is
	// copied. Ablation: a file lock other than the one a board command
	// takes (the sidecar under another state root) lets the import through
	// the held lock, and the test fails.
	t.Run("CopiesTakeBothLocks", func(t *testing.T) {
		s := newSandbox(t, c)
		one := read(t, corpus(t, "boards")[0])
		write(t, "ss.yaml", one)

		// The file lock, held by another process (in this one the
		// command would find it held by its own goroutine).
		holder := etcdtest.Child(t, "hold", childLock+"="+s.sidecar("ss.yaml"))
		stdin, err := holder.StdinPipe()
		require.NoError(t, err)
		stdout, err := holder.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, holder.Start())
		line, err := bufio.NewReader(stdout).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "held\n", line)
		r := s.want(75, s.etcd("-lock-timeout", "0", "board", "import", "ss.yaml"))
		require.Contains(t, r.stderr, "test holds it", "%s", r)
		require.Nil(t, s.doc("ss.yaml"), "an import through a held file lock")
		s.want(75, s.etcd("-lock-timeout", "0", "board", "export", "ss.yaml"))
		require.NoError(t, stdin.Close())
		require.NoError(t, holder.Wait())

		held, err := s.client.Lock(context.Background(), "ss.yaml", true)
		require.NoError(t, err)
		r = s.want(75, s.etcd("-lock-timeout", "0", "board", "import", "ss.yaml"))
		require.Equal(t, "board import: lock ss.yaml busy in etcd (prefix "+s.prefix+"), held by another process's session\n", r.stderr, "%s", r)
		require.Nil(t, s.doc("ss.yaml"), "an import through a held etcd lock")
		require.NoError(t, held.Release())

		s.want(0, s.etcd("board", "import", "ss.yaml"))
		require.Equal(t, one, s.doc("ss.yaml"))
	})

	// ledger add with -etcd appends to the document in etcd and creates no
	// file; processes on the cluster at once lose no entry and mint no id
	// twice; the export then holds every entry. Ablation: the ledger
	// commands without the extension's store options write dw.md on disk
	// and the document stays empty: the test fails.
	t.Run("LedgerAppendsOnEtcd", func(t *testing.T) {
		s := newSandbox(t, c)
		r := s.want(0, s.etcd("ledger", "add", "-file", "dw.md", "-title", "first", "-origin", "o", "-source-spec", "s", "-reason", "r"))
		require.Equal(t, "DW-1\n", r.stdout)
		_, err := os.Stat("dw.md")
		require.ErrorIs(t, err, os.ErrNotExist, "ledger add -etcd made a file")
		require.Contains(t, string(s.doc("dw.md")), "### DW-1: first")

		const procs, adds = 3, 4
		var cmds []*childCmd
		for p := range procs {
			var lines [][]string
			for i := range adds {
				lines = append(lines, []string{"-state-dir", filepath.Join(s.dir, "state"), "-etcd", s.eps, "-etcd-prefix", s.prefix,
					"ledger", "add", "-file", "dw.md", "-title", fmt.Sprintf("p%d a%d", p, i), "-origin", fmt.Sprintf("p%d-%d", p, i), "-source-spec", "s", "-reason", "r"})
			}
			cmds = append(cmds, startChild(t, lines))
		}
		var ids []string
		for _, cmd := range cmds {
			out := cmd.wait(t)
			ids = append(ids, strings.Fields(out)...)
		}
		sort.Strings(ids)
		require.Len(t, ids, procs*adds, "ids printed: %q", ids)
		for i := 1; i < len(ids); i++ {
			require.NotEqual(t, ids[i-1], ids[i], "an id minted twice: %q", ids)
		}

		s.want(0, s.etcd("ledger", "export", "dw.md"))
		got := regexp.MustCompile(`(?m)^### DW-\d+: `).FindAllString(string(read(t, "dw.md")), -1)
		require.Len(t, got, 1+procs*adds, "entries in the exported ledger")
	})

	// $FILETXN_ETCD_ENDPOINTS (and $FILETXN_ETCD_PREFIX) do what -etcd
	// (and -etcd-prefix) do. Ablation: an endpointList that reads only the
	// flag makes the add write dw.md on disk, and the test fails.
	t.Run("TheEnvironmentNamesTheCluster", func(t *testing.T) {
		s := newSandbox(t, c)
		t.Setenv(envEndpoints, s.eps)
		t.Setenv(envPrefix, s.prefix)
		r := s.want(0, s.run("ledger", "add", "-file", "dw.md", "-title", "t", "-origin", "o", "-source-spec", "s", "-reason", "r"))
		require.Equal(t, "DW-1\n", r.stdout)
		_, err := os.Stat("dw.md")
		require.ErrorIs(t, err, os.ErrNotExist, "with $%s ledger add made a file", envEndpoints)
		require.Contains(t, string(s.doc("dw.md")), "### DW-1: t")
		s.want(0, s.run("ledger", "export", "dw.md"))
		require.Contains(t, string(read(t, "dw.md")), "### DW-1: t")
	})

	// The loop commands, and a batch's loop operation, keep their loops on
	// etcd: create, tick, list, a batch's pause, show; no local file is
	// made, and without -etcd the root is another (a missing one, exit 3).
	// import without a cluster is a usage error. Ablation: openRoot
	// without the extensions' options makes work/loops/nightly here.
	t.Run("LoopCommandsRunOnEtcd", func(t *testing.T) {
		s := newSandbox(t, c)
		s.want(0, s.etcd("loop", "create", "-root", "work", "nightly"))
		s.want(0, s.etcd("loop", "tick", "-root", "work", "nightly", "--", "true"))
		r := s.want(0, s.etcd("loop", "list", "-root", "work"))
		require.Contains(t, r.stdout, "nightly", "%s", r)
		var stdout, stderr bytes.Buffer
		batch := `{"op":"loop.pause","loop":"nightly","root":"work"}` + "\n"
		code := run([]string{"-state-dir", filepath.Join(s.dir, "state"), "-etcd", s.eps, "-etcd-prefix", s.prefix, "batch"}, strings.NewReader(batch), &stdout, &stderr)
		require.Equal(t, 0, code, "batch with a loop operation on etcd: %s", stderr.String())
		r = s.want(0, s.etcd("-json", "loop", "show", "-root", "work", "nightly"))
		require.Contains(t, r.stdout, `"status": "paused"`, "%s", r)
		require.Contains(t, r.stdout, `"tick_count": 1`, "%s", r)
		_, err := os.Stat("work")
		require.ErrorIs(t, err, os.ErrNotExist, "a loop command on etcd made its root here")
		s.want(3, s.run("loop", "list", "-root", "work"))

		r = s.want(2, s.run("ledger", "import", "dw.md"))
		require.Contains(t, r.stderr, "no etcd cluster", "%s", r)
	})

	// A loop goes from files into etcd and back byte for byte: its state
	// and every complete line of ticks.jsonl (230 lines: three commits),
	// a torn last line skipped and said so; export into a root without the
	// loop makes its directory and lock file and gives the same files. A
	// tick on etcd is exported without -force (the files are still the last
	// copy); with ticks on both sides, import and export are refused and
	// change nothing, and -force replaces etcd's loop, its old lines gone. A
	// state that does not parse is exit 65, a missing loop exit 3.
	// Ablation: one commit for every line fails the import (etcd's 128
	// operations); no removal before a replacing import leaves the old
	// lines and the -force round trip differs; an export that writes the
	// state alone leaves the log, and the first comparison fails; a
	// removal only when etcd has a state leaves a cut import's line.
	t.Run("LoopsGoIntoEtcdAndBack", func(t *testing.T) {
		s := newSandbox(t, c)
		ctx := context.Background()
		s.want(0, s.run("loop", "create", "-root", "work", "nightly"))
		s.want(0, s.run("loop", "tick", "-root", "work", "nightly", "--", "true"))
		state, log := filepath.Join("work", "loops", "nightly", ".state.loop"), filepath.Join("work", "loops", "nightly", "ticks.jsonl")
		line := read(t, log)
		require.Equal(t, 1, bytes.Count(line, []byte("\n")), "one tick line: %q", line)
		ticks := bytes.Repeat(line, 230)
		write(t, log, append(append([]byte{}, ticks...), `{"n": 2, "start`...))
		onEtcd := func() (st, lines []byte) {
			t.Helper()
			ents, err := s.client.List(ctx, "work/ticks/nightly/")
			require.NoError(t, err)
			for _, e := range ents {
				lines = append(lines, e.Data...)
			}
			return s.doc("work/loops/nightly/.state.loop"), lines
		}

		r := s.want(0, s.etcd("loop", "import", "-root", "work", "nightly"))
		require.Contains(t, r.stdout, "230 ticks", "%s", r)
		require.Contains(t, r.stdout, "no newline (15 bytes", "%s", r)
		st, lines := onEtcd()
		require.Equal(t, read(t, state), st, "the state in etcd after import")
		require.Equal(t, ticks, lines, "the tick lines in etcd after import")
		r = s.want(0, s.etcd("-json", "loop", "show", "-root", "work", "nightly"))
		require.Contains(t, r.stdout, `"tick_count": 1`, "%s", r)

		require.NoError(t, os.RemoveAll(filepath.Join("work", "loops")))
		s.want(0, s.etcd("loop", "export", "-root", "work", "nightly"))
		require.Equal(t, st, read(t, state), "the state exported")
		require.Equal(t, ticks, read(t, log), "ticks.jsonl exported")
		_, err := os.Stat(filepath.Join("work", "loops", "nightly", ".state.lock"))
		require.NoError(t, err, "export made no lock file")
		r = s.want(0, s.etcd("loop", "import", "-root", "work", "nightly"))
		require.Contains(t, r.stdout, "nothing written", "%s", r)

		// A tick on etcd: export refreshes the files without -force.
		s.want(0, s.etcd("loop", "tick", "-root", "work", "nightly", "--", "true"))
		s.want(0, s.etcd("loop", "export", "-root", "work", "nightly"))
		st, lines = onEtcd()
		require.Equal(t, st, read(t, state), "the state exported after a tick on etcd")
		require.Equal(t, lines, read(t, log), "ticks.jsonl exported after a tick on etcd")
		require.Equal(t, 231, bytes.Count(lines, []byte("\n")))

		// Ticks on both sides: refused both ways, -force replaces.
		s.want(0, s.etcd("loop", "tick", "-root", "work", "nightly", "--", "true"))
		s.want(6, s.run("loop", "tick", "-root", "work", "nightly", "--", "false"))
		st, lines = onEtcd()
		fileState, fileLog := read(t, state), read(t, log)
		r = s.want(1, s.etcd("loop", "import", "-root", "work", "nightly"))
		require.Contains(t, r.stderr, "the loop in etcd changed since the last copy", "%s", r)
		r = s.want(1, s.etcd("loop", "export", "-root", "work", "nightly"))
		require.Contains(t, r.stderr, "the loop on files changed since the last copy", "%s", r)
		gotSt, gotLines := onEtcd()
		require.Equal(t, st, gotSt, "a refused import changed etcd's state")
		require.Equal(t, lines, gotLines, "a refused import changed etcd's lines")
		require.Equal(t, fileState, read(t, state), "a refused export changed the state file")
		require.Equal(t, fileLog, read(t, log), "a refused export changed ticks.jsonl")
		r = s.want(0, s.etcd("-json", "loop", "import", "-force", "-root", "work", "nightly"))
		require.Contains(t, r.stdout, `"forced": true`, "%s", r)
		gotSt, gotLines = onEtcd()
		require.Equal(t, fileState, gotSt, "the state in etcd after import -force")
		require.Equal(t, fileLog, gotLines, "the tick lines in etcd after import -force")
		s.want(0, s.etcd("loop", "export", "-force", "-root", "work", "nightly"))
		require.Equal(t, fileState, read(t, state))
		require.Equal(t, fileLog, read(t, log))

		// Tick lines without a state (an import cut short) are no loop:
		// imported over without -force, and removed.
		s.put("work/loops/cut/.state.lock", "work/ticks/cut/x", line)
		s.want(0, s.run("loop", "create", "-root", "work", "cut"))
		s.want(0, s.etcd("loop", "import", "-root", "work", "cut"))
		ents, err := s.client.List(ctx, "work/ticks/cut/")
		require.NoError(t, err)
		require.Empty(t, ents, "the lines of a cut import outlived the next import")

		s.want(3, s.etcd("loop", "import", "-root", "work", "none"))
		s.want(3, s.etcd("loop", "export", "-root", "work", "none"))
		s.want(0, s.run("loop", "create", "-root", "work", "bad"))
		write(t, filepath.Join("work", "loops", "bad", ".state.loop"), []byte("{}\n"))
		s.want(65, s.etcd("loop", "import", "-root", "work", "bad"))
		require.Nil(t, s.doc("work/loops/bad/.state.loop"), "a state that does not parse was imported")
		r = s.want(0, s.run("loop", "import", "-h"))
		require.Contains(t, r.stdout, "torn", "%s", r)

		// Busy locks: the loop's lock file, held without a record (as
		// bmad-loop holds one), is said to be the file's; etcd's is
		// etcd's. Ablation: without loopCopy's own Busyf, explain blames
		// a session in etcd for the file's lock.
		holder := etcdtest.Child(t, "hold", childLock+"="+filepath.Join(s.dir, "work", "loops", "nightly", ".state.lock"), childNoHolder+"=1")
		stdin, err := holder.StdinPipe()
		require.NoError(t, err)
		stdout, err := holder.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, holder.Start())
		held, err := bufio.NewReader(stdout).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "held\n", held)
		r = s.want(75, s.etcd("-lock-timeout", "0", "loop", "import", "-force", "-root", "work", "nightly"))
		require.NotContains(t, r.stderr, "in etcd", "%s", r)
		require.Contains(t, r.stderr, ".state.lock", "%s", r)
		require.NoError(t, stdin.Close())
		require.NoError(t, holder.Wait())
		h, err := s.client.Lock(ctx, "work/loops/nightly/.state.lock", true)
		require.NoError(t, err)
		r = s.want(75, s.etcd("-lock-timeout", "0", "loop", "export", "-force", "-root", "work", "nightly"))
		require.Contains(t, r.stderr, "busy in etcd", "%s", r)
		require.NoError(t, h.Release())
	})

	// On a cluster of the user's the demo runs under a prefix of its own
	// and deletes its keys at the end. Ablation: without removePrefix the
	// demo's keys stay, and the test fails.
	t.Run("TheDemoOnAClusterOfTheUsersLeavesNoKeys", func(t *testing.T) {
		s := newSandbox(t, c)
		r := s.want(0, s.etcd("etcd-demo", "-procs", "2", "-n", "2"))
		require.Contains(t, r.stdout, "all checks passed", "%s", r)
		resp, err := c.Client(t).Get(context.Background(), s.prefix+"-demo-", clientv3.WithPrefix(), clientv3.WithCountOnly())
		require.NoError(t, err)
		require.Zero(t, resp.Count, "keys left under %s-demo-", s.prefix)
	})

	// A cluster out of reach fails a command after -lock-timeout with exit
	// 75 and says so, rather than blame a lock holder. Ablation: without
	// Explain the message names "a holder that left no record", and the
	// test fails.
	t.Run("AClusterOutOfReachIsSaidSo", func(t *testing.T) {
		s := newSandbox(t, c)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		dead := l.Addr().String()
		require.NoError(t, l.Close())
		r := s.want(75, s.run("-etcd", dead, "-lock-timeout", "2s", "ledger", "add", "-file", "dw.md", "-title", "t", "-origin", "o", "-source-spec", "s", "-reason", "r"))
		require.Contains(t, r.stderr, "ledger add: lock dw.md not taken: no member of the etcd cluster at "+dead+" answers", "%s", r)
	})

	// The help says what -etcd adds: the flags, the commands, the loop
	// refusal.
	t.Run("HelpNamesTheEtcdFlagsAndCommands", func(t *testing.T) {
		s := newSandbox(t, c)
		r := s.want(0, s.run("-h"))
		for _, want := range []string{"[-etcd ENDPOINTS]", "ledger import", "board export", "loop\ncommands keep their loops on etcd too"} {
			require.Contains(t, r.stdout, want, "%s", r)
		}
		r = s.want(0, s.run("board", "export", "-h"))
		require.Contains(t, r.stdout, "-force", "%s", r)
	})
}

// TestEtcdDemo: the demo starts its own cluster, races its workers while
// it kills the leader, and all its checks pass; it leaves nothing behind.
// Ablation: the demo's workers on files (no -etcd among their flags) fail
// the import's removal of the files and then the checks, and the test
// fails.
func TestEtcdDemo(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var stdout, stderr bytes.Buffer
	code := run([]string{"etcd-demo", "-procs", "2", "-n", "4"}, strings.NewReader(""), &stdout, &stderr)
	require.Equal(t, 0, code, "etcd-demo: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	require.Contains(t, stdout.String(), "all checks passed")
	require.Contains(t, stdout.String(), "the leader, by SIGKILL halfway through; restarted")
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, left, "etcd-demo left files behind")
}

// childCmd is a child process that runs command lines (see childRun).
type childCmd struct {
	out  bytes.Buffer
	done chan error
}

// startChild starts a child process that runs lines.
func startChild(t *testing.T, lines [][]string) *childCmd {
	t.Helper()
	enc, err := json.Marshal(lines)
	require.NoError(t, err)
	cmd := etcdtest.Child(t, "looprunner", childArgs+"="+string(enc))
	c := &childCmd{done: make(chan error, 1)}
	cmd.Stdout = &c.out
	require.NoError(t, cmd.Start())
	go func() { c.done <- cmd.Wait() }()
	return c
}

// wait waits for the child, at most two minutes, fails the test unless it
// exited 0, and returns its output.
func (c *childCmd) wait(t *testing.T) string {
	t.Helper()
	select {
	case err := <-c.done:
		require.NoError(t, err, "child: stdout:\n%s", c.out.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("child still running after 2 minutes; stdout:\n%s", c.out.String())
	}
	return c.out.String()
}

package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/seam"
)

// The files of a batch sandbox (newBatchEnv), relative to its directory.
const (
	batchLedger = "deferred-work.md"
	batchBoard  = "sprint-status.yaml"
	batchRoot   = "."
)

// newBatchEnv returns a sandbox holding copies of examples/testdata's
// ledger and board, and a loop root (the sandbox itself) with three loops:
// ci running, off paused and held halted (by its max_ticks gate of 0).
func newBatchEnv(t *testing.T) *env {
	e := newEnv(t)
	for _, name := range []string{batchLedger, batchBoard} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", name))
		require.NoError(t, err)
		e.write(name, string(b))
	}
	e.want(0, "loop", "create", "-root", batchRoot, "ci")
	e.want(0, "loop", "create", "-root", batchRoot, "-paused", "off")
	e.want(0, "loop", "create", "-root", batchRoot, "-max-ticks", "0", "held")
	e.want(4, "loop", "check-gate", "-root", batchRoot, "held")
	return e
}

// batch runs "looprunner [args] batch" with the lines as its standard
// input and fails the test unless it exits with code.
func (e *env) batch(code int, lines []string, args ...string) result {
	e.t.Helper()
	in := ""
	if len(lines) > 0 {
		in = strings.Join(lines, "\n") + "\n"
	}
	r := runInput(e.t, e.dir, nil, in, append(append([]string{"-state-dir", e.state}, args...), "batch")...)
	if r.code != code {
		e.t.Fatalf("exit %d, want %d\nstdin:\n%s\n%s", r.code, code, in, r)
	}
	return r
}

// op returns one line of a batch: the operation name, then the fields of
// kv (key, value, ...) in order, as JSON.
func op(name string, kv ...any) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"op":%q`, name)
	for i := 0; i < len(kv); i += 2 {
		v, err := json.Marshal(kv[i+1])
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(&b, `,%q:%s`, kv[i], v)
	}
	return b.String() + "}"
}

// loopLine is a result line of a loop operation.
type loopLine struct {
	Line    int             `json:"line"`
	Op      string          `json:"op"`
	Loop    string          `json:"loop"`
	Root    string          `json:"root"`
	Status  string          `json:"status"`
	Changed bool            `json:"changed"`
	State   json.RawMessage `json:"state"`
}

// stateOf is the part of a loop's state document the tests look at.
type stateOf struct {
	Status       string `json:"status"`
	ResumedCount int    `json:"resumed_count"`
	UpdatedAt    string `json:"updated_at"`
	Pause        *struct {
		By     string `json:"by"`
		Reason string `json:"reason"`
	} `json:"pause"`
	LastApproval *struct {
		By   string `json:"by"`
		Note string `json:"note"`
	} `json:"last_approval"`
}

// decodeLoopLine decodes a loop operation's result line, strictly, and
// its state.
func decodeLoopLine(t *testing.T, line string) (loopLine, stateOf) {
	t.Helper()
	var l loopLine
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&l), "loop result line %s", line)
	var st stateOf
	require.NoError(t, json.Unmarshal(l.State, &st), "state of %s", line)
	return l, st
}

// loopState reads the state file of the loop name in the sandbox.
func (e *env) loopState(name string) stateOf {
	e.t.Helper()
	var st stateOf
	require.NoError(e.t, json.Unmarshal([]byte(e.read(filepath.Join(loopsDir, name, ".state.loop"))), &st))
	return st
}

// lines returns stdout's lines.
func lines(r result) []string {
	return strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
}

// TestBatchRunsEveryOperation: every operation of a batch, several on one
// ledger and each kind of loop transition, applies as its command would,
// in order (the reopen sees the close of the line before it), and prints
// one result line each, in order, with what the command's -json prints.
// The second batch (the same lines again) checks that what is so already
// changes nothing and says so.
// Ablation: board.advance's changed computed from the command's unchanged
// (status != target) says changed for the replayed advance, which wrote
// nothing.
func TestBatchRunsEveryOperation(t *testing.T) {
	e := newBatchEnv(t)
	ops := []string{
		op("ledger.add", "file", batchLedger, "title", "Paginate the export", "origin", "code review of spec-3-3-export.md, 2026-06-10", "source_spec", "spec-3-3-export.md", "reason", "out of scope", "severity", "low"),
		op("ledger.close", "file", batchLedger, "ids", []string{"DW-1"}, "date", "2026-06-11", "note", "fixed in 3-2", "op_id", "run-7"),
		op("ledger.reopen", "file", batchLedger, "ids", []string{"DW-1"}, "note", "fixed in 3-2", "op_id", "run-7"),
		op("ledger.close", "file", batchLedger, "ids", []string{"DW-3", "DW-2"}, "date", "2026-06-12", "note", "retry added"),
		op("board.advance", "file", batchBoard, "key", "3-3-export", "status", "review", "now", "12-06-2026 10:00"),
		op("loop.pause", "root", batchRoot, "loop", "ci", "by", "ops", "reason", "deploy freeze"),
		op("loop.resume", "root", batchRoot, "loop", "off"),
		op("loop.approve", "root", batchRoot, "loop", "held", "by", "lead", "note", "budget raised"),
	}
	r := e.batch(0, append([]string{""}, ops...)) // a blank first line is skipped, and counted
	require.Empty(t, r.stderr, "batch: stderr")
	got := lines(r)
	require.Len(t, got, len(ops), "batch: one result line per operation\n%s", r)
	want := []string{
		`{"line":2,"op":"ledger.add","file":"deferred-work.md","id":"DW-5","duplicate":false,"changed":true}`,
		`{"line":3,"op":"ledger.close","file":"deferred-work.md","closed":["DW-1"],"already_done":[],"changed":true}`,
		`{"line":4,"op":"ledger.reopen","file":"deferred-work.md","reopened":["DW-1"],"already_open":[],"changed":true}`,
		`{"line":5,"op":"ledger.close","file":"deferred-work.md","closed":["DW-3"],"already_done":["DW-2"],"changed":true}`,
		`{"line":6,"op":"board.advance","file":"sprint-status.yaml","key":"3-3-export","target":"review","status":"review","changed":true}`,
	}
	for i, w := range want {
		require.Equal(t, w, got[i], "batch: result line %d", i+1)
	}
	loops := []struct {
		line         int
		op, loop     string
		status       string
		by, reason   string
		resumedCount int
	}{
		{7, "loop.pause", "ci", "paused", "ops", "deploy freeze", 0},
		{8, "loop.resume", "off", "running", "", "", 0},
		{9, "loop.approve", "held", "running", "lead", "budget raised", 1},
	}
	for i, w := range loops {
		l, st := decodeLoopLine(t, got[len(want)+i])
		require.Equal(t, loopLine{Line: w.line, Op: w.op, Loop: w.loop, Root: batchRoot, Status: w.status, Changed: true}, loopLine{l.Line, l.Op, l.Loop, l.Root, l.Status, l.Changed, nil}, "batch: %s result line", w.op)
		onDisk := e.loopState(w.loop)
		require.Equal(t, onDisk, st, "batch: the state in %s's result line is not the state written", w.op)
		require.Equal(t, w.status, st.Status, "%s: status", w.op)
		require.Equal(t, w.resumedCount, st.ResumedCount, "%s: resumed_count", w.op)
		switch w.op {
		case "loop.pause":
			require.True(t, st.Pause != nil && st.Pause.By == w.by && st.Pause.Reason == w.reason, "loop.pause: pause = %+v", st.Pause)
		case "loop.resume":
			require.Nil(t, st.Pause, "loop.resume: pause")
		case "loop.approve":
			require.True(t, st.LastApproval != nil && st.LastApproval.By == w.by && st.LastApproval.Note == w.reason, "loop.approve: last_approval = %+v", st.LastApproval)
		}
	}

	// The files read as the commands left them.
	var entries []entryJSON
	decode(t, e.want(0, "-json", "ledger", "list", "-file", batchLedger), &entries)
	states := map[string]string{}
	for _, en := range entries {
		states[en.ID] = en.Status
	}
	require.Equal(t, map[string]string{"DW-1": "open", "DW-2": "done 2026-05-25", "DW-3": "done 2026-06-12", "DW-4": "open", "DW-5": "open"}, states, "the ledger after the batch")
	require.Contains(t, e.read(batchBoard), "\n  3-3-export: review  # blocked on DW-4 for the footer\n", "the board after the batch")
	require.Contains(t, e.read(batchBoard), "\nlast_updated: 12-06-2026 10:00\n", "the board's last_updated after the batch")

	// The same lines again, but the loops': what is so already changes
	// nothing and says so.
	r = e.batch(0, ops[:5])
	want = []string{
		`{"line":1,"op":"ledger.add","file":"deferred-work.md","id":"","duplicate":true,"changed":false}`,
		`{"line":2,"op":"ledger.close","file":"deferred-work.md","closed":["DW-1"],"already_done":[],"changed":true}`,
		`{"line":3,"op":"ledger.reopen","file":"deferred-work.md","reopened":["DW-1"],"already_open":[],"changed":true}`,
		`{"line":4,"op":"ledger.close","file":"deferred-work.md","closed":[],"already_done":["DW-3","DW-2"],"changed":false}`,
		`{"line":5,"op":"board.advance","file":"sprint-status.yaml","key":"3-3-export","target":"review","status":"review","changed":false}`,
	}
	require.Equal(t, want, lines(r), "batch replayed")
}

// fileSnap is the bytes and the modification time of files.
type fileSnap map[string]struct {
	data  string
	mtime time.Time
}

// snap returns the fileSnap of the sandbox's files names, after setting
// their modification times an hour back, so that a write, even within the
// file system's time resolution, shows.
func (e *env) snap(names ...string) fileSnap {
	e.t.Helper()
	s := fileSnap{}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, n := range names {
		require.NoError(e.t, os.Chtimes(e.path(n), old, old))
		s[n] = struct {
			data  string
			mtime time.Time
		}{e.read(n), old}
	}
	return s
}

// unchanged fails the test unless every file of s has its bytes and
// modification time still.
func (e *env) unchanged(s fileSnap, what string) {
	e.t.Helper()
	for n, was := range s {
		fi, err := os.Stat(e.path(n))
		require.NoError(e.t, err)
		require.Equal(e.t, was.data, e.read(n), "%s changed %s", what, n)
		require.True(e.t, fi.ModTime().Equal(was.mtime), "%s wrote %s (mtime %s, was %s)", what, n, fi.ModTime(), was.mtime)
	}
}

// batchFiles are the data files of a batch sandbox, and its loops' state
// files.
var batchFiles = []string{batchLedger, batchBoard,
	filepath.Join(loopsDir, "ci", ".state.loop"), filepath.Join(loopsDir, "off", ".state.loop"), filepath.Join(loopsDir, "held", ".state.loop")}

// TestBatchPublishesEveryFileTogether: a ledger close, a board advance and
// a loop pause in one batch are all in the files after it, and nothing of
// the commit (an intent record, a staged file) is left beside them.
func TestBatchPublishesEveryFileTogether(t *testing.T) {
	e := newBatchEnv(t)
	r := e.batch(0, []string{
		op("ledger.close", "file", batchLedger, "ids", []string{"DW-3"}, "date", "2026-12-01", "note", "retry added in 3-2"),
		op("board.advance", "file", batchBoard, "key", "3-2-digest-delivery", "status", "done"),
		op("loop.pause", "root", batchRoot, "loop", "ci", "reason", "3-2 shipped"),
	})
	require.Len(t, lines(r), 3, "batch: result lines\n%s", r)
	require.Contains(t, e.read(batchLedger), "\nstatus: done 2026-12-01\nresolution: retry added in 3-2\n", "the ledger after the batch")
	require.Contains(t, e.read(batchBoard), "\n  3-2-digest-delivery: done\n", "the board after the batch")
	st := e.loopState("ci")
	require.Equal(t, "paused", st.Status, "the loop after the batch")
	require.Equal(t, whoami(), st.Pause.By, "loop.pause without by records the user")
	for _, dir := range []string{e.dir, filepath.Join(e.state, "locks"), filepath.Join(e.dir, loopsDir, "ci")} {
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, en := range ents {
			require.False(t, strings.HasSuffix(en.Name(), ".intent") || strings.HasSuffix(en.Name(), ".tmp"), "%s is left in %s after the batch", en.Name(), dir)
		}
	}
}

// TestBatchRefusalWritesNothing: a batch whose third line is refused
// writes no file at all (the first two lines would each change one), exits
// with the code the third line's command exits with on the same files,
// prints nothing on stdout, and names the line, the operation and the
// refusal on stderr, in the command's words. Under -json stdout is that
// refusal as one line.
// Ablation: the commit's fn stopping at the refused line and returning nil
// (the lines before it published) changes the ledger and the board; a
// batchError that does not unwrap to its cause exits 1 for every refusal
// (the rows of 3 and 75 fail).
func TestBatchRefusalWritesNothing(t *testing.T) {
	first := []string{
		op("ledger.close", "file", batchLedger, "ids", []string{"DW-1"}, "date", "2026-06-11", "note", "fixed"),
		op("board.advance", "file", batchBoard, "key", "3-3-export", "status", "done"),
	}
	tests := []struct {
		name   string
		third  string
		single []string // the third line as a command
		code   int
		stderr string
		hold   string // a lock the test holds: "" for none, "loop" for ci's
	}{
		{"an unknown id", op("ledger.close", "file", batchLedger, "ids", []string{"DW-9"}, "date", "2026-06-11", "note", "n"),
			[]string{"ledger", "close", "-file", batchLedger, "-date", "2026-06-11", "-note", "n", "DW-9"},
			3, "batch: line 3 (ledger.close): no entry DW-9 in deferred-work.md; nothing written\n", ""},
		{"a close not eligible for reopen", op("ledger.reopen", "file", batchLedger, "ids", []string{"DW-2"}, "note", "n", "op_id", "run-1"),
			[]string{"ledger", "reopen", "-file", batchLedger, "-note", "n", "-op", "run-1", "DW-2"},
			1, "batch: line 3 (ledger.reopen): DW-2: not closed by this operation with this note; not reopened; nothing written\n", ""},
		{"an unknown row", op("board.advance", "file", batchBoard, "key", "9-9-nope", "status", "done"),
			[]string{"board", "advance", "-file", batchBoard, "9-9-nope", "done"},
			3, "batch: line 3 (board.advance): no row 9-9-nope in sprint-status.yaml; nothing written\n", ""},
		{"a pause of a paused loop", op("loop.pause", "root", batchRoot, "loop", "off"),
			[]string{"loop", "pause", "-root", batchRoot, "off"},
			1, "batch: line 3 (loop.pause): off: not running (status paused); nothing written\n", ""},
		{"an approval of a running loop", op("loop.approve", "root", batchRoot, "loop", "ci"),
			[]string{"loop", "approve", "-root", batchRoot, "ci"},
			1, "batch: line 3 (loop.approve): ci: not halted (status running); nothing written\n", ""},
		{"a loop that is not there", op("loop.resume", "root", batchRoot, "loop", "gone"),
			[]string{"loop", "resume", "-root", batchRoot, "gone"},
			3, "batch: line 3 (loop.resume): no loop gone in .; nothing written\n", ""},
		{"a busy lock", op("loop.pause", "root", batchRoot, "loop", "ci"),
			[]string{"loop", "pause", "-root", batchRoot, "ci"},
			75, "", "loop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newBatchEnv(t)
			if tt.hold == "loop" {
				hold(t, loopLock(e.dir, "ci"))
			}
			before := e.snap(batchFiles...)
			r := e.batch(tt.code, append(slices.Clone(first), tt.third), "-lock-timeout", "0")
			require.Empty(t, r.stdout, "a refused batch: stdout")
			if tt.stderr != "" {
				require.Equal(t, tt.stderr, r.stderr, "a refused batch: stderr")
			} else {
				oneErrorLine(t, r, "batch")
				require.True(t, strings.HasPrefix(r.stderr, "batch: line 3 (loop.pause): ci: lock "), "a refused batch: stderr = %q, want the busy lock of line 3", r.stderr)
				require.True(t, strings.HasSuffix(r.stderr, "; nothing written\n"), "a refused batch: stderr = %q", r.stderr)
			}
			e.unchanged(before, "a refused batch")

			j := e.batch(tt.code, append(slices.Clone(first), tt.third), "-lock-timeout", "0", "-json")
			var got struct {
				Error    string `json:"error"`
				ExitCode int    `json:"exit_code"`
				Line     int    `json:"line"`
				Op       string `json:"op"`
			}
			decode(t, j, &got)
			require.Equal(t, tt.code, got.ExitCode, "batch -json: exit_code")
			require.Equal(t, 3, got.Line, "batch -json: line")
			if tt.stderr != "" { // a busy lock's message says how long it was held
				require.Equal(t, strings.TrimSuffix(strings.TrimPrefix(tt.stderr, "batch: "), "\n"), got.Error, "batch -json: error")
			}
			require.Equal(t, 1, strings.Count(j.stdout, "\n"), "batch -json: the refusal is one line")
			e.unchanged(before, "a refused batch -json")

			single := e.run(append([]string{"-lock-timeout", "0"}, tt.single...)...)
			require.Equal(t, tt.code, single.code, "looprunner %q exits %d, the batch %d\n%s", tt.single, single.code, tt.code, single)
		})
	}
}

// TestBatchRefusalCreatesNoDirectory: a batch whose ledger.add names a
// ledger in directories that do not exist, refused at its second line (an
// unknown id, a board that is not there, a busy lock), leaves no directory
// behind; the same ledger.add in a batch that commits creates them and
// the ledger.
// Ablation: the directories made before the locks are taken (as ledger
// add makes its one) leaves newdir/deep after the unknown id and the busy
// lock.
func TestBatchRefusalCreatesNoDirectory(t *testing.T) {
	file := filepath.Join("newdir", "deep", "dw.md")
	add := op("ledger.add", "file", file, "title", "t", "origin", "o", "source_spec", "s", "reason", "r")
	tests := []struct {
		name   string
		second string
		code   int
	}{
		{"an unknown id", op("ledger.close", "file", batchLedger, "ids", []string{"DW-9"}, "date", "2026-06-11", "note", "n"), 3},
		{"a board that is not there", op("board.advance", "file", "nope.yaml", "key", "3-3-export", "status", "done"), 3},
		{"a busy lock", op("loop.pause", "root", batchRoot, "loop", "ci"), 75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newBatchEnv(t)
			hold(t, loopLock(e.dir, "ci"))
			r := e.batch(tt.code, []string{add, tt.second}, "-lock-timeout", "0")
			require.True(t, strings.HasSuffix(r.stderr, "; nothing written\n"), "a refused batch: stderr = %q", r.stderr)
			_, err := os.Stat(e.path("newdir"))
			require.ErrorIs(t, err, os.ErrNotExist, "a refused batch left newdir behind\n%s", r)
		})
	}
	e := newBatchEnv(t)
	e.batch(0, []string{add, op("ledger.close", "file", file, "ids", []string{"DW-1"}, "date", "2026-06-11", "note", "n")})
	require.Contains(t, e.read(file), "### DW-1: t\n", "a batch that commits: the new ledger")
}

// TestBatchRefusalIsTheFirstLines: of two refused lines, the batch's exit
// code and message are those of the first in the input, whichever check
// finds each: a guard in the operation (exit 1), a file that is not there
// (3), a board that does not parse (65), a busy lock (75); in both orders.
// A usage error (a file named as two kinds of store) is found before any
// of them, wherever its line is. Nothing is written either way.
// Ablations: every line's store opened, and a failure returned, before any
// operation runs (the batch as it was) makes "a guard, then no file" exit
// 3; a failure of the commit before any operation ran (a read, a lock)
// returned at once, not run again over the lines before it, makes "a
// guard, then a bad board" and "a guard, then a busy lock" exit 65 and 75;
// the opens stopped at the first that fails makes "no file, then two
// kinds" exit 3.
func TestBatchRefusalIsTheFirstLines(t *testing.T) {
	guard := op("ledger.reopen", "file", batchLedger, "ids", []string{"DW-2"}, "note", "n", "op_id", "run-1")
	const guardSays = "(ledger.reopen): DW-2: not closed by this operation with this note; not reopened"
	noFile := op("board.advance", "file", "nope.yaml", "key", "3-3-export", "status", "done")
	const noFileSays = "(board.advance): no such file: nope.yaml"
	bad := op("board.advance", "file", "bad.yaml", "key", "3-3-export", "status", "done")
	const badSays = "(board.advance): bad.yaml: line 2: not valid YAML"
	busy := op("loop.pause", "root", batchRoot, "loop", "ci")
	const busySays = "(loop.pause): ci: lock "
	advance := op("board.advance", "file", batchBoard, "key", "3-3-export", "status", "done")
	twoKinds := op("ledger.close", "file", batchBoard, "ids", []string{"DW-1"}, "date", "2026-06-11", "note", "n")
	const twoKindsSays = "(ledger.close): sprint-status.yaml is the board of line 2: a file is one store of a batch"
	tests := []struct {
		name  string
		lines []string
		code  int
		line  int
		says  string
	}{
		{"a guard, then no file", []string{guard, noFile}, 1, 1, guardSays},
		{"no file, then a guard", []string{noFile, guard}, 3, 1, noFileSays},
		{"a guard, then a bad board", []string{guard, bad}, 1, 1, guardSays},
		{"a bad board, then a guard", []string{bad, guard}, 65, 1, badSays},
		{"a guard, then a busy lock", []string{guard, busy}, 1, 1, guardSays},
		{"a busy lock, then a guard", []string{busy, guard}, 75, 1, busySays},
		{"no file, then a guard, then a bad board", []string{noFile, guard, bad}, 3, 1, noFileSays},
		{"a guard, then a bad board, then no file", []string{guard, bad, noFile}, 1, 1, guardSays},
		{"a bad board, then no file", []string{advance, bad, noFile}, 65, 2, badSays},
		{"a guard, then two kinds", []string{guard, advance, twoKinds}, 2, 3, twoKindsSays},
		{"no file, then two kinds", []string{noFile, advance, twoKinds}, 2, 3, twoKindsSays},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newBatchEnv(t)
			e.write("bad.yaml", "development_status:\n  - [\n")
			hold(t, loopLock(e.dir, "ci"))
			before := e.snap(batchFiles...)
			r := e.batch(tt.code, tt.lines, "-lock-timeout", "0")
			oneErrorLine(t, r, "batch")
			head := fmt.Sprintf("batch: line %d %s", tt.line, tt.says)
			require.True(t, strings.HasPrefix(r.stderr, head), "batch: stderr = %q, want it to start %q", r.stderr, head)
			require.True(t, strings.HasSuffix(r.stderr, "; nothing written\n") || tt.code == 2 && strings.HasSuffix(r.stderr, "; see 'looprunner batch -h'\n"),
				"batch: stderr = %q, want it to end in nothing written", r.stderr)
			e.unchanged(before, "a refused batch")
			var got struct {
				Error    string `json:"error"`
				ExitCode int    `json:"exit_code"`
				Line     int    `json:"line"`
				Op       string `json:"op"`
			}
			decode(t, e.batch(tt.code, tt.lines, "-lock-timeout", "0", "-json"), &got)
			require.Equal(t, tt.line, got.Line, "batch -json: line")
			require.Equal(t, tt.code, got.ExitCode, "batch -json: exit_code")
		})
	}
}

// TestBatchCommitStandsAfterALateFault: a batch whose commit fails at the
// rename of its second file (the board), after the first (the ledger) is
// published, does as batch -h says: stdout has every result line (and,
// with -json, the error line after them), the exit code is the fault's (1
// for EIO) and stderr ends "; the commit stands"; the next transaction on
// the board publishes it. It runs the command in this process, for the
// seam.
// Ablation: the result lines printed only when the commit returns no error
// leaves stdout empty.
func TestBatchCommitStandsAfterALateFault(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		e := newBatchEnv(t)
		ledger, board := e.path(batchLedger), e.path(batchBoard)
		in := op("ledger.close", "file", ledger, "ids", []string{"DW-3"}, "date", "2026-12-01", "note", "retry added") + "\n" +
			op("board.advance", "file", board, "key", "3-2-digest-delivery", "status", "done") + "\n"
		remove := seam.Set(t, func(p seam.Point, path string) error {
			if p == seam.Rename && filepath.Base(path) == batchBoard {
				return syscall.EIO
			}
			return nil
		})
		args := []string{"-state-dir", e.state, "batch"}
		if asJSON {
			args = append([]string{"-json"}, args...)
		}
		var stdout, stderr strings.Builder
		code := run(args, strings.NewReader(in), &stdout, &stderr)
		remove()
		r := result{args: args, stdout: stdout.String(), stderr: stderr.String(), code: code}
		require.Equal(t, 1, code, "batch with a failed second rename: exit code\n%s", r)
		out := lines(r)
		require.Len(t, out, map[bool]int{false: 2, true: 3}[asJSON], "batch (-json %v) with a failed second rename: stdout\n%s", asJSON, r)
		require.True(t, strings.HasPrefix(out[0], `{"line":1,"op":"ledger.close",`) && strings.HasPrefix(out[1], `{"line":2,"op":"board.advance",`), "the result lines\n%s", r)
		if asJSON {
			require.Contains(t, out[2], `"exit_code":1`, "-json: the error line\n%s", r)
		}
		oneErrorLine(t, r, "batch")
		require.True(t, strings.HasSuffix(r.stderr, "; the commit stands\n"), "batch with a failed second rename: stderr = %q", r.stderr)
		require.Contains(t, e.read(batchLedger), "\nstatus: done 2026-12-01\nresolution: retry added\n", "the ledger after the batch")
		require.Contains(t, e.read(batchBoard), "\n  3-2-digest-delivery: review\n", "the board after the batch, its rename failed")
		e.want(0, "board", "advance", "-file", batchBoard, "3-2-digest-delivery", "review") // so already: it changes nothing
		require.Contains(t, e.read(batchBoard), "\n  3-2-digest-delivery: done\n", "the board after the next transaction")
	}
}

// TestBatchUndecidedSaysSo: a batch whose first rename fails and whose
// undo cannot be made durable (the staged files' directory fsync fails
// too) must not say that nothing was written: the message says that the
// commit is not undone, and the next transaction decides it. Ablation:
// message without its ErrUndecided case (it ends "; nothing written").
func TestBatchUndecidedSaysSo(t *testing.T) {
	e := newBatchEnv(t)
	ledger, board := e.path(batchLedger), e.path(batchBoard)
	in := op("ledger.close", "file", ledger, "ids", []string{"DW-3"}, "date", "2026-12-01", "note", "retry added") + "\n" +
		op("board.advance", "file", board, "key", "3-2-digest-delivery", "status", "done") + "\n"
	var mu sync.Mutex
	renameFailed := false
	remove := seam.Set(t, func(p seam.Point, path string) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case p == seam.Rename && filepath.Base(path) == batchLedger:
			renameFailed = true
			return syscall.EIO
		case p == seam.SyncDir && renameFailed:
			return syscall.EIO
		}
		return nil
	})
	args := []string{"-state-dir", e.state, "batch"}
	var stdout, stderr strings.Builder
	code := run(args, strings.NewReader(in), &stdout, &stderr)
	remove()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String(), code: code}
	require.Equal(t, 1, code, "batch with a failed rename and undo: exit code\n%s", r)
	require.Contains(t, r.stderr, "commit not undone", "batch with a failed rename and undo: stderr")
	require.NotContains(t, r.stderr, "nothing written", "batch with a failed rename and undo: stderr")
	e.want(0, "board", "advance", "-file", batchBoard, "3-2-digest-delivery", "review") // the next transaction decides it
	l, b := e.read(batchLedger), e.read(batchBoard)
	closed, advanced := strings.Contains(l, "resolution: retry added"), strings.Contains(b, "\n  3-2-digest-delivery: done\n")
	require.Equal(t, closed, advanced, "after the next transaction: both files new or both old\n%s\n%s", l, b)
}

// TestBatchOfNoOpsWritesNothing: a batch whose every operation is so
// already (an entry closed, a row past its target, an entry filed) exits
// 0, says changed false for each and writes no file: the bytes and the
// modification times stay.
// Ablation: MutateAll taking every member for changed (its comparison with
// the bytes as decoded skipped) writes the board, whose mtime moves.
func TestBatchOfNoOpsWritesNothing(t *testing.T) {
	e := newBatchEnv(t)
	before := e.snap(batchFiles...)
	r := e.batch(0, []string{
		op("ledger.close", "file", batchLedger, "ids", []string{"DW-2"}, "date", "2026-06-11", "note", "n"),
		op("board.advance", "file", batchBoard, "key", "1-1-login", "status", "review"),
		op("ledger.add", "file", batchLedger, "title", "t", "origin", "code review of spec-3-3-export.md, 2026-06-07", "source_spec", "spec-3-3-export.md", "reason", "r"),
	})
	for i, l := range lines(r) {
		require.True(t, strings.HasSuffix(l, `,"changed":false}`), "no-op batch: result line %d = %s, want changed false", i+1, l)
	}
	require.Len(t, lines(r), 3, "no-op batch: result lines")
	e.unchanged(before, "a batch of no-ops")
}

// TestBatchEmptyInput: a batch with no operations (no input, or blank
// lines only) exits 0, prints nothing and takes no lock.
func TestBatchEmptyInput(t *testing.T) {
	e := newBatchEnv(t)
	lock := filepath.Join(loopsDir, "ci", loopLockFile)
	before := e.snap(append([]string{lock}, batchFiles...)...)
	for _, in := range [][]string{nil, {"", "  ", "\t"}} {
		for _, args := range [][]string{nil, {"-json"}} {
			r := e.batch(0, in, args...)
			require.Empty(t, r.stdout+r.stderr, "batch %q with %q: output", args, in)
		}
	}
	e.unchanged(before, "an empty batch")
	_, err := os.Stat(e.state)
	require.ErrorIs(t, err, os.ErrNotExist, "an empty batch made the state directory")
}

// TestBatchUsageErrors: a line that is not a JSON object, an unknown op or
// field, a field missing or of a wrong type or value is a usage error
// (exit 2) that names its line, found before any file is read or any lock
// taken: the test holds every lock, and -lock-timeout 0 would make a
// batch that took one exit 75; the loop's lock file is not touched, and
// the state directory is not made.
// Ablation: checking each line's fields in the commit's fn, after the
// locks, exits 75 on these batches, whose lock is held.
func TestBatchUsageErrors(t *testing.T) {
	e := newBatchEnv(t)
	hold(t, loopLock(e.dir, "ci"))
	ok := op("loop.pause", "root", batchRoot, "loop", "ci")
	closeOp := func(kv ...any) string {
		return op("ledger.close", append([]any{"file", batchLedger, "ids", []string{"DW-1"}, "date", "2026-06-11", "note", "n"}, kv...)...)
	}
	see := "; see 'looprunner batch -h'"
	tests := []struct {
		line string
		want string
	}{
		{`not json`, `line 2: not a JSON object: invalid character 'o' in literal null (expecting 'u')` + see},
		{`[1, 2]`, `line 2: a JSON array, want a JSON object` + see},
		{`{"op": "ledger.close"} {}`, `line 2: more after the JSON object: one operation a line` + see},
		{`{"file": "x"}`, `line 2: missing "op" (want ledger.add, ledger.close, ledger.reopen, board.advance, loop.pause, loop.resume, loop.approve)` + see},
		{`{"op": 7}`, `line 2: "op" is a JSON number, want a string` + see},
		{op("ledger.clsoe"), `line 2: unknown op "ledger.clsoe"; did you mean "ledger.close"? (want ledger.add, ledger.close, ledger.reopen, board.advance, loop.pause, loop.resume, loop.approve)`},
		{closeOp("idz", []string{"DW-2"}), `line 2 (ledger.close): unknown field "idz"; did you mean "ids"? (want op, file, ids, date, note, op_id)`},
		{closeOp("key", "x"), `line 2 (ledger.close): unknown field "key" (want op, file, ids, date, note, op_id)` + see},
		{op("ledger.close", "file", batchLedger, "ids", "DW-1", "date", "2026-06-11", "note", "n"), `line 2 (ledger.close): "ids" is a JSON string, want a list of strings` + see},
		{op("ledger.close", "file", batchLedger, "ids", []string{}, "note", "n"), `line 2 (ledger.close): missing "ids", "date"` + see},
		{op("ledger.close", "file", batchLedger, "ids", []string{"DW-1"}, "date", "2026-02-30", "note", "n"), `line 2 (ledger.close): "date" "2026-02-30": must be a calendar date, YYYY-MM-DD` + see},
		{op("ledger.reopen", "file", batchLedger, "ids", []string{"DW-1"}, "note", "n"), `line 2 (ledger.reopen): missing "op_id"` + see},
		{op("ledger.add", "file", batchLedger, "title", "t", "origin", "o", "source_spec", "s", "reason", "r", "severity", "urgent"), `line 2 (ledger.add): "severity" "urgent": must be one of critical, high, medium, low` + see},
		{op("ledger.add", "file", batchLedger, "title", "t"), `line 2 (ledger.add): missing "origin", "source_spec", "reason"` + see},
		{op("board.advance", "file", batchBoard, "key", "3-3-export", "status", "blocked"), `line 2 (board.advance): "status" "blocked" is outside the order (backlog, ready-for-dev, in-progress, review, awaiting-operator, done); give "allow_unordered": true to write it` + see},
		{op("board.advance", "file", batchBoard, "key", "3-3-export", "status", "done", "allow_regression", "yes"), `line 2 (board.advance): "allow_regression" is a JSON string, want true or false` + see},
		{op("loop.pause", "loop", "ci"), `line 2 (loop.pause): missing "root"` + see},
		{op("loop.pause", "root", batchRoot, "loop", "ci", "reason", strings.Repeat("x", 4097)), `line 2 (loop.pause): reason is 4097 bytes, at most 4096`},
		{op("loop.resume", "root", batchRoot, "loop", "ci", "by", "me"), `line 2 (loop.resume): unknown field "by" (want op, loop, root)` + see},
	}
	lock := filepath.Join(loopsDir, "ci", loopLockFile)
	for _, tt := range tests {
		before := e.snap(append([]string{lock}, batchFiles...)...)
		in := []string{ok, tt.line, ok}
		r := e.batch(2, in, "-lock-timeout", "0")
		require.Empty(t, r.stdout, "batch %s: stdout", tt.line)
		require.Equal(t, "batch: "+tt.want+"\n", r.stderr, "batch %s: stderr", tt.line)
		e.unchanged(before, "a batch with a usage error")
		var got struct {
			Error    string `json:"error"`
			ExitCode int    `json:"exit_code"`
			Line     int    `json:"line"`
			Op       string `json:"op,omitempty"`
		}
		decode(t, e.batch(2, in, "-lock-timeout", "0", "-json"), &got)
		require.Equal(t, 2, got.Line, "batch -json %s: line", tt.line)
		require.Equal(t, 2, got.ExitCode, "batch -json %s: exit_code", tt.line)
	}
	_, err := os.Stat(e.state)
	require.ErrorIs(t, err, os.ErrNotExist, "a batch refused for its usage made the state directory")

	// A file named as two kinds of store, and positional arguments.
	r := e.batch(2, []string{op("board.advance", "file", batchBoard, "key", "3-3-export", "status", "done"),
		op("ledger.close", "file", batchBoard, "ids", []string{"DW-1"}, "date", "2026-06-11", "note", "n")})
	require.Equal(t, "batch: line 2 (ledger.close): sprint-status.yaml is the board of line 1: a file is one store of a batch; nothing written"+see+"\n", r.stderr, "a file as two stores")
	r = runInput(t, e.dir, nil, "", "batch", "extra")
	require.Equal(t, 2, r.code, "batch with an argument: exit code")
	require.Equal(t, "batch: unexpected arguments [\"extra\"]"+see+"\n", r.stderr, "batch with an argument")
}

// TestBatchHelpDocumentsEveryOperation: batch -h names every operation
// with each of its fields, the output of each, the exit codes, that it is
// one all-or-nothing commit, and that a fault after the commit point
// leaves the commit standing (red with batch -h before it said so).
func TestBatchHelpDocumentsEveryOperation(t *testing.T) {
	r := runHere("batch", "-h")
	require.Equal(t, 0, r.code, "batch -h\n%s", r)
	help := r.stdout
	require.True(t, strings.HasPrefix(help, "usage: looprunner batch [flags]\n"), "batch -h: usage line\n%s", help)
	require.Contains(t, help, "ONE\nall-or-nothing commit", "batch -h does not say it is one all-or-nothing commit")
	for _, o := range batchOps {
		start := strings.Index(help, "\n  "+o.cmd+" ")
		require.GreaterOrEqual(t, start, 0, "batch -h does not document %s", o.name)
		doc := help[start+1:]
		if end := regexp.MustCompile(`\n  \S|\n\n`).FindStringIndex(doc); end != nil {
			doc = doc[:end[0]]
		}
		require.Contains(t, doc, `{"op":"`+o.name+`"`, "batch -h: the row of %s does not give its op", o.cmd)
		for _, f := range jsonFields(o.new()) {
			require.Contains(t, doc, `"`+f+`"`, "batch -h: %s does not name its field %q", o.name, f)
		}
		require.Regexp(t, `(?m)^  `+regexp.QuoteMeta(strings.Split(o.name, ".")[0]), help[strings.Index(help, "Once the commit"):], "batch -h does not give the output of %s", o.name)
	}
	for _, code := range []string{"0 every", "2 a line", "3 no such", "1 refused", "65 a file", "75 a lock"} {
		require.Contains(t, strings.Join(strings.Fields(help), " "), code, "batch -h does not give the exit code %q", code)
	}
	require.Contains(t, strings.Join(strings.Fields(help), " "), `the commit stands, every change is in the files`, "batch -h does not say what a fault after the commit point gives")
	require.Regexp(t, `(?m)^  batch +apply operations`, runHere("-h").stdout, "looprunner -h does not list batch")
}

// TestBatchAndCommandsLoseNothing: batches and single commands run at once
// in separate processes on one ledger and one board: each batch closes an
// entry, adds one and advances a story; each single command does one of
// these. Afterwards every close, every add (each with an id of its own)
// and every advance is in the files, and no intent record or staged file
// is left.
// Ablation: the batch's stores opened under another state directory (so
// that the batch and the commands do not exclude each other) mints an id
// twice, in each of 5 runs.
func TestBatchAndCommandsLoseNothing(t *testing.T) {
	e := newEnv(t)
	const n = 4 // batches, and commands of each kind
	var board strings.Builder
	board.WriteString("development_status:\n  epic-1: in-progress\n")
	var setup []string
	for i := 1; i <= 4*n; i++ {
		fmt.Fprintf(&board, "  1-%d-story: in-progress\n", i)
		setup = append(setup, op("ledger.add", "file", batchLedger, "title", fmt.Sprint("entry ", i), "origin", fmt.Sprint("setup ", i), "source_spec", "s", "reason", "r"))
	}
	e.write(batchBoard, board.String())
	e.batch(0, setup)

	type outcome struct{ r result }
	var mu sync.Mutex
	var outs []outcome
	var wg sync.WaitGroup
	run := func(stdin []string, args ...string) {
		defer wg.Done()
		in := strings.Join(stdin, "\n")
		r := runInput(t, e.dir, nil, in, append([]string{"-state-dir", e.state, "-lock-timeout", "2m"}, args...)...)
		mu.Lock()
		defer mu.Unlock()
		outs = append(outs, outcome{r: r})
	}
	for i := 1; i <= n; i++ {
		wg.Add(4)
		// Batch i closes DW-i, advances 1-i-story and adds "batch i".
		go run([]string{
			op("ledger.close", "file", batchLedger, "ids", []string{fmt.Sprint("DW-", i)}, "date", "2026-06-11", "note", "batch"),
			op("board.advance", "file", batchBoard, "key", fmt.Sprintf("1-%d-story", i), "status", "done"),
			op("ledger.add", "file", batchLedger, "title", "t", "origin", fmt.Sprint("batch ", i), "source_spec", "s", "reason", "r"),
		}, "-json", "batch")
		go run(nil, "ledger", "close", "-file", batchLedger, "-date", "2026-06-12", "-note", "single", fmt.Sprint("DW-", n+i))
		go run(nil, "board", "advance", "-file", batchBoard, fmt.Sprintf("1-%d-story", n+i), "done")
		go run(nil, "-json", "ledger", "add", "-file", batchLedger, "-title", "t", "-origin", fmt.Sprint("single ", i), "-source-spec", "s", "-reason", "r")
	}
	wg.Wait()
	minted := map[string]bool{}
	for _, o := range outs {
		require.Equal(t, 0, o.r.code, "a concurrent command failed\n%s", o.r)
		for _, m := range regexp.MustCompile(`"id": ?"(DW-\d+)"`).FindAllStringSubmatch(o.r.stdout, -1) {
			require.False(t, minted[m[1]], "%s minted twice", m[1])
			minted[m[1]] = true
		}
	}
	require.Len(t, minted, 2*n, "ids minted by the concurrent adds")

	var entries []entryJSON
	decode(t, e.want(0, "-json", "ledger", "list", "-file", batchLedger), &entries)
	byOrigin := map[string]bool{}
	for _, en := range entries {
		var seq int
		_, err := fmt.Sscanf(en.ID, "DW-%d", &seq)
		require.NoError(t, err, "entry id %q", en.ID)
		switch {
		case seq <= n:
			require.Equal(t, "done 2026-06-11", en.Status, "%s, closed by a batch", en.ID)
		case seq <= 2*n:
			require.Equal(t, "done 2026-06-12", en.Status, "%s, closed by a command", en.ID)
		case seq <= 4*n:
			require.Equal(t, "open", en.Status, "%s", en.ID)
		default:
			require.True(t, minted[en.ID], "%s is in the ledger but no add minted it", en.ID)
			byOrigin[en.ID] = true
		}
	}
	require.Len(t, entries, 6*n, "entries in the ledger after the run")
	require.Len(t, byOrigin, 2*n, "entries added during the run")
	boardText := e.read(batchBoard)
	for i := 1; i <= 2*n; i++ {
		require.Contains(t, boardText, fmt.Sprintf("\n  1-%d-story: done\n", i), "story %d lost its advance", i)
	}
	for _, dir := range []string{e.dir, filepath.Join(e.state, "locks")} {
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, en := range ents {
			require.False(t, strings.HasSuffix(en.Name(), ".intent") || strings.HasSuffix(en.Name(), ".tmp"), "%s is left in %s", en.Name(), dir)
		}
	}
}

// TestBatchWaitsForTheLocksOnce: a batch whose tries (the commit run
// again over the lines before a busy lock) meet busy locks one after
// another waits -lock-timeout once in all, as its message says, not once
// a try. Two busy locks, the later line's first in lock order: the first
// try waits out the timeout on it, the second finds the other busy at once.
// Ablation: a context of its own for each try (the batch takes two
// timeouts, at least 6 s, where one is 3 s).
func TestBatchWaitsForTheLocksOnce(t *testing.T) {
	e := newBatchEnv(t)
	hold(t, loopLock(e.dir, "ci"))
	hold(t, loopLock(e.dir, "held"))
	advance := op("board.advance", "file", batchBoard, "key", "3-3-export", "status", "done")
	start := time.Now()
	e.batch(75, []string{advance, op("loop.pause", "root", batchRoot, "loop", "held"), op("loop.pause", "root", batchRoot, "loop", "ci")}, "-lock-timeout", "3s")
	if took := time.Since(start); took >= 6*time.Second {
		t.Errorf("the batch took %v, two waits of -lock-timeout 3s: want one", took)
	}
}

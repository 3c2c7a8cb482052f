package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/ledger"
	"github.com/filetxn/filetxn/lock"
	"github.com/filetxn/filetxn/loopstate"
	"github.com/filetxn/filetxn/loopstate/harness"
)

// batchDetails is the help of batch after its flags.
const batchDetails = `Each line of standard input is one operation: a JSON object with "op" and
the fields below (* required). A field left out is "" or false, or the
default given; blank lines are skipped. The operations run in order on the
documents of the files they name, and every changed file is written in ONE
all-or-nothing commit (filetxn.MutateAll): all of them, or none, even across
a crash. A file named by several lines is one document, read and written
once: each operation sees the ones before it. Empty input does nothing and
prints nothing.

  ledger add     {"op":"ledger.add", "file"*, "title"*, "origin"*,
                  "source_spec"*, "reason"*, "location" (n/a), "severity"}
  ledger close   {"op":"ledger.close", "file"*, "ids"*, "date"* (YYYY-MM-DD),
                  "note"*, "op_id"}
  ledger reopen  {"op":"ledger.reopen", "file"*, "ids"*, "note"*, "op_id"*}
  board advance  {"op":"board.advance", "file"*, "key"*, "status"*, "now",
                  "allow_regression", "allow_unordered"}
  loop pause     {"op":"loop.pause", "loop"*, "root", "by", "reason"}
  loop resume    {"op":"loop.resume", "loop"*, "root"}
  loop approve   {"op":"loop.approve", "loop"*, "root", "by", "note"}

Each is the command before it, a field for each flag and argument: "ids"
(a list of strings) are the IDs, "key" and "status" KEY STATUS, "loop" the
NAME, "op_id" is -op; "allow_regression" and "allow_unordered" are true or
false. "root" defaults to $LOOPSTATE_ROOT and "by" to the user's name.
ledger.add creates a missing ledger and its directory, the directory only
once every operation has applied, under the locks: a refused batch creates
none (a commit that fails after that, on a full disk say, may leave it,
empty). The ledger and board locks are under -state-dir, as for the
commands.

Once the commit is made, stdout has one JSON line per operation, in order:
"line" (its line of input), "op", the fields of the command's -json output
and "changed" (whether the operation changed its document):
  ledger.add     "file", "id" ("" for a duplicate), "duplicate"
  ledger.close   "file", "closed", "already_done"
  ledger.reopen  "file", "reopened", "already_open"
  board.advance  "file", "key", "target", "status" (the status it ends at)
  loop.*         "loop", "root", "status" and "state" (the state after it)

Exit codes: 0 every operation applied or changed nothing. Otherwise, unless
the commit stands (below), nothing is written, stdout is empty (with -json
it is one line: "error", "exit_code", "line", "op") and stderr names the
line and what was refused; the code is that of the first line refused, in
the order of the input, the one its command exits with (a line whose file is
missing, unreadable or locked is refused only when the lines before it are
not): 2 a line that is not a JSON object, an unknown op or field, a field
missing or of the wrong type or value (found before any file is read or
locked, so before any other refusal); 3 no such file, entry, row, loop or
root; 1 refused by a guard (an entry neither open nor done, a close not
eligible for reopen, a loop transition its status forbids); 65 a file it
does not understand; 75 a lock busy past -lock-timeout. Unlike ledger close
and reopen, an unknown or refused id changes nothing at all.

A fault once the commit is made (at the rename of a file after the first, at
the fsync after the renames, at the removal of the commit's intent record)
does not undo it: the commit stands, every change is in the files or is
completed by the next transaction on any of them. Then stdout has the result
lines all the same (with -json, and the error line after them), the exit
code is that of the fault (1 for an I/O error) and the message on stderr
ends "; the commit stands". A fault before the renames whose undo cannot be
made durable (an fsync failed) leaves the commit to the next transaction on
any of its files, which completes or undoes it: the message says "commit not
undone", and the exit code is the fault's.
`

// The operations of a batch: the fields of a command, as the JSON keys of
// one line. Each checks its fields before any I/O (check), opens its store
// as a member of the batch (open) and runs on that store's document in the
// batch's one commit (apply).
type (
	ledgerAddOp struct {
		Op         string `json:"op"`
		File       string `json:"file"`
		Title      string `json:"title"`
		Origin     string `json:"origin"`
		SourceSpec string `json:"source_spec"`
		Reason     string `json:"reason"`
		Location   string `json:"location"`
		Severity   string `json:"severity"`
		s          *ledger.Store
	}
	ledgerCloseOp struct {
		Op   string   `json:"op"`
		File string   `json:"file"`
		IDs  []string `json:"ids"`
		Date string   `json:"date"`
		Note string   `json:"note"`
		OpID string   `json:"op_id"`
		s    *ledger.Store
	}
	ledgerReopenOp struct {
		Op   string   `json:"op"`
		File string   `json:"file"`
		IDs  []string `json:"ids"`
		Note string   `json:"note"`
		OpID string   `json:"op_id"`
		s    *ledger.Store
	}
	boardAdvanceOp struct {
		Op              string `json:"op"`
		File            string `json:"file"`
		Key             string `json:"key"`
		Status          string `json:"status"`
		Now             string `json:"now"`
		AllowRegression bool   `json:"allow_regression"`
		AllowUnordered  bool   `json:"allow_unordered"`
		s               *board.Store
	}
	loopPauseOp struct {
		Op     string  `json:"op"`
		Loop   string  `json:"loop"`
		Root   string  `json:"root"`
		By     *string `json:"by"`
		Reason string  `json:"reason"`
		l      *loopstate.Loop
	}
	loopResumeOp struct {
		Op   string `json:"op"`
		Loop string `json:"loop"`
		Root string `json:"root"`
		l    *loopstate.Loop
	}
	loopApproveOp struct {
		Op   string  `json:"op"`
		Loop string  `json:"loop"`
		Root string  `json:"root"`
		By   *string `json:"by"`
		Note string  `json:"note"`
		l    *loopstate.Loop
	}
)

// batchOp is one operation of a batch.
type batchOp interface {
	check() error                                       // its fields, before any I/O: a usage error
	open(b *batch, line int) error                      // its store, made a member of b
	apply(m *filetxn.Multi, now time.Time) (any, error) // on its document, in the commit's fn; the result line
	where() opWhere                                     // for its messages
}

// opWhere is what an operation's messages name: the command it is and its
// file, or its loop and root.
type opWhere struct{ cmd, file, root, loop string }

// batchOps lists the operations, in the order the help gives them, each
// with the command whose fields and exit codes it has.
var batchOps = []struct {
	name, cmd string
	new       func() batchOp
}{
	{"ledger.add", "ledger add", func() batchOp { return new(ledgerAddOp) }},
	{"ledger.close", "ledger close", func() batchOp { return new(ledgerCloseOp) }},
	{"ledger.reopen", "ledger reopen", func() batchOp { return new(ledgerReopenOp) }},
	{"board.advance", "board advance", func() batchOp { return new(boardAdvanceOp) }},
	{"loop.pause", "loop pause", func() batchOp { return new(loopPauseOp) }},
	{"loop.resume", "loop resume", func() batchOp { return new(loopResumeOp) }},
	{"loop.approve", "loop approve", func() batchOp { return new(loopApproveOp) }},
}

// batchOpNames returns the names of the operations, in the help's order.
func batchOpNames() []string {
	var out []string
	for _, o := range batchOps {
		out = append(out, o.name)
	}
	return out
}

// jsonFields returns the JSON keys of the operation op, in its struct's
// order.
func jsonFields(op batchOp) []string {
	t := reflect.TypeOf(op).Elem()
	var out []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// batchHead starts every result line: the operation's line of input and
// its name.
type batchHead struct {
	Line int    `json:"line"`
	Op   string `json:"op"`
}

// head returns h, for the batch to fill in.
func (h *batchHead) head() *batchHead { return h }

// The result lines of the operations: batchHead, the fields of the
// command's -json output, and whether the operation changed its document.
type (
	ledgerAddResult struct {
		batchHead
		File      string `json:"file"`
		ID        string `json:"id"`
		Duplicate bool   `json:"duplicate"`
		Changed   bool   `json:"changed"`
	}
	ledgerCloseResult struct {
		batchHead
		File        string   `json:"file"`
		Closed      []string `json:"closed"`
		AlreadyDone []string `json:"already_done"`
		Changed     bool     `json:"changed"`
	}
	ledgerReopenResult struct {
		batchHead
		File        string   `json:"file"`
		Reopened    []string `json:"reopened"`
		AlreadyOpen []string `json:"already_open"`
		Changed     bool     `json:"changed"`
	}
	boardAdvanceResult struct {
		batchHead
		File    string       `json:"file"`
		Key     string       `json:"key"`
		Target  board.Status `json:"target"`
		Status  board.Status `json:"status"`
		Changed bool         `json:"changed"`
	}
	loopResult struct {
		batchHead
		Loop    string           `json:"loop"`
		Root    string           `json:"root"`
		Status  loopstate.Status `json:"status"`
		Changed bool             `json:"changed"`
		State   json.RawMessage  `json:"state"`

		l *loopstate.Loop // the loop, and its state in the commit: the last
		d *loopstate.Doc  // result line of a loop shows the state as written
	}
)

// batchStep is one line of a batch.
type batchStep struct {
	line int
	name string // the operation: "ledger.close"
	op   batchOp
}

// batch is one batch command: its stores, each a member of the commit once.
type batch struct {
	c       *cli
	steps   []batchStep
	members []filetxn.Member
	ats     []int                  // ats[i] is the first line naming members[i]
	stores  map[string]*batchStore // by the identity of the file, or of the loop
	lines   map[string]int         // the first line naming each data or lock file, by absolute path
	mkdirs  []string               // the directories of ledgers that ledger.add creates
}

// batchStore is one store of a batch.
type batchStore struct {
	kind   string // "ledger", "board" or "loop"
	line   int    // the first line that names it
	ledger *ledger.Store
	board  *board.Store
	loop   *loopstate.Loop
}

// batchError is the refusal of a batch, with the line and operation it
// came from (line 0: none, such as an unreadable input) and whether the
// commit was made all the same (it stands, and the next transaction
// completes it).
type batchError struct {
	line    int
	name    string
	where   opWhere
	err     error
	opened  bool // the refusal came after the lines were read: nothing was written
	written bool // the commit stands
}

func (e *batchError) Error() string { return e.message() }
func (e *batchError) Unwrap() error { return e.err }

// message renders the refusal as its command would (the library's errors
// in the command line's words, naming the file, loop or root), after the
// line and the operation, and says whether anything was written.
func (e *batchError) message() string {
	r := &cli{name: orDefault(e.where.cmd, "batch")}
	fs := flag.NewFlagSet(r.name, flag.ContinueOnError)
	fs.String("file", e.where.file, "")
	fs.String("root", e.where.root, "")
	r.flags = fs
	if e.where.loop != "" {
		r.pos = []string{e.where.loop}
	}
	msg := r.message(e.err)
	for _, w := range batchWords {
		msg = strings.Replace(msg, w[0], w[1], 1)
	}
	switch {
	case e.line > 0 && e.name != "":
		msg = fmt.Sprintf("line %d (%s): %s", e.line, e.name, msg)
	case e.line > 0:
		msg = fmt.Sprintf("line %d: %s", e.line, msg)
	}
	switch {
	case e.written:
		msg += "; the commit stands"
	case errors.Is(e.err, filetxn.ErrUndecided):
		// the library's message says it: not undone, decided by the next transaction
	case e.opened:
		msg += "; nothing written"
	}
	return msg
}

// batchWords rewrites the flags that the commands' messages name into the
// fields of a batch's line.
var batchWords = [][2]string{
	{"give -allow-unordered", `give "allow_unordered": true`},
	{"no such root: -root ", `no such root: "root" `},
}

// orDefault returns s, or def when s is "".
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func batchCmd(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	if err := c.parseNoArgs(fset, args); err != nil {
		return err
	}
	err := c.runBatch()
	var be *batchError
	if err != nil && c.json && errors.As(err, &be) {
		c.printed = true
		_ = printLine(c.stdout, struct { // a failed write fails the command as it is
			Error    string `json:"error"`
			ExitCode int    `json:"exit_code"`
			Line     int    `json:"line,omitempty"`
			Op       string `json:"op,omitempty"`
		}{be.message(), exitCode(err), be.line, be.name})
	}
	return err
}

// printLine prints v as one line of JSON.
func printLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// runBatch reads the operations, opens their stores and applies them in
// one commit, then prints a result line for each.
func (c *cli) runBatch() error {
	in, err := io.ReadAll(c.stdin)
	if err != nil {
		return &batchError{err: fmt.Errorf("reading the operations: %w", err)}
	}
	steps, err := parseBatch(in)
	if err != nil || len(steps) == 0 {
		return err
	}
	b := &batch{c: c, steps: steps, stores: map[string]*batchStore{}, lines: map[string]int{}}
	n, refusal := len(steps), error(nil)
	for i, st := range steps {
		if err := st.op.open(b, st.line); err != nil {
			be := &batchError{line: st.line, name: st.name, where: st.op.where(), err: err, opened: true}
			if exitCode(err) == exitUsage {
				return be // a usage error comes before every other refusal
			}
			if refusal == nil {
				n, refusal = i, be
			}
		}
	}
	if n == 0 {
		return refusal
	}
	// The refusal of line n, unless a line before it refuses: the commit
	// of those lines alone tells.
	return b.run(n, refusal)
}

// run applies the first n lines in one commit and then refuses the batch
// with refusal, when it is not nil, or commits; it prints the result lines
// of a commit. A refusal found before any operation ran (a lock, a read, a
// check of a file) is that of the first line naming the file, and it is
// the batch's only when no line before that one refuses: the commit is
// then run again over those lines alone, with it as the refusal.
func (b *batch) run(n int, refusal error) error {
	// One wait for the locks, whatever the tries: a try after the first
	// finds ctx done if the first waited it out, and then takes a free lock
	// in one try and fails at once on a busy one.
	ctx, cancel := b.c.loopCtx() // -lock-timeout 0: every lock is tried once
	defer cancel()
	for {
		results, commits, ran, err := b.commit(ctx, n, refusal)
		written := slices.ContainsFunc(commits, func(c filetxn.Commit) bool { return c.Written })
		if err != nil && !written {
			err = b.attribute(err, false)
			var be *batchError
			errors.As(err, &be)
			if k := slices.IndexFunc(b.steps[:n], func(s batchStep) bool { return s.line == be.line }); !ran && k > 0 {
				n, refusal = k, be
				continue
			}
			return err
		}
		if perr := b.print(b.steps[:n], results); perr != nil {
			return perr
		}
		if err != nil {
			return b.attribute(err, true)
		}
		return nil
	}
}

// commit applies the first n lines in one MutateAll over their stores under
// ctx, and then fails with refusal, when it is not nil, so that nothing is
// written; else it makes the ledgers' missing directories. ran says whether the
// operations began: every lock was taken and every file read and checked.
func (b *batch) commit(ctx context.Context, n int, refusal error) (results []any, commits []filetxn.Commit, ran bool, err error) {
	steps := b.steps[:n]
	var members []filetxn.Member
	for i, m := range b.members {
		if b.ats[i] <= steps[n-1].line {
			members = append(members, m)
		}
	}
	results = make([]any, 0, n)
	commits, err = filetxn.MutateAll(ctx, members, func(m *filetxn.Multi) error {
		ran = true
		now := time.Now()
		for _, st := range steps {
			r, err := st.op.apply(m, now)
			if err != nil {
				return &batchError{line: st.line, name: st.name, where: st.op.where(), err: err, opened: true}
			}
			*r.(interface{ head() *batchHead }).head() = batchHead{st.line, st.name}
			results = append(results, r)
		}
		if refusal != nil {
			return refusal
		}
		// A ledger's missing directory is made under the locks, once
		// every operation applied: a refused batch creates none.
		for _, dir := range b.mkdirs {
			if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
				if err := os.MkdirAll(dir, 0o777); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return results, commits, ran, err
}

// print prints the result lines, the head of each filled in; the last line
// of each loop shows its state as written.
func (b *batch) print(steps []batchStep, results []any) error {
	last := map[*loopstate.Loop]int{}
	for i, r := range results {
		if lr, ok := r.(*loopResult); ok {
			last[lr.l] = i
		}
	}
	b.c.printed = true
	for i, r := range results {
		if lr, ok := r.(*loopResult); ok && last[lr.l] == i {
			state, err := stateJSON(lr.d)
			if err != nil {
				return err
			}
			lr.State = state
		}
		if err := printLine(b.c.stdout, r); err != nil {
			return err
		}
	}
	return nil
}

// attribute returns err, an error of the commit outside every operation
// (a busy lock, a file that cannot be read), as the refusal of the first
// line whose file or lock it names.
func (b *batch) attribute(err error, written bool) error {
	var be *batchError
	if errors.As(err, &be) {
		be.written = written
		return be
	}
	out := &batchError{err: err, opened: true, written: written}
	for e := err; e != nil && out.line == 0; e = errors.Unwrap(e) {
		var path string
		switch e := e.(type) {
		case *fs.PathError:
			path = e.Path
		case *lock.BusyError:
			path = e.Path
		}
		if path == "" {
			continue
		}
		abs, _ := filepath.Abs(path)
		line, ok := b.lines[abs]
		if !ok {
			line, ok = b.lines[strings.TrimSuffix(abs, ".intent")]
		}
		if i := slices.IndexFunc(b.steps, func(s batchStep) bool { return s.line == line }); ok && i >= 0 {
			out.line, out.name, out.where = line, b.steps[i].name, b.steps[i].op.where()
		}
	}
	return out
}

// parseBatch reads the operations of in, one a line, and checks each, as
// its command checks its flags, before any I/O: every error is a usage
// error naming the line.
func parseBatch(in []byte) ([]batchStep, error) {
	var steps []batchStep
	for n, raw := range bytes.Split(in, []byte("\n")) {
		line := n + 1
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		st, err := parseLine(line, raw)
		if err != nil {
			return nil, &batchError{line: line, name: st.name, where: opWhere{cmd: "batch"}, err: err}
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// parseLine reads one operation: its name first, then its fields, strictly
// (an unknown field, a second JSON value on the line or a value of the
// wrong type is refused), then checks them.
func parseLine(line int, raw []byte) (batchStep, error) {
	st := batchStep{line: line}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var obj json.RawMessage
	if err := dec.Decode(&obj); err != nil {
		return st, jsonError(err, nil)
	}
	if _, err := dec.Token(); err != io.EOF {
		return st, usagef("more after the JSON object: one operation a line")
	}
	var head struct {
		Op *string `json:"op"`
	}
	if err := json.Unmarshal(obj, &head); err != nil {
		return st, jsonError(err, nil)
	}
	if head.Op == nil || *head.Op == "" {
		return st, usagef(`missing "op" (want %s)`, strings.Join(batchOpNames(), ", "))
	}
	i := slices.IndexFunc(batchOps, func(o struct {
		name, cmd string
		new       func() batchOp
	}) bool {
		return o.name == *head.Op
	})
	if i < 0 {
		return st, usagef("unknown op %q%s (want %s)", *head.Op, didYouMean(*head.Op, batchOpNames()), strings.Join(batchOpNames(), ", "))
	}
	st.name, st.op = *head.Op, batchOps[i].new()
	strict := json.NewDecoder(bytes.NewReader(obj))
	strict.DisallowUnknownFields()
	if err := strict.Decode(st.op); err != nil {
		return st, jsonError(err, st.op)
	}
	return st, st.op.check()
}

// unknownField matches encoding/json's error for a key the operation does
// not have.
var unknownField = regexp.MustCompile(`^json: unknown field "(.*)"$`)

// jsonError returns a usage error, in the batch's words, for an error of
// encoding/json decoding a line into op (nil: the line's head).
func jsonError(err error, op batchOp) error {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntax):
		return usagef("not a JSON object: %v", err)
	case errors.As(err, &typ) && typ.Field == "":
		return usagef("a JSON %s, want a JSON object", typ.Value)
	case errors.As(err, &typ):
		return usagef("%q is a JSON %s, want %s", typ.Field, typ.Value, jsonKind(typ.Type))
	}
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil && op != nil {
		fields := jsonFields(op)
		return usagef("unknown field %q%s (want %s)", m[1], didYouMean(m[1], fields), strings.Join(fields, ", "))
	}
	return usagef("not a JSON object: %v", err)
}

// jsonKind says what a field of type t wants.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "a list of strings"
	}
	return "a string"
}

// missing returns a usage error naming the fields among name, value pairs
// whose value is empty, nil when none is.
func missing(pairs ...string) error {
	var names []string
	for i := 0; i < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			names = append(names, fmt.Sprintf("%q", pairs[i]))
		}
	}
	if len(names) == 0 {
		return nil
	}
	return usagef("missing %s", strings.Join(names, ", "))
}

// ids returns "x" for a list of ids that is empty, for missing.
func ids(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return "x"
}

// fileKey returns the identity of the file at path in a batch: its
// absolute path, with symbolic links resolved when it exists.
func fileKey(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}

// store returns the store of kind at the data file path, made by open on
// its first use (the line line) and a member of the commit; a file named
// as a store of another kind before is a usage error.
func (b *batch) store(line int, kind, path string, open func() (*batchStore, error)) (*batchStore, bool, error) {
	key, err := fileKey(path)
	if err != nil {
		return nil, false, err
	}
	if s, ok := b.stores[key]; ok {
		if s.kind != kind {
			return nil, false, usagef("%s is the %s of line %d: a file is one store of a batch", path, s.kind, s.line)
		}
		return s, false, nil
	}
	s, err := open()
	if err != nil {
		return nil, false, err
	}
	s.kind, s.line = kind, line
	b.stores[key] = s
	var m filetxn.Member
	var lock string
	switch {
	case s.ledger != nil:
		m = s.ledger
		lock, err = s.ledger.LockPath()
	case s.board != nil:
		m = s.board
		lock, err = s.board.LockPath()
	default:
		m = s.loop
		lock = s.loop.LockPath()
	}
	if err != nil {
		return nil, false, err
	}
	b.members, b.ats = append(b.members, m), append(b.ats, line)
	for _, p := range []string{path, lock} {
		if abs, err := filepath.Abs(p); err == nil {
			if _, ok := b.lines[abs]; !ok {
				b.lines[abs] = line
			}
		}
	}
	return s, true, nil
}

// ledgerStore returns the ledger at file. On its first use the file must
// exist, unless create (ledger.add, which creates it and its directory).
func (b *batch) ledgerStore(line int, file string, create bool) (*ledger.Store, error) {
	s, first, err := b.store(line, "ledger", file, func() (*batchStore, error) {
		open := b.c.openLedger
		if !create {
			open = func(f string) (*ledger.Store, error) { return openExisting(b.c, f, b.c.openLedger) }
		}
		s, err := open(file)
		return &batchStore{ledger: s}, err
	})
	if err != nil {
		return nil, err
	}
	if first && create {
		if on, _, err := b.c.backendOf(file); err != nil || on == nil {
			b.mkdirs = append(b.mkdirs, filepath.Dir(file)) // a document on a backend has no directory
		}
	}
	return s.ledger, nil
}

// boardStore returns the board at file, which must exist.
func (b *batch) boardStore(line int, file string) (*board.Store, error) {
	s, _, err := b.store(line, "board", file, func() (*batchStore, error) {
		s, err := openExisting(b.c, file, b.c.openBoard)
		return &batchStore{board: s}, err
	})
	if err != nil {
		return nil, err
	}
	return s.board, nil
}

// loopStore returns the loop name in the root dir, which must exist.
func (b *batch) loopStore(line int, dir, name string) (*loopstate.Loop, error) {
	// The identity of a loop is that of its state file, which Open finds.
	l, err := b.c.openNamed(dir, name)
	if err != nil {
		return nil, err
	}
	state := filepath.Join(filepath.Dir(l.LockPath()), ".state.loop")
	s, _, err := b.store(line, "loop", state, func() (*batchStore, error) { return &batchStore{loop: l}, nil })
	if err != nil {
		return nil, err
	}
	return s.loop, nil
}

func (o *ledgerAddOp) where() opWhere { return opWhere{cmd: "ledger add", file: o.File} }

func (o *ledgerAddOp) check() error {
	if err := missing("file", o.File, "title", o.Title, "origin", o.Origin, "source_spec", o.SourceSpec, "reason", o.Reason); err != nil {
		return err
	}
	if _, err := emptyLedger().Append(ledger.Spec{Origin: "-", Severity: o.Severity}); err != nil {
		return usagef(`"severity" %q: must be one of critical, high, medium, low`, o.Severity)
	}
	return nil
}

func (o *ledgerAddOp) open(b *batch, line int) (err error) {
	o.s, err = b.ledgerStore(line, o.File, true)
	return err
}

func (o *ledgerAddOp) apply(m *filetxn.Multi, _ time.Time) (any, error) {
	got, err := o.s.In(m).Append(ledger.Spec{Title: o.Title, Origin: o.Origin, SourceSpec: o.SourceSpec, Reason: o.Reason, Location: o.Location, Severity: o.Severity})
	if err != nil {
		return nil, ledgerError(o.File, err)
	}
	id := got[0]
	return &ledgerAddResult{batchHead{}, o.File, id, id == "", id != ""}, nil
}

// checkBatchDate refuses a date the ledger refuses, as checkLedgerDate.
func checkBatchDate(date string) error {
	if checkLedgerDate("date", date) != nil {
		return usagef(`"date" %q: must be a calendar date, YYYY-MM-DD`, date)
	}
	return nil
}

// knownIDs returns the state of ids in d, and the refusal of the ids no
// entry carries (exit 3) or whose status is neither open nor done (exit
// 1), as ledger close and reopen report them; in a batch they refuse the
// whole batch.
func knownIDs(d *ledger.Doc, ids []string, file string) (idStates, error) {
	was := classify(d, ids)
	switch {
	case len(was.unknown) > 0:
		return was, notFoundf("no entry %s in %s", strings.Join(was.unknown, ", "), file)
	case len(was.malformed) > 0:
		return was, refusedf("%s: status is neither open nor done; not changed", strings.Join(was.malformed, ", "))
	}
	return was, nil
}

func (o *ledgerCloseOp) where() opWhere { return opWhere{cmd: "ledger close", file: o.File} }

func (o *ledgerCloseOp) check() error {
	if err := missing("file", o.File, "ids", ids(o.IDs), "date", o.Date, "note", o.Note); err != nil {
		return err
	}
	return checkBatchDate(o.Date)
}

func (o *ledgerCloseOp) open(b *batch, line int) (err error) {
	o.s, err = b.ledgerStore(line, o.File, false)
	return err
}

func (o *ledgerCloseOp) apply(m *filetxn.Multi, _ time.Time) (any, error) {
	d := o.s.In(m)
	was, err := knownIDs(d, o.IDs, o.File)
	if err != nil {
		return nil, err
	}
	var opts []ledger.CloseOption
	if o.OpID != "" {
		opts = append(opts, ledger.Reopenable(o.OpID))
	}
	closed, err := d.MarkDone(o.IDs, o.Date, o.Note, opts...)
	if err != nil {
		return nil, ledgerError(o.File, err)
	}
	return &ledgerCloseResult{batchHead{}, o.File, nonNil(closed), nonNil(was.done), len(closed) > 0}, nil
}

func (o *ledgerReopenOp) where() opWhere { return opWhere{cmd: "ledger reopen", file: o.File} }

func (o *ledgerReopenOp) check() error {
	return missing("file", o.File, "ids", ids(o.IDs), "note", o.Note, "op_id", o.OpID)
}

func (o *ledgerReopenOp) open(b *batch, line int) (err error) {
	o.s, err = b.ledgerStore(line, o.File, false)
	return err
}

func (o *ledgerReopenOp) apply(m *filetxn.Multi, _ time.Time) (any, error) {
	d := o.s.In(m)
	was, err := knownIDs(d, o.IDs, o.File)
	if err != nil {
		return nil, err
	}
	reopened, err := d.MarkOpen(o.IDs, o.Note, o.OpID)
	if err != nil {
		return nil, ledgerError(o.File, err)
	}
	var notEligible []string
	for _, id := range was.done {
		if !slices.Contains(reopened, id) {
			notEligible = append(notEligible, id)
		}
	}
	if len(notEligible) > 0 {
		return nil, refusedf("%s: not closed by this operation with this note; not reopened", strings.Join(notEligible, ", "))
	}
	return &ledgerReopenResult{batchHead{}, o.File, nonNil(reopened), nonNil(was.open), len(reopened) > 0}, nil
}

func (o *boardAdvanceOp) where() opWhere { return opWhere{cmd: "board advance", file: o.File} }

func (o *boardAdvanceOp) check() error {
	if err := missing("file", o.File, "key", o.Key, "status", o.Status); err != nil {
		return err
	}
	target := board.Status(o.Status)
	if board.Rank(target) < 0 && !o.AllowUnordered {
		return usagef(`"status" %q is outside the order (%s); give "allow_unordered": true to write it`, target, statusOrder())
	}
	switch boardArgRefused(o.Key, target, o.Now) {
	case "key":
		return usagef(`"key" %q: want a non-empty UTF-8 key`, o.Key)
	case "status":
		return usagef(`"status" %q: cannot be written as a plain YAML string`, target)
	case "now":
		return usagef(`"now" %q: cannot be written as a plain YAML value for last_updated`, o.Now)
	}
	return nil
}

func (o *boardAdvanceOp) open(b *batch, line int) (err error) {
	o.s, err = b.boardStore(line, o.File)
	return err
}

func (o *boardAdvanceOp) apply(m *filetxn.Multi, _ time.Time) (any, error) {
	var opts []board.AdvanceOption
	if o.AllowRegression {
		opts = append(opts, board.AllowRegression())
	}
	if o.AllowUnordered {
		opts = append(opts, board.AllowUnordered())
	}
	if o.Now != "" {
		opts = append(opts, board.Stamp(o.Now))
	}
	d := o.s.In(m)
	before, _ := d.Status(o.Key)
	target := board.Status(o.Status)
	st, err := d.Advance(o.Key, target, opts...)
	switch {
	case errors.Is(err, filetxn.ErrNotFound):
		return nil, notFoundf("no row %s in %s", o.Key, o.File)
	case err != nil:
		// As the Store reports it, naming the board.
		return nil, &fs.PathError{Op: "Advance", Path: o.File, Err: err}
	}
	return &boardAdvanceResult{batchHead{}, o.File, o.Key, target, st, st != before}, nil
}

// loopFields checks the fields every loop operation has, after applying
// the default of root, and returns the default of by where it is left
// out.
func loopFields(loop string, root *string, by **string) error {
	if *root == "" {
		*root = os.Getenv(harness.EnvRoot)
	}
	if by != nil && *by == nil {
		me := whoami()
		*by = &me
	}
	return missing("loop", loop, "root", *root)
}

// loopResultOf returns the result line of a loop operation that changed d.
func loopResultOf(l *loopstate.Loop, root string, d *loopstate.Doc) (*loopResult, error) {
	state, err := stateJSON(d)
	if err != nil {
		return nil, err
	}
	return &loopResult{Loop: l.Name(), Root: root, Status: d.Status, Changed: true, State: state, l: l, d: d}, nil
}

func (o *loopPauseOp) where() opWhere { return opWhere{cmd: "loop pause", root: o.Root, loop: o.Loop} }

func (o *loopPauseOp) check() error {
	if err := loopFields(o.Loop, &o.Root, &o.By); err != nil {
		return err
	}
	if err := new(loopstate.Doc).Pause(time.Time{}, *o.By, o.Reason); errors.Is(err, filetxn.ErrInvalidArgument) {
		return err
	}
	return nil
}

func (o *loopPauseOp) open(b *batch, line int) (err error) {
	o.l, err = b.loopStore(line, o.Root, o.Loop)
	return err
}

func (o *loopPauseOp) apply(m *filetxn.Multi, now time.Time) (any, error) {
	d := o.l.In(m)
	if err := d.Pause(now, *o.By, o.Reason); err != nil {
		return nil, err
	}
	return loopResultOf(o.l, o.Root, d)
}

func (o *loopResumeOp) where() opWhere {
	return opWhere{cmd: "loop resume", root: o.Root, loop: o.Loop}
}

func (o *loopResumeOp) check() error { return loopFields(o.Loop, &o.Root, nil) }

func (o *loopResumeOp) open(b *batch, line int) (err error) {
	o.l, err = b.loopStore(line, o.Root, o.Loop)
	return err
}

func (o *loopResumeOp) apply(m *filetxn.Multi, now time.Time) (any, error) {
	d := o.l.In(m)
	if err := d.Resume(now); err != nil {
		return nil, err
	}
	return loopResultOf(o.l, o.Root, d)
}

func (o *loopApproveOp) where() opWhere {
	return opWhere{cmd: "loop approve", root: o.Root, loop: o.Loop}
}

func (o *loopApproveOp) check() error {
	if err := loopFields(o.Loop, &o.Root, &o.By); err != nil {
		return err
	}
	if err := new(loopstate.Doc).Approve(time.Time{}, *o.By, o.Note); errors.Is(err, filetxn.ErrInvalidArgument) {
		return err
	}
	return nil
}

func (o *loopApproveOp) open(b *batch, line int) (err error) {
	o.l, err = b.loopStore(line, o.Root, o.Loop)
	return err
}

func (o *loopApproveOp) apply(m *filetxn.Multi, now time.Time) (any, error) {
	d := o.l.In(m)
	if err := d.Approve(now, *o.By, o.Note); err != nil {
		return nil, err
	}
	return loopResultOf(o.l, o.Root, d)
}

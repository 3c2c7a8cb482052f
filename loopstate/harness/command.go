package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/lock"
	"github.com/filetxn/filetxn/loopstate"
)

// defaultKillGrace is how long a harness process group has, after SIGTERM
// at the tick's timeout, before it gets SIGKILL.
const defaultKillGrace = 10 * time.Second

// Environment variables a [Command] is started with. They are information,
// not authority: the lock is handed over through an inherited descriptor
// that the child verifies (lock.Handle.HandOver), never through a variable.
const (
	EnvRoot = "LOOPSTATE_ROOT" // the loops' root directory
	EnvLoop = "LOOPSTATE_LOOP" // the loop's name
	EnvTick = "LOOPSTATE_TICK" // the tick's number
)

// Command runs a program as a child process for one tick: pass its Run
// method to loopstate's Loop.Tick.
//
// The child is started in its own process group (Unix), in the loop's
// directory unless Dir says otherwise (a loop kept on a backend has none:
// the runner's own), with LOOPSTATE_ROOT absolute (on a backend, as the
// root was given: it names documents), with the loop's lock handed over
// (see lock.Handle.HandOver): when the child, or a program it runs, asks
// for the loop's lock (check-gate or pause on the same loop) it borrows the
// runner's at once. No other descriptor this process opened is inherited; one that
// it itself inherited without close-on-exec passes on, as through any exec.
//
// When the tick's context ends (the gates.tick_timeout_s wall timeout) the
// whole process group gets SIGTERM, then SIGKILL after KillGrace. When the
// child exits, whatever it left running in its group is killed too (Linux),
// since it still holds the lock's descriptor. On Linux the child also gets
// SIGKILL if the runner dies (PR_SET_PDEATHSIG), so that a killed runner
// leaves no orphaned harness holding its lock.
//
// A Command may be shared by concurrent ticks; it is not modified.
type Command struct {
	Path      string        // the program; resolved with exec.LookPath if it has no separator
	Args      []string      // its arguments, without the program name
	Dir       string        // the working directory; "" is the loop's directory (the runner's own for a loop kept on a backend)
	Env       []string      // added to this process's environment, KEY=VALUE
	KillGrace time.Duration // between SIGTERM and SIGKILL at the timeout; 0 is 10 seconds
	Stdout    io.Writer     // if set, receives a copy of the child's standard output
	Stderr    io.Writer     // if set, receives the child's standard error; else it is discarded
}

// maxLine bounds the line kept from the child's standard output.
const maxLine = 64 << 10

// Run runs the command for one tick; it is a Harness. It returns an error
// only when the child could not be started (an empty Path is refused with
// an error matching filetxn.ErrInvalidArgument, a working directory that is
// missing or not a directory with an error naming it); a child that exits
// non-zero, is killed or times out gives a Result with Failed set.
//
// The child reports its cost as its last line on standard output, a JSON
// object {"cost": {"usd": 0.09, "tokens": 21000, "seconds": 63.0}} with an
// optional "note"; each key of "cost" is optional, and a missing "seconds"
// is the child's wall time. Without such a line the cost is zero and its
// seconds are the wall time. A last line that names "cost" but is not such
// an object (not JSON, "cost" not an object, a negative, fractional or
// non-finite value) counts as no cost and is reported: the tick's note
// starts with "malformed cost line". Exit code 0 is an ok tick, anything
// else a failed one.
func (c *Command) Run(ctx context.Context, run *loopstate.Run) (loopstate.Result, error) {
	if c.Path == "" {
		return loopstate.Result{}, fmt.Errorf("harness: Run: Command without a Path: %w", filetxn.ErrInvalidArgument)
	}
	grace := c.KillGrace
	if grace <= 0 {
		grace = defaultKillGrace
	}
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = os.Environ()
	if run.Loop != nil {
		// A loop's lock is <root>/loops/<name>/.state.lock. In files the
		// child runs in the loop's directory unless c.Dir says otherwise,
		// and perhaps elsewhere: give it the root absolute. On a backend
		// the root names documents, not a directory here: it is passed as
		// given (made absolute it would name another root), and the child
		// runs where c.Dir says.
		dir := filepath.Dir(run.Loop.LockPath())
		root := filepath.Dir(filepath.Dir(dir))
		if run.Loop.Backend() == nil {
			if fi, err := os.Stat(dir); cmd.Dir == "" && err == nil && fi.IsDir() {
				cmd.Dir = dir
			}
			if abs, err := filepath.Abs(root); err == nil {
				root = abs
			}
		}
		cmd.Env = append(cmd.Env, EnvRoot+"="+root, EnvLoop+"="+run.Loop.Name())
	}
	cmd.Env = append(cmd.Env, EnvTick+"="+strconv.FormatInt(run.N, 10))
	cmd.Env = append(cmd.Env, c.Env...)
	out := &lastLine{tee: c.Stdout}
	cmd.Stdout = out
	cmd.Stderr = c.Stderr
	// A descendant that escaped the group may keep standard output open;
	// do not wait for it for ever once the child is gone.
	cmd.WaitDelay = grace
	setGroup(cmd)
	if run.Lock != nil {
		if err := run.Lock.HandOver(cmd); err != nil && !errors.Is(err, lock.ErrNotSupported) {
			return loopstate.Result{}, err
		}
	}

	var (
		mu     sync.Mutex // protects reaped
		reaped bool       // the child has been waited for: its group id may be reused
	)
	signal := func(kill bool) {
		mu.Lock()
		defer mu.Unlock()
		if !reaped {
			signalGroup(cmd.Process, kill)
		}
	}
	started, exited := make(chan error, 1), make(chan error, 1)
	start := time.Now()
	go func() {
		// PR_SET_PDEATHSIG fires when the thread that started the child
		// exits, not the process: keep this goroutine on its thread until
		// the child is gone.
		defer lockThread()()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		if waitExited(cmd.Process) == nil {
			// The child has exited but is not reaped, so its group id
			// cannot be reused yet: kill what it left in its group.
			mu.Lock()
			signalGroup(cmd.Process, true)
			reaped = true
			mu.Unlock()
			exited <- cmd.Wait()
			return
		}
		err := cmd.Wait()
		mu.Lock()
		reaped = true
		mu.Unlock()
		exited <- err
	}()
	if err := <-started; err != nil {
		return loopstate.Result{}, startError(cmd.Dir, err)
	}
	var werr error
	select {
	case werr = <-exited:
	case <-ctx.Done():
		signal(false)
		t := time.NewTimer(grace)
		select {
		case werr = <-exited:
		case <-t.C:
			signal(true)
			werr = <-exited
		}
		t.Stop()
	}
	wall := time.Since(start)

	var res loopstate.Result
	if ps := cmd.ProcessState; ps != nil {
		if code := ps.ExitCode(); code >= 0 {
			res.ExitCode = &code
		}
	}
	res.Failed = werr != nil
	cost, note, err := parseCostLine(out.line(), wall)
	switch {
	case err != nil:
		res.Note = "malformed cost line (" + err.Error() + "), counted as no cost"
		if res.Failed {
			res.Note = werr.Error() + "; " + res.Note
		}
	case cost != nil:
		res.Cost, res.Note = cost, note
	}
	if res.Failed && res.Note == "" {
		res.Note = werr.Error()
	}
	return res, nil
}

// startError returns the error of a child that could not be started in
// dir. The system blames the program for a working directory that is
// missing or not a directory ("fork/exec /bin/sh: no such file or
// directory"): then the error names dir, and wraps the os.Stat error of a
// missing one.
func startError(dir string, err error) error {
	if dir == "" {
		return err
	}
	fi, serr := os.Stat(dir)
	switch {
	case serr != nil:
		return fmt.Errorf("harness: Run: working directory: %w (%v)", serr, err)
	case !fi.IsDir():
		return fmt.Errorf("harness: Run: working directory %s is not a directory: %w", dir, err)
	}
	return err
}

// parseCostLine reads the harness's last line, {"cost": {...}, "note": ...}.
// A missing usd or tokens is 0 and a missing seconds is wall. A line that
// does not name "cost" is no cost line: nil, "", nil. A line that names it
// but is not such an object, or has a negative or non-finite value, gives
// an error that says what is wrong.
func parseCostLine(line []byte, wall time.Duration) (*loopstate.Cost, string, error) {
	line = bytes.TrimSpace(line)
	if !bytes.Contains(line, []byte(`"cost"`)) {
		return nil, "", nil
	}
	var v struct {
		Cost *struct {
			USD     *float64 `json:"usd"`
			Tokens  *int64   `json:"tokens"`
			Seconds *float64 `json:"seconds"`
		} `json:"cost"`
		Note string `json:"note"`
	}
	if err := json.Unmarshal(line, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, "", errors.New("not JSON")
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field == "" {
			return nil, "", errors.New("not a JSON object")
		}
		if errors.As(err, &te) {
			return nil, "", fmt.Errorf("%s is %s, want %s", te.Field, te.Value, wantOf(te.Field))
		}
		return nil, "", err
	}
	if v.Cost == nil {
		return nil, "", errors.New(`"cost" is not an object`)
	}
	c := loopstate.Cost{Seconds: math.Round(wall.Seconds()*1000) / 1000}
	if v.Cost.USD != nil {
		c.USD = *v.Cost.USD
	}
	if v.Cost.Tokens != nil {
		c.Tokens = *v.Cost.Tokens
	}
	if v.Cost.Seconds != nil {
		c.Seconds = *v.Cost.Seconds
	}
	switch {
	case c.USD < 0:
		return nil, "", fmt.Errorf("cost.usd %v is negative", c.USD)
	case c.Tokens < 0:
		return nil, "", fmt.Errorf("cost.tokens %d is negative", c.Tokens)
	case c.Seconds < 0:
		return nil, "", fmt.Errorf("cost.seconds %v is negative", c.Seconds)
	}
	return &c, v.Note, nil
}

// wantOf says what a key of the cost line holds.
func wantOf(field string) string {
	switch field {
	case "cost":
		return "an object"
	case "cost.tokens":
		return "a whole number"
	case "note":
		return "a string"
	}
	return "a number"
}

// lastLine is a Writer that keeps only the last non-blank line written to
// it, up to maxLine bytes, and passes everything on to tee.
type lastLine struct {
	tee  io.Writer
	last []byte // the last complete non-blank line
	cur  []byte // the line being written
	long bool   // cur is longer than maxLine: unusable
}

func (w *lastLine) Write(p []byte) (int, error) {
	n := len(p)
	if w.tee != nil {
		w.tee.Write(p) // a copy for the caller; its failure must not fail the harness
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if len(w.cur)+len(chunk) <= maxLine {
			w.cur = append(w.cur, chunk...)
		} else {
			w.long = true
		}
		if i < 0 {
			break
		}
		if w.long {
			w.last = append(w.last[:0], "-"...) // a line too long to be the cost line
		} else if len(bytes.TrimSpace(w.cur)) > 0 {
			w.last = append(w.last[:0], w.cur...)
		}
		w.cur, w.long = w.cur[:0], false
		p = p[i+1:]
	}
	return n, nil
}

// line returns the last non-blank line, the unterminated tail included.
func (w *lastLine) line() []byte {
	if w.long {
		return nil
	}
	if len(bytes.TrimSpace(w.cur)) > 0 {
		return w.cur
	}
	return w.last
}

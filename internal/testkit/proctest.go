package testkit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The environment variables that put a process in child mode and tell it its
// place.
const (
	envDir   = "FILETXNTEST_DIR"
	envIndex = "FILETXNTEST_INDEX"
	envArgs  = "FILETXNTEST_ARGS"
)

// Timeout bounds every wait of the harness: children and barriers that take
// longer fail the test rather than hang it.
const Timeout = 2 * time.Minute

// envKey is the variable that selects child mode for the named test.
func envKey(name string) string {
	return "FILETXNTEST_CHILD_" + strings.ToUpper(nonAlnum.ReplaceAllString(name, "_"))
}

var nonAlnum = regexp.MustCompile(`[^A-Za-z0-9]+`)

// C is a child process's view of its run.
type C struct {
	T     testing.TB // the child's own test: fail it to fail the child
	Index int        // 0..n-1, distinct among the children of one Start
	Dir   string     // the directory the parent gave to Start, shared by all
	// Args is the Options.Args of the StartWith that started the child ("" after
	// Start): the part it plays, in a test whose children play several.
	Args string
}

// Child reports whether this process is a child started by [Start] for the
// running test, and if so returns its view. In the parent it returns nil.
// Call it in the same (sub)test whose t is given to Start: child mode is
// keyed by the full test name, "TestX/case" for a subtest.
func Child(t testing.TB) *C {
	v := os.Getenv(envKey(t.Name()))
	if v == "" {
		return nil
	}
	i, err := strconv.Atoi(os.Getenv(envIndex))
	if err != nil {
		t.Fatalf("filetxntest: bad %s: %v", envIndex, err)
	}
	return &C{T: t, Index: i, Dir: os.Getenv(envDir), Args: os.Getenv(envArgs)}
}

// Barrier announces that this child is ready and blocks until the parent
// calls [Group.Release], or fails the child's test after [Timeout].
func (c *C) Barrier() {
	c.T.Helper()
	touch(c.T, filepath.Join(c.Dir, fmt.Sprintf(".filetxntest-ready-%d", c.Index)))
	WaitFor(c.T, filepath.Join(c.Dir, ".filetxntest-go"))
}

// Mark creates the file name in the shared directory: a child tells the
// parent, waiting in [Group.WaitMark], that it reached a point (for example,
// "inside the transaction").
func (c *C) Mark(name string) {
	c.T.Helper()
	touch(c.T, filepath.Join(c.Dir, name))
}

// A Group is the set of child processes of one [Start]. Its methods are for
// the parent's test goroutine.
type Group struct {
	t     testing.TB
	dir   string
	procs []*proc
	once  sync.Once // guards the kill at the end of the test
}

// proc is one child process.
type proc struct {
	cmd  *exec.Cmd
	out  bytes.Buffer  // stdout and stderr; read only after done
	done chan struct{} // closed when cmd.Wait has returned
	err  error         // cmd.Wait's error
}

// Options for [StartWith].
type Options struct {
	Args string   // passed to every child as C.Args
	Env  []string // extra environment variables, KEY=VALUE
	// Prepare, when set, is called with each child's command before it is
	// started (for example to hand a lock over to it). An error fails the
	// test.
	Prepare func(i int, cmd *exec.Cmd) error
}

// Start starts n children running the current test in child mode, sharing
// dir (a directory of the parent's, such as its t.TempDir(); children see it
// as C.Dir). A child that calls [C.Barrier] waits there for
// [Group.Release]; one that does not runs on, and needs no Release.
// Children still running when the test ends are killed. Start does not
// block; a child that cannot be started fails the test.
func Start(t testing.TB, n int, dir string) *Group {
	t.Helper()
	return StartWith(t, n, dir, Options{})
}

// StartWith is [Start] with options.
func StartWith(t testing.TB, n int, dir string, o Options) *Group {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("filetxntest: %v", err)
	}
	g := &Group{t: t, dir: dir}
	t.Cleanup(g.kill)
	for i := range n {
		cmd := exec.Command(exe, "-test.run="+runPattern(t.Name()), "-test.count=1", "-test.timeout=5m", "-test.v")
		cmd.Env = append(os.Environ(),
			envKey(t.Name())+"=1",
			envIndex+"="+strconv.Itoa(i),
			envDir+"="+dir,
			envArgs+"="+o.Args)
		// A race-enabled child otherwise sleeps a second at exit, waiting
		// for late reports; its reports go to its output, which Wait logs.
		if os.Getenv("GORACE") == "" {
			cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
		}
		cmd.Env = append(cmd.Env, o.Env...)
		p := &proc{cmd: cmd, done: make(chan struct{})}
		cmd.Stdout = &p.out
		cmd.Stderr = &p.out
		if o.Prepare != nil {
			if err := o.Prepare(i, cmd); err != nil {
				t.Fatalf("filetxntest: preparing child %d: %v", i, err)
			}
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("filetxntest: starting child %d: %v", i, err)
		}
		go func() {
			p.err = cmd.Wait()
			close(p.done)
		}()
		g.procs = append(g.procs, p)
	}
	return g
}

// runPattern anchors every element of a (sub)test name.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// Release blocks until every child has reached [C.Barrier], then lets them
// all go. It fails the test, with every child's output, if all children exit
// first or [Timeout] passes.
func (g *Group) Release() {
	g.t.Helper()
	for i := range g.procs {
		g.waitFor(filepath.Join(g.dir, fmt.Sprintf(".filetxntest-ready-%d", i)))
	}
	touch(g.t, filepath.Join(g.dir, ".filetxntest-go"))
}

// WaitMark blocks until some child has called [C.Mark](name), failing the
// test (with every child's output) if all children exit first or [Timeout]
// passes.
func (g *Group) WaitMark(name string) {
	g.t.Helper()
	g.waitFor(filepath.Join(g.dir, name))
}

func (g *Group) waitFor(path string) {
	g.t.Helper()
	if !appears(path, g.allExited) {
		g.logAll()
		g.t.Fatalf("filetxntest: %s never appeared", filepath.Base(path))
	}
}

func (g *Group) allExited() bool {
	for _, p := range g.procs {
		select {
		case <-p.done:
		default:
			return false
		}
	}
	return true
}

// Kill kills child i (SIGKILL; TerminateProcess on Windows) and blocks until
// it has exited. Killing a child that has already exited is not an error.
func (g *Group) Kill(i int) {
	g.t.Helper()
	p := g.procs[i]
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		g.t.Fatalf("filetxntest: killing child %d: %v", i, err)
	}
	<-p.done
}

// Pid returns child i's process id.
func (g *Group) Pid(i int) int { return g.procs[i].cmd.Process.Pid }

// Wait blocks until every child has exited and fails the test, logging each
// child's output, unless all of them passed. A child still running after
// [Timeout] fails the test too.
func (g *Group) Wait() {
	g.t.Helper()
	timeout := time.After(Timeout)
	failed := false
	for i, p := range g.procs {
		select {
		case <-p.done:
		case <-timeout:
			g.logAll()
			g.t.Fatalf("filetxntest: child %d still running after %v", i, Timeout)
		}
		if p.err != nil {
			failed = true
			g.t.Errorf("filetxntest: child %d: %v", i, p.err)
		}
	}
	if failed {
		g.logAll()
		g.t.FailNow()
	}
}

// Output returns child i's combined standard output and error. Call it after
// [Group.Wait] (or [Group.Kill] of that child); before, it returns "".
func (g *Group) Output(i int) string {
	p := g.procs[i]
	select {
	case <-p.done:
		return p.out.String()
	default:
		return ""
	}
}

func (g *Group) logAll() {
	g.t.Helper()
	for i, p := range g.procs {
		select {
		case <-p.done:
			g.t.Logf("child %d (pid %d) output:\n%s", i, p.cmd.Process.Pid, p.out.String())
		default:
			g.t.Logf("child %d (pid %d) still running", i, p.cmd.Process.Pid)
		}
	}
}

func (g *Group) kill() {
	g.once.Do(func() {
		for _, p := range g.procs {
			select {
			case <-p.done:
			default:
				_ = p.cmd.Process.Kill() // it may have exited meanwhile
				<-p.done
			}
		}
	})
}

func touch(t testing.TB, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatalf("filetxntest: %v", err)
	}
}

// WaitFor blocks until a file exists at path, failing t after [Timeout]. It
// polls with a short growing interval: it coordinates processes, it does not
// measure them.
func WaitFor(t testing.TB, path string) {
	t.Helper()
	if !appears(path, func() bool { return false }) {
		t.Fatalf("filetxntest: %s never appeared", path)
	}
}

// appears polls, with a short growing interval, for a file at path: it
// reports true once there is one, false once gone reports true or
// [Timeout] passes.
func appears(path string, gone func() bool) bool {
	deadline := time.Now().Add(Timeout)
	for delay := 100 * time.Microsecond; ; delay = min(2*delay, 10*time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		if gone() || time.Now().After(deadline) {
			return false
		}
		time.Sleep(delay)
	}
}

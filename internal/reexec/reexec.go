// Package reexec runs the current test binary again as child processes, so
// that a test can check a cross-process property with real processes.
//
// A test calls Child first: in a child it returns the child's view and the
// test runs its child branch; in the parent it returns nil and the test starts
// a Group. The child branch is selected by an environment variable derived
// from the test's name and the child runs only that test (an anchored
// -test.run pattern). Children line up on a barrier file so that they start
// their work together, and the output of every child is logged when the test
// fails.
//
//	func TestCounter(t *testing.T) {
//		if c := reexec.Child(t); c != nil {
//			c.Barrier()
//			... work in c.Dir ...
//			return
//		}
//		g := reexec.Start(t, 8, t.TempDir())
//		g.Release()
//		g.Wait()
//		... check the result ...
//	}
package reexec

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
	"syscall"
	"testing"
	"time"
)

const (
	envDir   = "FILETXN_REEXEC_DIR"
	envIndex = "FILETXN_REEXEC_INDEX"
	envArgs  = "FILETXN_REEXEC_ARGS"
)

// Timeout bounds every wait of the harness: children and barriers that take
// longer fail the test rather than hang it.
const Timeout = 2 * time.Minute

// envKey is the variable that selects child mode for the named test.
func envKey(name string) string {
	return "FILETXN_REEXEC_CHILD_" + strings.ToUpper(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(name, "_"))
}

// C is a child's view of its run.
type C struct {
	T     testing.TB
	Index int    // 0..n-1
	Dir   string // the directory the parent gave to Start
	Args  string // the string the parent set with Group.Args, if any
}

// Child reports whether this process is a child started by Start for the
// running test, and if so returns its view. In the parent it returns nil.
// Call it in the same (sub)test whose t is given to Start: the child mode is
// keyed by the full test name, "TestX/case" for a subtest.
func Child(t testing.TB) *C {
	v := os.Getenv(envKey(t.Name()))
	if v == "" {
		return nil
	}
	i, err := strconv.Atoi(os.Getenv(envIndex))
	if err != nil {
		t.Fatalf("reexec: bad %s: %v", envIndex, err)
	}
	return &C{T: t, Index: i, Dir: os.Getenv(envDir), Args: os.Getenv(envArgs)}
}

// Barrier announces that this child is ready and waits until the parent
// calls Release.
func (c *C) Barrier() {
	c.T.Helper()
	touch(c.T, filepath.Join(c.Dir, fmt.Sprintf(".reexec-ready-%d", c.Index)))
	WaitFor(c.T, filepath.Join(c.Dir, ".reexec-go"))
}

// Mark creates the file name in the shared directory: a child tells the parent
// that it reached a point (for example, "inside the transaction").
func (c *C) Mark(name string) {
	c.T.Helper()
	touch(c.T, filepath.Join(c.Dir, name))
}

// A Group is a set of child processes of one test.
type Group struct {
	t     testing.TB
	dir   string
	procs []*proc
	once  sync.Once
}

type proc struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan struct{}
	err  error
}

// Options for Start.
type Options struct {
	Args string   // passed to every child as C.Args
	Env  []string // extra environment variables, KEY=VALUE
	// Prepare, when set, is called with each child's command before it is
	// started (for example to hand a lock over to it).
	Prepare func(i int, cmd *exec.Cmd) error
}

// Start starts n children running the current test in child mode, sharing
// dir. They run until they reach Barrier and wait there for Release. Children
// still running when the test ends are killed.
func Start(t testing.TB, n int, dir string) *Group {
	t.Helper()
	return StartWith(t, n, dir, Options{})
}

// StartWith is Start with options.
func StartWith(t testing.TB, n int, dir string, o Options) *Group {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("reexec: %v", err)
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
				t.Fatalf("reexec: preparing child %d: %v", i, err)
			}
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("reexec: starting child %d: %v", i, err)
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

// Release waits until every child has reached Barrier, then lets them all go.
func (g *Group) Release() {
	g.t.Helper()
	for i := range g.procs {
		g.waitFor(filepath.Join(g.dir, fmt.Sprintf(".reexec-ready-%d", i)))
	}
	touch(g.t, filepath.Join(g.dir, ".reexec-go"))
}

// WaitMark waits until some child has called Mark(name), failing the test
// (with every child's output) if all children exit first or Timeout passes.
func (g *Group) WaitMark(name string) {
	g.t.Helper()
	g.waitFor(filepath.Join(g.dir, name))
}

func (g *Group) waitFor(path string) {
	g.t.Helper()
	deadline := time.Now().Add(Timeout)
	for delay := 100 * time.Microsecond; ; delay = min(2*delay, 10*time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if g.allExited() || time.Now().After(deadline) {
			g.logAll()
			g.t.Fatalf("reexec: %s never appeared", filepath.Base(path))
		}
		time.Sleep(delay)
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

// Kill sends SIGKILL to child i (on Windows, TerminateProcess) and waits for
// it to exit.
func (g *Group) Kill(i int) {
	g.t.Helper()
	p := g.procs[i]
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		g.t.Fatalf("reexec: killing child %d: %v", i, err)
	}
	<-p.done
}

// Pid returns child i's process id.
func (g *Group) Pid(i int) int { return g.procs[i].cmd.Process.Pid }

// Wait waits for every child to exit and fails the test, logging each child's
// output, unless all of them passed.
func (g *Group) Wait() {
	g.t.Helper()
	timeout := time.After(Timeout)
	failed := false
	for i, p := range g.procs {
		select {
		case <-p.done:
		case <-timeout:
			g.logAll()
			g.t.Fatalf("reexec: child %d still running after %v", i, Timeout)
		}
		if p.err != nil {
			failed = true
			g.t.Errorf("reexec: child %d: %v", i, p.err)
		}
	}
	if failed {
		g.logAll()
		g.t.FailNow()
	}
}

// Output returns child i's combined output so far; call it after Wait.
func (g *Group) Output(i int) string { return g.procs[i].out.String() }

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
				p.cmd.Process.Kill()
				<-p.done
			}
		}
	})
}

func touch(t testing.TB, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatalf("reexec: %v", err)
	}
}

// WaitFor waits until a file exists at path, failing t after Timeout. It
// polls with a short growing interval: it coordinates processes, it does not
// measure them.
func WaitFor(t testing.TB, path string) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for delay := 100 * time.Microsecond; ; delay = min(2*delay, 10*time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("reexec: %s never appeared", path)
		}
		time.Sleep(delay)
	}
}

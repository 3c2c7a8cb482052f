package demo

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/filetxn/filetxn/etcd/internal/cluster"
	"github.com/filetxn/filetxn/examples/looprunner/runner"
)

// TestMain makes the test binary what the demo needs: a member of the
// cluster, or a worker ("etcd-race -worker I ..."), when started as one.
func TestMain(m *testing.M) {
	cluster.RunMember()
	if len(os.Args) > 1 && os.Args[1] == Name {
		os.Exit(runner.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, Extension()))
	}
	os.Exit(m.Run())
}

// TestDemoSmall runs the demo small, as the README's command runs it
// large: every check must pass, the frozen host's write must have been
// refused, and nothing may be left behind: no directory in $TMPDIR, no
// child process. Ablations run: with the backend's fence removed (no
// session check, no compares in the commit's Txn) the frozen host's stale
// commit goes through, and the test goes red on a lost closure, a ledger
// history not linearizable and no write refused; with a worker that says
// it holds the lock but does not wait inside the Mutate, on no write
// refused; with a worker that reports half its ticks' numbers, on a tick
// history not linearizable.
func TestDemoSmall(t *testing.T) {
	if !cluster.Supported {
		t.Skip("the demo needs a Unix system")
	}
	tmp := filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	var progress bytes.Buffer
	start := time.Now()
	v, err := play(config{procs: 3, rounds: 4, ttl: time.Second, progress: &progress, timeout: 2 * time.Minute})
	t.Logf("progress:\n%s", progress.String())
	if err != nil {
		t.Fatalf("play: %v", err)
	}
	var out strings.Builder
	if err := v.print(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("verdict after %s:\n%s", time.Since(start).Round(time.Millisecond), out.String())
	if !v.OK {
		t.Errorf("play(3 hosts, 4 rounds): %d check(s) failed, want none", v.failed())
	}
	if len(v.Fenced) == 0 {
		t.Errorf("play(3 hosts, 4 rounds): no write refused, want the frozen host's")
	}
	if ents, err := os.ReadDir(tmp); err != nil || len(ents) > 0 {
		t.Errorf("after play: $TMPDIR holds %v (%v), want nothing", ents, err)
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("after play: child processes %v still running, want none", kids)
	}
}

// children returns the pids of this process's children, on Linux; nil
// elsewhere.
func children(t *testing.T) []string {
	t.Helper()
	if runtime.GOOS != "linux" {
		return nil
	}
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, f := range tasks {
		data, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		pids = append(pids, strings.Fields(string(data))...)
	}
	return pids
}

// TestDemoRefusesBadFlags runs the command line: sizes the demo cannot run
// are usage errors (exit 2), before anything starts.
func TestDemoRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-n", "1"}, {"-procs", "0"}, {"-ttl", "10ms"}, {"extra"}} {
		var stdout, stderr bytes.Buffer
		code := runner.Main(append([]string{Name}, args...), strings.NewReader(""), &stdout, &stderr, Extension())
		if code != 2 {
			t.Errorf("looprunner %s %v = exit %d (stderr %q), want 2", Name, args, code, stderr.String())
		}
	}
}

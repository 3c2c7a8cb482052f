package etcdtest

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/filetxn/filetxn/etcd/internal/cluster"
)

// registry holds the functions that [Child] can run; written by Register
// before Main, read by Main and Child.
var registry struct {
	mu sync.Mutex // protects m
	m  map[string]func() int
}

// Register names fn, for a process started by [Child] to run. Call it from
// TestMain before [Main] (or from a package-level variable's initialiser):
// the child process reaches fn through Main, and exits with its result.
// Registering a name twice panics.
func Register(name string, fn func() int) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.m == nil {
		registry.m = map[string]func() int{}
	}
	if _, dup := registry.m[name]; dup {
		panic("etcdtest: Register(" + name + "): registered twice")
	}
	registry.m[name] = fn
}

func registered(name string) func() int {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return registry.m[name]
}

// runChild runs the function registered as name and returns its result.
func runChild(name string) int {
	fn := registered(name)
	if fn == nil {
		fmt.Fprintf(os.Stderr, "etcdtest: child %q: no such function registered\n", name)
		return 2
	}
	go cluster.WatchParent(os.Getppid())
	return fn()
}

// Child returns a command, not yet started, that runs the function
// registered as name in a new process of the test binary, with the test's
// environment plus env ("KEY=value" each). Its standard output is the
// caller's to set; its standard error goes to a file that is logged if the
// test fails. When the test ends (t.Cleanup) the process is killed if it is
// still running, and waited for if the caller has not. On Linux it is also
// killed when the test binary dies. On a system the harness does not
// support Child skips the test.
func Child(t testing.TB, name string, env ...string) *exec.Cmd {
	t.Helper()
	if !cluster.Supported {
		t.Skip("etcdtest: child processes need a Unix system")
	}
	if registered(name) == nil {
		t.Fatalf("etcdtest: Child(%q): no such function registered", name)
	}
	cmd, err := cluster.Command()
	if err != nil {
		t.Fatalf("etcdtest: Child(%q): %v", name, err)
	}
	cmd.Env = append(append(os.Environ(), childEnv+"="+name), env...)
	errPath := t.TempDir() + "/stderr"
	f, err := os.Create(errPath)
	if err != nil {
		t.Fatalf("etcdtest: Child(%q): %v", name, err)
	}
	cmd.Stderr = f
	t.Cleanup(func() {
		f.Close()
		if cmd.Process != nil && cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			pid := -1
			if cmd.Process != nil {
				pid = cmd.Process.Pid
			}
			t.Logf("etcdtest: child %q (pid %d) stderr:\n%s", name, pid, cluster.LastLines(errPath, 40))
		}
	})
	return cmd
}

package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// bin is the looprunner binary the tests drive, built once by TestMain
// (with -race when the tests run with it), or the one that
// $FILETXN_LOOPRUNNER_BIN names: where the tests run without a go command
// (.ci/wine runs them under Wine, with a looprunner.exe it built).
var bin string

func TestMain(m *testing.M) {
	if bin = os.Getenv("FILETXN_LOOPRUNNER_BIN"); bin != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "looprunner-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "looprunner")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "..")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building looprunner:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one run of the binary printed and how it exited.
type result struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("looprunner %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// runIn runs the binary in dir with env added to the environment. Every
// run has a bound, so that a hung command fails the test instead of
// hanging it.
func runIn(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	return runInput(t, dir, env, "", args...)
}

// runInput is runIn with stdin as the command's standard input.
func runInput(t *testing.T, dir string, env []string, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	for try := 1; ; try++ {
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Env = append(os.Environ(), env...)
		if raceEnabled {
			// A race-enabled binary sleeps a second at exit by default, to let
			// other goroutines report; the tests run it hundreds of times.
			cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
		}
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Start()
		if err == nil {
			break
		}
		// Under Wine only, a start that fails with Wine's "Internal error"
		// (Wine 8 now and then fails a CreateProcess under load) is tried
		// again, up to three times: nothing ran, so a retry changes nothing
		// the test checks. Elsewhere a failed start fails at once.
		if try == 3 || !testkit.Detected() || !strings.Contains(err.Error(), "Internal error") {
			t.Fatal(err)
		}
		cmd = exec.Command(bin, args...)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("looprunner %s: still running after 2 minutes\nstderr:\n%s", strings.Join(args, " "), stderr.String())
	}
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		r.code = ee.ExitCode()
	}
	return r
}

// env is a test's sandbox: a working directory and a state directory for
// the sidecar locks, given to every run with -state-dir.
type env struct {
	t     *testing.T
	dir   string
	state string
}

func newEnv(t *testing.T) *env {
	dir := t.TempDir()
	return &env{t: t, dir: dir, state: filepath.Join(dir, "state")}
}

// with returns the sandbox for the (sub)test t.
func (e *env) with(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// run runs the binary with -state-dir set to the sandbox's.
func (e *env) run(args ...string) result {
	e.t.Helper()
	return runIn(e.t, e.dir, nil, append([]string{"-state-dir", e.state}, args...)...)
}

// want runs args and fails the test unless the exit code is code.
func (e *env) want(code int, args ...string) result {
	e.t.Helper()
	r := e.run(args...)
	if r.code != code {
		e.t.Fatalf("exit %d, want %d\n%s", r.code, code, r)
	}
	return r
}

// path returns name inside the sandbox.
func (e *env) path(name string) string { return filepath.Join(e.dir, name) }

// write creates the file name in the sandbox.
func (e *env) write(name, content string) string {
	e.t.Helper()
	p := e.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// read returns the contents of the file name in the sandbox.
func (e *env) read(name string) string {
	e.t.Helper()
	b, err := os.ReadFile(e.path(name))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// sidecar returns the lock file that guards the data file f under the
// sandbox's state directory: the lock a ledger or board command takes.
func (e *env) sidecar(f string) string {
	e.t.Helper()
	p, err := lock.SidecarPath(e.state, f)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// loopLock returns the lock file of the loop name under root.
func loopLock(root, name string) string {
	return filepath.Join(root, loopsDir, name, loopLockFile)
}

// hold takes the lock file at path in the test process, with the purpose
// "test holds it", and keeps it until the test ends or the returned handle
// is released.
func hold(t *testing.T, path string) *lock.Handle {
	t.Helper()
	h, err := lock.Acquire(context.Background(), path, lock.WithPurpose("test holds it"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Release() })
	return h
}

// decode decodes r's stdout as exactly one JSON document into v.
func decode(t *testing.T, r result, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout is not the JSON document wanted: %v\n%s", err, r)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON document\n%s", r)
	}
}

// oneErrorLine fails the test unless stderr is exactly one line that
// starts with the command's name.
func oneErrorLine(t *testing.T, r result, command string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], command+": ") {
		t.Fatalf("stderr = %q, want one line starting with %q\n%s", r.stderr, command+": ", r)
	}
}

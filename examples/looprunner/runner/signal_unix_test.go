//go:build unix

package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/lock"
)

// TestASignalledTickKillsItsHarnessAndSettles: SIGTERM or SIGINT to a
// runner whose tick's harness is running ends the tick as its timeout
// would: the harness's whole process group is signalled, the tick is logged
// as failed ("runner cancelled") with exit 6, the state stays readable, and
// nothing the harness started keeps the loop's lock, so that the next tick
// runs at once. A runner that died at the signal left a process the harness
// had started holding the lock through its inherited descriptor.
func TestASignalledTickKillsItsHarnessAndSettles(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			e := newEnv(t)
			root := e.path("loops")
			e.want(0, "loop", "create", "-root", root, "ci")
			ready := e.path("ready")
			// The harness starts a process in its group that would outlive it,
			// says so, and waits.
			script := "sleep 300 & echo $! > " + ready + ".tmp && mv " + ready + ".tmp " + ready + " && wait"

			// Files, not pipes, take the output: a process the harness left
			// running would hold a pipe open, and Wait would wait for it.
			var stdout, stderr outFile
			stdout.f, stderr.f = create(t, e.path("stdout")), create(t, e.path("stderr"))
			cmd := exec.Command(bin, "-state-dir", e.state, "loop", "tick", "-root", root, "ci", "--", "/bin/sh", "-c", script)
			cmd.Dir, cmd.Stdout, cmd.Stderr = e.dir, stdout.f, stderr.f
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() {
				cmd.Process.Kill()
				if b, err := os.ReadFile(ready); err == nil {
					var pid int
					if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &pid); err == nil && pid > 0 {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			})

			deadline := time.Now().Add(time.Minute)
			for {
				if _, err := os.Stat(ready); err == nil {
					break
				}
				select {
				case err := <-done:
					t.Fatalf("loop tick ended before its harness was ready: %v\nstderr:\n%s", err, stderr.String())
				case <-time.After(10 * time.Millisecond):
				}
				require.True(t, time.Now().Before(deadline), "the harness never wrote %s\nstderr:\n%s", ready, stderr.String())
			}
			require.NoError(t, cmd.Process.Signal(sig))
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatalf("loop tick still running a minute after %v\nstderr:\n%s", sig, stderr.String())
			}
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, exitHarnessFailed, code, "loop tick sent %v = exit %d, want %d\nstdout:\n%s\nstderr:\n%s", sig, code, exitHarnessFailed, stdout.String(), stderr.String())
			require.Contains(t, stdout.String(), "ci: tick 1: fail", "loop tick sent %v: stdout = %q, want the failed tick's line", sig, stdout.String())
			require.Contains(t, stdout.String(), "runner cancelled", "loop tick sent %v: stdout = %q, want the note to say the runner was cancelled", sig, stdout.String())

			b, err := os.ReadFile(filepath.Join(root, loopsDir, "ci", "ticks.jsonl"))
			require.NoError(t, err)
			require.Equal(t, 1, strings.Count(string(b), "\n"), "ticks.jsonl after the signalled tick = %q, want one line", b)
			require.Contains(t, string(b), `"outcome": "fail"`, "ticks.jsonl after the signalled tick = %q, want it failed", b)
			d := state(t, e.want(0, "-json", "loop", "show", "-root", root, "ci"))
			require.Equal(t, int64(1), d.TickCount, "tick_count after the signalled tick = %d, want 1", d.TickCount)

			// Nothing the harness started holds the lock: a tick that does not
			// wait runs, and counts no abandoned tick.
			rec := tick(t, e.want(0, "-json", "-lock-timeout", "0", "loop", "tick", "-root", root, "ci", "--", "/bin/sh", "-c", "exit 0"))
			require.Equal(t, int64(2), rec.N, "loop tick after the signalled one: n = %d, want 2", rec.N)
		})
	}
}

// outFile is a file that takes a process's output.
type outFile struct{ f *os.File }

// String returns what the file holds.
func (o outFile) String() string {
	b, _ := os.ReadFile(o.f.Name())
	return string(b)
}

// create creates the file at path, closed when the test ends.
func create(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// TestATickWhoseReaderLeftStillEnds: a loop tick whose stdout is a pipe
// nobody reads (loop tick ... | head -1, the reader gone) is not killed by
// SIGPIPE in the middle of its tick: the harness's output is still read to
// its cost line, the tick is logged with its cost, and the command exits 1
// naming the broken pipe. The runner died of SIGPIPE at the harness's first
// line, leaving the tick marked running for recovery and its cost lost.
func TestATickWhoseReaderLeftStillEnds(t *testing.T) {
	e := newEnv(t)
	root := e.path("loops")
	e.want(0, "loop", "create", "-root", root, "ci")
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, pr.Close())
	defer pw.Close()
	var stderr outFile
	stderr.f = create(t, e.path("stderr"))
	cmd := exec.Command(bin, "-state-dir", e.state, "loop", "tick", "-root", root, "ci", "--",
		"/bin/sh", "-c", `i=0; while [ $i -lt 1000 ]; do echo line $i; i=$((i+1)); done; echo '{"cost": {"usd": 0.5}}'`)
	cmd.Dir, cmd.Stdout, cmd.Stderr = e.dir, pw, stderr.f
	require.NoError(t, cmd.Start())
	pw.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("loop tick with a closed stdout still running after a minute\nstderr:\n%s", stderr.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	require.Equal(t, exitRefused, code, "loop tick with a closed stdout = exit %d, want %d\nstderr:\n%s", code, exitRefused, stderr.String())
	require.Contains(t, stderr.String(), "broken pipe", "loop tick with a closed stdout: stderr = %q, want it to name the broken pipe", stderr.String())
	b, err := os.ReadFile(filepath.Join(root, loopsDir, "ci", "ticks.jsonl"))
	require.NoError(t, err)
	require.Contains(t, string(b), `"outcome": "ok"`, "ticks.jsonl after a tick with a closed stdout = %q, want the tick ok", b)
	require.Contains(t, string(b), `"usd": 0.5`, "ticks.jsonl after a tick with a closed stdout = %q, want its cost", b)
	d := state(t, e.want(0, "-json", "loop", "show", "-root", root, "ci"))
	require.Equal(t, int64(1), d.TickCount, "tick_count after a tick with a closed stdout = %d, want 1", d.TickCount)
}

// TestASignalWhileATickWaitsForTheLockEndsTheRunner: SIGTERM to a runner
// whose tick still waits for the loop's lock ends the runner by the signal,
// as it always did (it holds nothing yet, and no harness ran), and not with
// exit 75, the busy lock that a supervisor would retry. Ablation (run):
// handling the signal from before the wait (signal.NotifyContext around
// Tick) makes it red with exit 75, "busy ... context canceled", when the
// signal comes during the wait; the pause before the signal gives the
// runner the time to reach it, and the test passes whenever the signal
// lands on the code as it is.
func TestASignalWhileATickWaitsForTheLockEndsTheRunner(t *testing.T) {
	e := newEnv(t)
	root := e.path("loops")
	e.want(0, "loop", "create", "-root", root, "ci")
	held, err := lock.Acquire(context.Background(), filepath.Join(root, loopsDir, "ci", ".state.lock"))
	require.NoError(t, err)
	defer held.Release()

	ran := e.path("ran")
	var stdout, stderr outFile
	stdout.f, stderr.f = create(t, e.path("stdout")), create(t, e.path("stderr"))
	cmd := exec.Command(bin, "-state-dir", e.state, "-lock-timeout", "1m", "loop", "tick", "-root", root, "ci", "--", "/bin/sh", "-c", "touch "+ran)
	cmd.Dir, cmd.Stdout, cmd.Stderr = e.dir, stdout.f, stderr.f
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill() })
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "loop tick sent SIGTERM while waiting = %v, want it ended by the signal\nstderr:\n%s", err, stderr.String())
	ws, ok := ee.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM, "loop tick sent SIGTERM while waiting = exit %d (%v), want ended by SIGTERM\nstderr:\n%s", ee.ExitCode(), err, stderr.String())
	require.NoFileExists(t, ran, "the harness of a tick that never got the lock ran")
	d := state(t, e.want(0, "-json", "loop", "show", "-root", root, "ci"))
	require.Zero(t, d.TickCount, "tick_count after a tick that never got the lock = %d, want 0", d.TickCount)
}

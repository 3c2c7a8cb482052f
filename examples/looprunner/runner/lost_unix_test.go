//go:build unix

package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestATickWhoseHarnessRemovesTheLockIsRecordedOnce: a tick's harness
// removes the loop's .state.lock while the tick holds it. The tick's
// writes then find the lock lost and publish nothing under it; the runner
// takes the lock again on a new lock file and records the tick, once: exit
// 0, one ok line whose note says the lock was lost, tick_count 1. The next
// tick logs nothing abandoned.
// Ablation (run): loopstate's recordLost returning the lost-lock error at
// once (the tick dropped, as before) makes the tick exit 75 with no line,
// and the next tick log it abandoned.
func TestATickWhoseHarnessRemovesTheLockIsRecordedOnce(t *testing.T) {
	e := newEnv(t)
	root := e.path("loops")
	e.want(0, "loop", "create", "-root", root, "ci")
	log := filepath.Join(root, loopsDir, "ci", "ticks.jsonl")

	rec := tick(t, e.want(0, "-json", "loop", "tick", "-root", root, "ci", "--", "/bin/sh", "-c", "rm "+loopLockFile))
	require.Equal(t, int64(1), rec.N, "loop tick whose harness removed the lock file: n = %d, want 1", rec.N)
	require.Equal(t, "ok", rec.Outcome, "loop tick whose harness removed the lock file = %+v, want ok", rec)
	require.Contains(t, rec.Note, "lock lost", "loop tick whose harness removed the lock file: note = %q, want it to say the lock was lost", rec.Note)

	rec = tick(t, e.want(0, "-json", "loop", "tick", "-root", root, "ci", "--", bin, "help"))
	require.Equal(t, int64(2), rec.N, "loop tick after it: n = %d, want 2", rec.N)
	lines := logLines(t, log)
	require.Len(t, lines, 2, "ticks.jsonl = %q, want the two ticks' lines", lines)
	for i, l := range lines {
		require.Contains(t, l, `"outcome": "ok"`, "ticks.jsonl line %d = %q, want ok (nothing abandoned)", i+1, l)
	}
}

// TestALostLockRefusesEveryChangeUntilTheTickIsRecorded is the issue's
// reproduction: a tick runs in one process (its harness waiting on a
// barrier file) when the loop's .state.lock is removed. Every command that
// would change the loop, each from another process, then exits 75 naming
// the runner's pid and tick 1, and the state file is unchanged. When the
// harness ends, the tick exits 0 and is logged once, with its cost, and
// tick_count is 1 with current_tick cleared; the next tick logs nothing
// abandoned.
// Ablations (run): loopstate's runnerBusy returning nil, loop pause exits 0
// and publishes status paused while the tick runs (which then, with the
// tick dropped as before, ended tick_count 0, paused, no line); recordLost
// returning at once, the tick exits 75 and logs no line.
func TestALostLockRefusesEveryChangeUntilTheTickIsRecorded(t *testing.T) {
	e := newEnv(t)
	root := e.path("loops")
	e.want(0, "loop", "create", "-root", root, "-schedule", "ci")
	dir := filepath.Join(root, loopsDir, "ci")
	running, release := e.path("running"), e.path("release")
	script := fmt.Sprintf(`touch %s; while [ ! -e %s ]; do sleep 0.01; done; echo '{"cost": {"usd": 0.25, "tokens": 7}}'`, running, release)

	var stdout, stderr outFile
	stdout.f, stderr.f = create(t, e.path("stdout")), create(t, e.path("stderr"))
	cmd := exec.Command(bin, "-state-dir", e.state, "-json", "loop", "tick", "-root", root, "ci", "--", "/bin/sh", "-c", script)
	cmd.Dir, cmd.Stdout, cmd.Stderr = e.dir, stdout.f, stderr.f
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(running); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("loop tick ended before its harness ran: %v\nstderr:\n%s", err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "the harness never wrote %s\nstderr:\n%s", running, stderr.String())
	}

	require.NoError(t, os.Remove(filepath.Join(dir, loopLockFile)))
	stateFile := filepath.Join(dir, ".state.loop")
	before, err := os.ReadFile(stateFile)
	require.NoError(t, err)
	runner := fmt.Sprintf("tick 1 is still running in pid %d", cmd.Process.Pid)
	for _, args := range [][]string{
		{"pause", "-root", root, "ci"},
		{"resume", "-root", root, "ci"},
		{"approve", "-root", root, "ci"},
		{"check-gate", "-root", root, "ci"},
		{"disable-schedule", "-root", root, "ci"},
		{"delete", "-root", root, "ci"},
		{"tick", "-root", root, "ci", "--", "/bin/sh", "-c", "exit 0"},
	} {
		r := e.want(75, append([]string{"loop"}, args...)...)
		oneErrorLine(t, r, "loop "+args[0])
		require.Contains(t, r.stderr, runner, "loop %s while the tick runs: stderr = %q, want it to name the runner", args[0], r.stderr)
		after, err := os.ReadFile(stateFile)
		require.NoError(t, err)
		require.Equal(t, string(before), string(after), "the state after the refused loop %s changed", args[0])
	}

	require.NoError(t, os.WriteFile(release, nil, 0o644))
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatalf("loop tick still running a minute after its release\nstderr:\n%s", stderr.String())
	}
	require.NoError(t, err, "loop tick whose lock file was removed = %v, want exit 0\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	lines := logLines(t, filepath.Join(dir, "ticks.jsonl"))
	require.Len(t, lines, 1, "ticks.jsonl after the tick = %q, want its one line", lines)
	for _, want := range []string{`"n": 1`, `"outcome": "ok"`, `"usd": 0.25`, `"tokens": 7`, "lock lost"} {
		require.Contains(t, lines[0], want, "ticks.jsonl line = %q, want %s", lines[0], want)
	}
	d := state(t, e.want(0, "-json", "loop", "show", "-root", root, "ci"))
	require.Equal(t, int64(1), d.TickCount, "tick_count after the tick = %d, want 1", d.TickCount)
	require.Equal(t, 0.25, d.Spent.USD, "spent after the tick = %+v, want its cost", d.Spent)
	ct, err := currentTick(d)
	require.NoError(t, err)
	require.Nil(t, ct, "current_tick after the tick = %+v, want null", ct)

	rec := tick(t, e.want(0, "-json", "loop", "tick", "-root", root, "ci", "--", "/bin/sh", "-c", "exit 0"))
	require.Equal(t, int64(2), rec.N, "loop tick after it: n = %d, want 2", rec.N)
	lines = logLines(t, filepath.Join(dir, "ticks.jsonl"))
	require.Len(t, lines, 2, "ticks.jsonl = %q, want two lines", lines)
	require.NotContains(t, strings.Join(lines, "\n"), "abandoned", "ticks.jsonl = %q, want nothing abandoned", lines)
}

// logLines returns the lines of the tick log at path.
func logLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

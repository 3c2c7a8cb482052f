package runner

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOutputThatCannotBeWrittenFailsTheCommand: a command whose stdout
// refuses its output (/dev/full: ENOSPC, as on a full disk) exits 1 with one
// line on stderr naming the write, never 0 with nothing printed: a script
// that runs `looprunner lock sidecar FILE > f` or reads `loop show` must not
// take the missing output for success. Text output ignored its write errors
// (only -json output was checked).
func TestOutputThatCannotBeWrittenFailsTheCommand(t *testing.T) {
	e := newEnv(t)
	e.write("deferred-work.md", "# Deferred Work\n")
	e.write("sprint-status.yaml", "development_status:\n  epic-1: backlog\n  1-1-a: backlog\n")
	root := e.path("loops")
	e.want(0, "loop", "create", "-root", root, "ci")
	for _, args := range [][]string{
		{"version"},
		{"-h"},
		{"help", "ledger"},
		{"ledger", "list", "-h"},
		{"lock", "sidecar", e.path("deferred-work.md")},
		{"lock", "holder", loopLock(root, "ci")},
		{"ledger", "list", "-file", e.path("deferred-work.md")},
		{"board", "show", "-file", e.path("sprint-status.yaml")},
		{"loop", "show", "-root", root, "ci"},
		{"loop", "list", "-root", root},
		{"-json", "loop", "show", "-root", root, "ci"},
	} {
		full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
		if err != nil {
			t.Skipf("no /dev/full here: %v", err)
		}
		var stderr strings.Builder
		cmd := exec.Command(bin, append([]string{"-state-dir", e.state}, args...)...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = e.dir, full, &stderr
		if raceEnabled {
			cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
		}
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
			<-done
			t.Fatalf("looprunner %s > /dev/full: still running after 2 minutes", strings.Join(args, " "))
		}
		full.Close()
		var ee *exec.ExitError
		code := 0
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		r := result{args: args, stderr: stderr.String(), code: code}
		require.Equal(t, exitRefused, code, "looprunner %s > /dev/full = exit %d, want %d\n%s", strings.Join(args, " "), code, exitRefused, r)
		lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
		require.Len(t, lines, 1, "looprunner %s > /dev/full: stderr = %q, want one line", strings.Join(args, " "), r.stderr)
		require.Contains(t, lines[0], "no space left on device", "looprunner %s > /dev/full: stderr = %q, want it to name the failed write", strings.Join(args, " "), r.stderr)
	}
}

package proc

import (
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stretchr/testify/require"
)

func TestParseStatCountsFieldsFromTheLastParenthesis(t *testing.T) {
	tail := " 1 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100"
	for _, tc := range []struct {
		line  string
		st    byte
		start string
		ok    bool
	}{
		{"42 (sleep) S" + tail, 'S', "987654", true},
		{"42 (a) b (c)) Z" + tail, 'Z', "987654", true},
		{"42 (x y) R" + tail, 'R', "987654", true},
		{"42 (short) S 1 2", 0, "", false},
		{"no parenthesis", 0, "", false},
		{"42 (x) S 1 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 notanumber 1000", 0, "", false},
	} {
		st, start, ok := parseStat([]byte(tc.line))
		require.Equal(t, tc.ok, ok, "parseStat(%q) ok = %v, want %v", tc.line, ok, tc.ok)
		require.Equal(t, tc.st, st, "parseStat(%q) state = %q, want %q", tc.line, st, tc.st)
		require.Equal(t, tc.start, start, "parseStat(%q) start = %q, want %q", tc.line, start, tc.start)
	}
}

// TestZombieIsGone: a child that exited but is not reaped yet is a zombie,
// and gone: kill(2) still finds a zombie, so it is /proc's state Z that
// tells. (Ablation: dropping the check of state Z makes it red.)
func TestZombieIsGone(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	tok := Start(pid)
	var info unix.Siginfo
	for {
		// Wait for the exit without reaping it (WNOWAIT).
		err = unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	require.NoError(t, err, "waitid(%d)", pid)
	require.True(t, Gone(pid, tok), "Gone(zombie %d, %q) = false, want true", pid, tok)
	require.NoError(t, cmd.Wait())
}

func TestStartOfSelfHasTheBootID(t *testing.T) {
	require.Contains(t, Self(), bootID(), "Self() = %q, want it to hold the boot id %q", Self(), bootID())
}

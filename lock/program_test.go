package lock_test

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/lock"
)

// envProgramChild makes the test binary the child of
// TestAWaiterReadsTheHolderOfAProgramWithAVeryLongName: it holds the lock
// file the variable names until its standard input closes.
const envProgramChild = "FILETXN_TEST_PROGRAM_CHILD"

// TestAWaiterReadsTheHolderOfAProgramWithAVeryLongName: a holder started
// with an os.Args[0] whose JSON encoding is longer than the holder record
// (800 "<", six bytes each escaped) leaves a record a waiter reads: the
// holder's pid, its whole purpose, and its program name cut with "…"
// after it; TryAcquire's *BusyError carries that holder. os.Args[0] need not
// name a file, so nothing but the record bounds it.
//
// Ablation (run): recordPrefix encoding the whole program name makes it red:
// ReadHolder answers "holder record too long" and the BusyError's Holder is
// nil ("a holder that left no record").
func TestAWaiterReadsTheHolderOfAProgramWithAVeryLongName(t *testing.T) {
	const purpose = "tick ci-triage"
	if path := os.Getenv(envProgramChild); path != "" {
		h, err := lock.TryAcquire(path, lock.WithPurpose(purpose))
		require.NoError(t, err, "TryAcquire(%q) in the child = %v, want nil", path, err)
		defer h.Release()
		_, err = os.Stdout.WriteString("held\n")
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, os.Stdin)
		return
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "x.lock")
	name := strings.Repeat("<", 800)
	cmd := exec.Command(exe, "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Args[0] = name
	cmd.Env = append(os.Environ(), envProgramChild+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		stdin.Close()
		require.NoError(t, cmd.Wait(), "the child holding %q failed", path)
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the child's first line = %q, %v, want \"held\"", line, err)
	require.Equal(t, "held\n", line, "the child's first line = %q, want \"held\"", line)

	got, err := lock.ReadHolder(path)
	require.NoError(t, err, "ReadHolder(%q) = %v, want the child's record", path, err)
	require.NotNil(t, got, "ReadHolder(%q) = nil, want the child's record", path)
	require.Equal(t, cmd.Process.Pid, got.PID, "ReadHolder(%q).PID = %d, want the child's %d", path, got.PID, cmd.Process.Pid)
	require.Equal(t, purpose, got.Purpose, "ReadHolder(%q).Purpose = %q, want %q", path, got.Purpose, purpose)
	kept, cut := strings.CutSuffix(got.Program, "…")
	require.True(t, cut && kept != "" && strings.HasPrefix(name, kept),
		"ReadHolder(%q).Program = %q, want a prefix of the child's os.Args[0] with \"…\" after it", path, got.Program)

	_, err = lock.TryAcquire(path)
	var busy *lock.BusyError
	require.True(t, errors.As(err, &busy), "TryAcquire(%q) while the child holds = %v, want a *BusyError", path, err)
	require.NotNil(t, busy.Holder, "TryAcquire(%q) = %v, want a BusyError naming the child", path, err)
	require.Equal(t, cmd.Process.Pid, busy.Holder.PID, "TryAcquire(%q) = %v, want the child's pid %d", path, err, cmd.Process.Pid)
}

package harness

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/filetxn/filetxn/internal/proc"
	"github.com/filetxn/filetxn/loopstate"
	"github.com/stretchr/testify/require"
)

// TestWhatTheChildLeavesInItsGroupIsKilled: on Linux a child that exits
// leaving a process running in its group (here one that also holds the
// child's standard output open) has that process killed when it exits, and
// Run returns without waiting for KillGrace: nothing is left holding the
// loop's lock.
// Ablation (run): without the signalGroup after waitExited in Run the
// sleep survives the child (and Run waits for WaitDelay, the grace).
func TestWhatTheChildLeavesInItsGroupIsKilled(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	c := &Command{Path: "sh", Args: []string{"-c", `sleep 600 & echo $! > "$1"`, "sh", pidFile}, KillGrace: time.Hour}
	done := make(chan error, 1)
	go func() { _, err := c.Run(context.Background(), &loopstate.Run{}); done <- err }()
	select {
	case err := <-done:
		require.NoError(t, err, "Run(sh leaving sleep 600 in its group) = %v", err)
	case <-time.After(time.Minute):
		t.Fatal("Run(sh leaving sleep 600 in its group) still waits after a minute, want it to return when sh exits")
	}
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err, "pid file %q", b)
	deadline := time.Now().Add(20 * time.Second)
	for !proc.Gone(pid, "") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !proc.Gone(pid, "") {
		t.Errorf("the sleep (pid %d) that the child left in its group still runs after Run returned, want it killed", pid)
	}
}

//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestALostLockExits75AndTheCommandCanBeRunAgain: the README's guarantee
// that a transaction whose lock file was removed publishes nothing and fails
// with lock.ErrLockLost naming the data file and the lock file, exit 75, and
// that running the command again is safe. A tick's harness removes the loop's
// .state.lock while the tick holds it: the tick exits 75 naming ticks.jsonl
// and .state.lock and logs no line; the next tick gets the lock file back,
// logs the lost tick abandoned once, and runs.
func TestALostLockExits75AndTheCommandCanBeRunAgain(t *testing.T) {
	e := newEnv(t)
	root := e.path("loops")
	e.want(0, "loop", "create", "-root", root, "ci")
	log := filepath.Join(root, loopsDir, "ci", "ticks.jsonl")

	r := e.want(75, "loop", "tick", "-root", root, "ci", "--", "/bin/sh", "-c", "rm "+loopLockFile)
	oneErrorLine(t, r, "loop tick")
	for _, name := range []string{"ticks.jsonl", loopLockFile, "deleted or replaced while held"} {
		require.Contains(t, r.stderr, name, "loop tick whose lock file was removed: stderr = %q, want it to name %q", r.stderr, name)
	}
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Empty(t, b, "ticks.jsonl after the tick that lost its lock = %q, want no line", b)

	rec := tick(t, e.want(0, "-json", "loop", "tick", "-root", root, "ci", "--", bin, "help"))
	require.Equal(t, int64(2), rec.N, "loop tick after the lost one: n = %d, want 2 (the lost tick counted abandoned)", rec.N)
	b, err = os.ReadFile(log)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	require.Len(t, lines, 2, "ticks.jsonl = %q, want the abandoned tick's line and the ok tick's", b)
	require.Contains(t, lines[0], `"outcome": "abandoned"`, "ticks.jsonl line 1 = %q, want the lost tick abandoned", lines[0])
	require.Contains(t, lines[1], `"outcome": "ok"`, "ticks.jsonl line 2 = %q, want the ok tick", lines[1])
	d := state(t, e.want(0, "-json", "loop", "show", "-root", root, "ci"))
	require.Equal(t, int64(2), d.TickCount, "tick_count after the lost tick and an ok one = %d, want 2", d.TickCount)
}

package loopstate

import (
	"io/fs"
	"os"
	"testing"

	"github.com/filetxn/filetxn/atomicfile"
	"github.com/stretchr/testify/require"
)

// TestATickLogThatCannotTakeALineFailsTheTickBeforeItsHarness: when
// ticks.jsonl is a file the tick's line cannot be appended to (a directory,
// a read-only file), Tick fails before it marks the tick and runs the
// harness, with the append's error (atomicfile.ErrNotRegular,
// fs.ErrPermission) naming the log, and writes nothing: the harness's work
// is not done and then left unrecorded, and no current_tick is left for
// the next tick to count as abandoned.
// Ablation (run): without the check of the log before beginTick the
// harness runs, Tick fails only at the end, and the state keeps the
// tick's current_tick.
func TestATickLogThatCannotTakeALineFailsTheTickBeforeItsHarness(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		want error
	}{
		{"directory", func(t *testing.T, path string) { require.NoError(t, os.Mkdir(path, 0o755)) }, atomicfile.ErrNotRegular},
		{"read-only file", func(t *testing.T, path string) { require.NoError(t, os.WriteFile(path, nil, 0o444)) }, fs.ErrPermission},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newTestRoot(t)
			l := mustCreate(t, r, "x", Template{})
			require.NoError(t, os.Remove(l.log))
			tc.make(t, l.log)
			state := readFile(t, l.state)
			_, err := l.Tick(ctx0, TriggerManual, mustNotRun(t))
			require.ErrorIs(t, err, tc.want, "Tick() with a %s at %s = %v, want %v", tc.name, l.log, err, tc.want)
			require.ErrorContains(t, err, l.log, "Tick() = %v, want it to name %s", err, l.log)
			require.Equal(t, string(state), string(readFile(t, l.state)), "Tick() with a %s at ticks.jsonl changed the state, want nothing written", tc.name)
		})
	}
}

package harness

import (
	"context"
	"os"
	"reflect"
	"sync"
	"testing"

	"github.com/filetxn/filetxn/loopstate"
	"github.com/stretchr/testify/require"
)

// TestACommandIsSharedByConcurrentTicksUnchanged: one Command runs the
// ticks of several loops at once (under -race, without a data race on it)
// and is not modified: its fields are as they were, KillGrace still 0 and
// Env still without the LOOPSTATE_* variables each run adds.
// Ablation (run): Run storing the default grace in c.KillGrace, or
// appending the loop's variables to c.Env, makes it red (and -race
// reports the write).
func TestACommandIsSharedByConcurrentTicksUnchanged(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	ctx := context.Background()
	root, err := loopstate.NewRoot(t.TempDir())
	require.NoError(t, err)
	env := make([]string, 1, 4) // room to append in place
	env[0] = "HARNESS_TEST=1"
	c := &Command{Path: exe, Args: []string{"-test.run=^$"}, Env: env}
	want := *c
	want.Args, want.Env = append([]string(nil), c.Args...), append([]string(nil), c.Env...)
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b", "c"} {
		l, err := root.Create(ctx, name, nil)
		require.NoError(t, err, "Create(%s) = %v", name, err)
		wg.Go(func() {
			rec, err := l.Tick(ctx, loopstate.TriggerManual, c.Run)
			if err != nil || rec.Outcome != loopstate.OK {
				t.Errorf("Tick(%s) with a shared Command = %+v, %v, want ok", name, rec, err)
			}
		})
	}
	wg.Wait()
	require.Equal(t, want.Args, c.Args, "Command.Args after the ticks = %q, want %q", c.Args, want.Args)
	require.Equal(t, want.Env, c.Env, "Command.Env after the ticks = %q, want %q", c.Env, want.Env)
	require.Equal(t, "HARNESS_TEST=1", env[:cap(env)][0], "Command.Env's storage after the ticks = %q, want it untouched", env[:cap(env)])
	for _, extra := range env[1:cap(env)] {
		require.Empty(t, extra, "Command.Env's spare storage after the ticks holds %q, want nothing appended in place", env[:cap(env)])
	}
	c.Args, c.Env, want.Args, want.Env = nil, nil, nil, nil
	require.True(t, reflect.DeepEqual(want, *c), "Command after the ticks = %+v, want %+v", *c, want)
}

//go:build unix

package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/testkit/memback"
	"github.com/filetxn/filetxn/loopstate"
	"github.com/stretchr/testify/require"
)

// TestMalformedCostLineIsInTheTicksNote: a harness whose last line names
// "cost" but is not a cost line has its tick recorded with no cost and a
// note that says what is wrong, ok or failed; a good cost line is counted.
// Ablation (run): Run ignoring parseCostLine's error (the old behaviour)
// leaves the note empty and the first two cases go red.
func TestMalformedCostLineIsInTheTicksNote(t *testing.T) {
	ctx := context.Background()
	l, err := mustRoot(loopstate.NewRoot(t.TempDir())).Create(ctx, "x", nil)
	require.NoError(t, err, "Create(x) = %v", err)
	for _, tc := range []struct {
		script  string
		outcome loopstate.Outcome
		note    string
		usd     float64
	}{
		{`echo '{"cost": {"usd": -1}}'`, loopstate.OK, "malformed cost line (cost.usd -1 is negative), counted as no cost", 0},
		{`echo '{"cost": {"usd": 1}'; exit 2`, loopstate.Fail, "exit status 2; malformed cost line (not JSON), counted as no cost", 0},
		{`echo '{"cost": {"usd": 0.5}, "note": "fine"}'`, loopstate.OK, "fine", 0.5},
	} {
		rec, err := l.Tick(ctx, loopstate.TriggerManual, (&Command{Path: "sh", Args: []string{"-c", tc.script}}).Run)
		require.NoError(t, err, "Tick(%s) = %v", tc.script, err)
		require.Equal(t, tc.outcome, rec.Outcome, "Tick(%s).Outcome = %s, want %s", tc.script, rec.Outcome, tc.outcome)
		require.Equal(t, tc.note, rec.Note, "Tick(%s).Note = %q, want %q", tc.script, rec.Note, tc.note)
		require.Equal(t, tc.usd, rec.Cost.USD, "Tick(%s).Cost.USD = %v, want %v", tc.script, rec.Cost.USD, tc.usd)
		require.False(t, strings.Contains(rec.Note, "malformed") && rec.Cost.Seconds <= 0, "Tick(%s).Cost.Seconds = %v, want the wall time", tc.script, rec.Cost.Seconds)
	}
}

// TestCommandGetsTheRootAbsolute: a Root opened with a relative directory
// gives its harness an absolute LOOPSTATE_ROOT, since the harness runs in
// the loop's directory, where the relative one names nothing.
// Ablation (run): passing the root as given makes the child's
// LOOPSTATE_ROOT "." and the test red.
func TestCommandGetsTheRootAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ctx := context.Background()
	l, err := mustRoot(loopstate.NewRoot(".")).Create(ctx, "x", nil)
	require.NoError(t, err, "Create(x) = %v", err)
	script := `echo "{\"cost\": {}, \"note\": \"$LOOPSTATE_ROOT|$LOOPSTATE_LOOP\"}"`
	rec, err := l.Tick(ctx, loopstate.TriggerManual, (&Command{Path: "sh", Args: []string{"-c", script}}).Run)
	require.NoError(t, err, "Tick = %v", err)
	root, loop, _ := strings.Cut(rec.Note, "|")
	require.True(t, filepath.IsAbs(root), "the harness's LOOPSTATE_ROOT = %q, want an absolute path", root)
	got, _ := filepath.EvalSymlinks(root)
	want, _ := filepath.EvalSymlinks(dir)
	require.Equal(t, want, got, "the harness's LOOPSTATE_ROOT = %q, want %q", got, want)
	require.Equal(t, "x", loop, "the harness's LOOPSTATE_LOOP = %q, want %q", loop, "x")
}

// TestCommandOnABackendGetsTheRootAsGiven: the harness of a loop kept on
// a backend gets LOOPSTATE_ROOT as the root was given (its documents'
// names are not absolute) and runs where the caller runs, even if a local
// directory has the loop's path. Ablation (run): making the root absolute
// on a backend too, or running the child in the local <root>/loops/x,
// turns the test red.
func TestCommandOnABackendGetsTheRootAsGiven(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.MkdirAll(filepath.Join("proj", "loops", "x"), 0o755))
	ctx := context.Background()
	r := mustRoot(loopstate.NewRoot("proj", filetxn.WithBackend(memback.New().Backend())))
	l, err := r.Create(ctx, "x", nil)
	require.NoError(t, err, "Create(x) = %v", err)
	script := `echo "{\"cost\": {}, \"note\": \"$LOOPSTATE_ROOT|$(pwd)\"}"`
	rec, err := l.Tick(ctx, loopstate.TriggerManual, (&Command{Path: "sh", Args: []string{"-c", script}}).Run)
	require.NoError(t, err, "Tick = %v", err)
	root, wd, _ := strings.Cut(rec.Note, "|")
	require.Equal(t, "proj", root, "the harness's LOOPSTATE_ROOT")
	got, _ := filepath.EvalSymlinks(wd)
	want, _ := filepath.EvalSymlinks(dir)
	require.Equal(t, want, got, "the harness's working directory")
}

// mustRoot returns r, and panics if NewRoot refused its arguments.
func mustRoot(r *loopstate.Root, err error) *loopstate.Root {
	if err != nil {
		panic(err)
	}
	return r
}

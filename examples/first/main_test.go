package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/testkit"
)

// TestFirstProgramCountsEveryRunOfEveryProcess: 4 processes run main 25
// times each at once in one directory, and state.json counts all 100 runs.
// Ablation: a read and a write of state.json without the store (a naive
// os.ReadFile, +1, os.WriteFile) loses runs, and the count goes red.
func TestFirstProgramCountsEveryRunOfEveryProcess(t *testing.T) {
	const procs, each = 4, 25
	if c := testkit.Child(t); c != nil {
		t.Chdir(c.Dir)
		devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		require.NoError(t, err)
		defer devnull.Close()
		os.Stdout = devnull // "run N", 25 times
		c.Barrier()
		for range each {
			main()
		}
		return
	}
	dir := t.TempDir()
	g := testkit.Start(t, procs, dir)
	g.Release()
	g.Wait()
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	require.NoError(t, err)
	require.JSONEq(t, `{"runs": 100}`, string(b), "state.json after %d processes x %d runs = %s, want 100 runs", procs, each, b)
}

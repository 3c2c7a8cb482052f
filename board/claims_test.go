package board

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/filetxn/filetxn"
	"github.com/stretchr/testify/require"
)

// TestOpenViewAndRefusedArgumentsTouchNoFile: Open touches no file,
// LockPath creates nothing, View of a missing board is a Doc with no rows,
// and Advance's arguments are checked before any I/O and any lock: an empty
// key, a target outside the order and a Stamp that cannot be written plainly
// are refused with filetxn.ErrInvalidArgument (not the missing board's
// filetxn.ErrNotFound), and none of them makes the board's directory, the
// state root, its locks/ directory or the lock file.
// Ablation (run): validate moved into the Mutate callback of Store.Advance
// takes the lock (the state root appears) and the test fails.
func TestOpenViewAndRefusedArgumentsTouchNoFile(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	t.Setenv("BMAD_LOOP_STATE_DIR", filepath.Join(base, "state"))
	path := filepath.Join(base, "impl", "sprint-status.yaml")

	s, err := Open(path)
	require.NoError(t, err, "Open(%s) = %v", path, err)
	_, err = s.LockPath()
	require.NoError(t, err, "LockPath() = %v", err)
	d, err := s.View(ctx)
	require.True(t, err == nil && len(d.Stories())+len(d.Epics()) == 0 && d.Bytes() == nil, "View(missing board) = %v, %v, want no rows", d, err)
	for name, call := range map[string]func() (Status, error){
		"empty key":        func() (Status, error) { return s.Advance(ctx, "", Done) },
		"unordered target": func() (Status, error) { return s.Advance(ctx, "1-1-a", "shipped") },
		"stamp":            func() (Status, error) { return s.Advance(ctx, "1-1-a", Done, Stamp("a: b")) },
	} {
		got, err := call()
		require.True(t, got == "" && errors.Is(err, filetxn.ErrInvalidArgument), "Advance(%s) of a missing board = %q, %v, want filetxn.ErrInvalidArgument", name, got, err)
	}
	ents, err := os.ReadDir(base)
	require.NoError(t, err)
	require.Empty(t, ents, "after Open, LockPath, View and refused Advances %s holds %v, want nothing created", base, ents)
}

package board

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
)

// TestNilFnIsRefusedBeforeAnyIO: Mutate and MutateProbed with a nil fn
// return an error matching filetxn.ErrInvalidArgument that names the
// board, and create nothing. Ablation: dropping MutateProbed's check
// makes it panic on a store without a state root (fn is called on a
// lock-free read), and this test goes red.
func TestNilFnIsRefusedBeforeAnyIO(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BMAD_LOOP_STATE_DIR", "relative/state") // no state root can be derived: Open's store cannot write
	path := filepath.Join(dir, "sprint-status.yaml")
	for name, opts := range map[string][]filetxn.Option{
		"state root":    {filetxn.WithStateRoot(filepath.Join(dir, "state"))},
		"no state root": nil, // rootErr set: MutateProbed calls fn on a lock-free read itself
	} {
		s, err := Open(path, opts...)
		require.NoError(t, err, "Open(%s)", name)
		_, err = s.Mutate(context.Background(), nil)
		require.ErrorIs(t, err, filetxn.ErrInvalidArgument, "Mutate(nil) with %s = %v, want ErrInvalidArgument", name, err)
		require.ErrorContains(t, err, path)
		_, err = s.MutateProbed(context.Background(), nil)
		require.ErrorIs(t, err, filetxn.ErrInvalidArgument, "MutateProbed(nil) with %s = %v, want ErrInvalidArgument", name, err)
		require.ErrorContains(t, err, path)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "directory after calls with a nil fn = %v, want nothing created", entries)
}

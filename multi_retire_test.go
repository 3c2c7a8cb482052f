package filetxn_test

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/seam"
)

// TestALeftoverRecordDoesNotTakeALaterCommitsStagedFile leaves a
// finished commit X over a and b with its record beside b's lock only (its
// removal failed after a's, as a kill between the two removals leaves it),
// then has a commit Y over c and a stop after renaming c and before
// renaming a (as a kill between its renames leaves it): Y's staged file
// for a has the name X's had, for the names depend only on a and its lock.
// A transaction on b then settles X, and must not remove that file: X is
// finished, and the file is Y's. The next transaction on a then completes
// Y.
//
// Ablation (seen red): with a record that misses a copy undone by removing
// every staged file it names (settle calling r.undo, as at 87ef4ff, instead
// of undoUnsure), the transaction on a fails with ErrDiverged: c is
// published, a's new version is gone.
func TestALeftoverRecordDoesNotTakeALaterCommitsStagedFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func(name string) *filetxn.Store[*counter] {
		s, err := filetxn.NewStore[*counter](filepath.Join(dir, name), filetxn.JSON[counter]())
		require.NoError(t, err)
		return s
	}
	a, b, c := open("a.json"), open("b.json"), open("c.json")
	fail := func(p seam.Point, path string) func() {
		return seam.Set(t, func(q seam.Point, at string) error {
			if q == p && at == path {
				return syscall.EIO
			}
			return nil
		})
	}

	remove := fail(seam.Retire, filepath.Join(dir, "b.json.lock.intent"))
	_, err := filetxn.MutateAll(ctx, []filetxn.Member{a, b}, func(m *filetxn.Multi) error {
		filetxn.In(m, a).N = 1
		filetxn.In(m, b).N = 1
		return nil
	})
	require.ErrorIs(t, err, syscall.EIO, "MutateAll(a, b) with b's record not removed")
	remove()
	require.FileExists(t, filepath.Join(dir, "b.json.lock.intent"))

	target, err := filepath.EvalSymlinks(filepath.Join(dir, "a.json"))
	require.NoError(t, err)
	remove = fail(seam.Rename, target)
	_, err = filetxn.MutateAll(ctx, []filetxn.Member{c, a}, func(m *filetxn.Multi) error {
		filetxn.In(m, c).N = 2
		filetxn.In(m, a).N = 2
		return nil
	})
	require.ErrorIs(t, err, syscall.EIO, "MutateAll(c, a) with a's rename failing")
	remove()

	_, err = b.Mutate(ctx, func(d *counter) error { d.N = 3; return nil })
	require.NoError(t, err, "b.Mutate, which settles the commit over a and b")
	_, err = a.Mutate(ctx, func(d *counter) error { return nil })
	require.NoError(t, err, "a.Mutate, which completes the commit over c and a")
	for _, x := range []struct {
		name string
		s    *filetxn.Store[*counter]
		want int
	}{{"a", a, 2}, {"b", b, 3}, {"c", c, 2}} {
		d, err := x.s.View(ctx)
		require.NoError(t, err)
		require.Equal(t, x.want, d.N, "%s = %d, want %d", x.name, d.N, x.want)
	}
}

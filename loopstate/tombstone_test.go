package loopstate

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/fsys"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/stretchr/testify/require"
)

// killedDelete leaves in r what a Delete of l killed between its tombstone
// rename and its removal leaves (the rename is made under the lock, as
// Delete makes it), and returns the tombstone's name.
func killedDelete(t *testing.T, l *Loop) string {
	t.Helper()
	var tomb string
	_, err := l.Mutate(ctx0, func(*Doc) error {
		var err error
		tomb, err = l.tombstone()
		return err
	})
	require.NoError(t, err, "tombstone() under the lock = %v, want nil", err)
	return filepath.Base(tomb)
}

// loopsEntries returns the names in r's loops directory.
func loopsEntries(t *testing.T, r *Root) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(r.dir, loopsDir))
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestTombstoneOfAKilledDeleteIsRemovedByTheNextCreateOrDelete: a Delete
// killed after its rename leaves a loop that is gone for every reader
// (Open, View and List) and a tombstone that the next Create or Delete
// under the root removes, whatever loop it is for, as Loop.Delete's godoc
// says; a hidden directory that is not a tombstone is left alone.
// Ablation (run): without removeTombstones in Create and Delete, both
// tombstones stay for ever.
func TestTombstoneOfAKilledDeleteIsRemovedByTheNextCreateOrDelete(t *testing.T) {
	r, _ := newTestRoot(t)
	x := mustCreate(t, r, "x", Template{})
	other := filepath.Join(r.dir, loopsDir, ".x.tmp-notatomb")
	require.NoError(t, os.Mkdir(other, 0o755))
	tomb := killedDelete(t, x)
	require.True(t, isTombstone(tomb), "isTombstone(%q) = false, want true", tomb)

	_, err := r.Open(ctx0, "x")
	require.ErrorIs(t, err, filetxn.ErrNotFound, "Open(x) after a killed Delete = %v, want filetxn.ErrNotFound", err)
	_, err = x.View(ctx0)
	require.ErrorIs(t, err, filetxn.ErrNotFound, "View() after a killed Delete = %v, want filetxn.ErrNotFound", err)
	loops, err := r.List(ctx0)
	require.NoError(t, err)
	require.Empty(t, loops, "List() after a killed Delete = %v, want no loop", loops)

	y := mustCreate(t, r, "y", Template{})
	require.ElementsMatch(t, []string{"y", ".x.tmp-notatomb"}, loopsEntries(t, r),
		"loops directory after Create(y) = %v, want y and the hidden non-tombstone, no tombstone", loopsEntries(t, r))

	tomb = killedDelete(t, y)
	z := mustCreate(t, r, "z", Template{})
	require.NoError(t, os.Mkdir(filepath.Join(r.dir, loopsDir, tomb[:len(tomb)-12]+"zzzzzzzzzzzz"), 0o755))
	err = z.Delete(ctx0)
	require.NoError(t, err, "Delete(z) = %v, want nil", err)
	require.ElementsMatch(t, []string{".x.tmp-notatomb", ".y.deleted-zzzzzzzzzzzz"}, loopsEntries(t, r),
		"loops directory after Delete(z) = %v, want only the hidden non-tombstones", loopsEntries(t, r))
	mustCreate(t, r, "x", Template{})
	mustCreate(t, r, "y", Template{})
}

func TestIsTombstone(t *testing.T) {
	for name, want := range map[string]bool{
		".x.deleted-0123456789ab":   true,
		".a-b.deleted-ffffffffffff": true,
		"x.deleted-0123456789ab":    false,
		"..deleted-0123456789ab":    false,
		".x.deleted-0123456789a":    false,
		".x.deleted-0123456789abc":  false,
		".x.deleted-0123456789AB":   false,
		".x.tmp-0123456789ab":       false,
		".x.deleted-0123456789ab/":  false,
		".X Y.deleted-0123456789ab": false,
	} {
		require.Equal(t, want, isTombstone(name), "isTombstone(%q) = %v, want %v", name, !want, want)
	}
}

// TestStagingOfAKilledCreateIsNoLoop: what a Create killed before its
// rename leaves (the hidden staging directory, filled) is no loop for Open,
// List or a later Create of the name, and the tombstone sweep leaves it
// alone, as Create's godoc says (a live Create's staging looks the same).
func TestStagingOfAKilledCreateIsNoLoop(t *testing.T) {
	r, _ := newTestRoot(t)
	mustCreate(t, r, "y", Template{})
	pd, err := fsys.CreateDir(r.loopDir("x"), 0o755, true)
	require.NoError(t, err)
	for _, f := range []string{stateFile, lockFile, tickLog} {
		require.NoError(t, os.WriteFile(filepath.Join(pd.Path(), f), nil, 0o644))
	}
	_, err = r.Open(ctx0, "x")
	require.ErrorIs(t, err, filetxn.ErrNotFound, "Open(x) beside a killed Create's staging = %v, want filetxn.ErrNotFound", err)
	loops, err := r.List(ctx0)
	require.NoError(t, err)
	require.Len(t, loops, 1, "List() beside a killed Create's staging = %v, want y alone", loops)
	x := mustCreate(t, r, "x", Template{})
	_, err = x.View(ctx0)
	require.NoError(t, err, "View() of x created beside a killed Create's staging = %v, want nil", err)
	require.NoError(t, mustOpen(t, r, "y").Delete(ctx0))
	require.ElementsMatch(t, []string{"x", filepath.Base(pd.Path())}, loopsEntries(t, r),
		"loops directory = %v, want x and the staging directory", loopsEntries(t, r))
}

// TestCreateAndDeleteWhoseDirectorySyncFailsSayTheRenameHappened: when
// only the fsync of the loops directory after the rename fails, Create's
// error matches the errno and says the directory was not synced, and the
// loop is there, as Create's godoc says; Delete's says the same, and the
// loop is gone (its tombstone goes with the next Create).
// Ablation (run): without the "not synced" wording in
// fsys.RenameNoReplace, both errors read as if nothing had happened.
func TestCreateAndDeleteWhoseDirectorySyncFailsSayTheRenameHappened(t *testing.T) {
	r, _ := newTestRoot(t)
	loops := filepath.Join(r.dir, loopsDir)
	failing := true
	seam.Set(t, func(step seam.Point, path string) error {
		if failing && step == seam.SyncDir && path == loops {
			return syscall.EIO
		}
		return nil
	})
	require.NoError(t, os.MkdirAll(loops, 0o755))
	_, err := r.Create(ctx0, "x", nil)
	require.ErrorIs(t, err, syscall.EIO, "Create(x) with the loops directory's fsync failing = %v, want EIO", err)
	require.ErrorContains(t, err, "not synced", "Create(x) error = %v, want it to say the directory was not synced", err)
	x := mustOpen(t, r, "x")
	_, err = x.View(ctx0)
	require.NoError(t, err, "View() of the loop a failed Create created = %v, want nil", err)

	err = x.Delete(ctx0)
	require.ErrorIs(t, err, syscall.EIO, "Delete() with the loops directory's fsync failing = %v, want EIO", err)
	require.ErrorContains(t, err, "not synced", "Delete() error = %v, want it to say the directory was not synced", err)
	_, err = r.Open(ctx0, "x")
	require.ErrorIs(t, err, filetxn.ErrNotFound, "Open(x) after a Delete whose fsync failed = %v, want filetxn.ErrNotFound", err)

	failing = false
	mustCreate(t, r, "y", Template{})
	require.Equal(t, []string{"y"}, loopsEntries(t, r), "loops directory after Create(y) = %v, want y alone", loopsEntries(t, r))
}

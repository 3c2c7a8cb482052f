package ledger

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/filetxn/filetxn"
	"github.com/stretchr/testify/require"
)

// TestReadingAMissingLedgerCreatesNothing: Open, LockPath and
// BmadLoopStateRoot create nothing; View of a missing ledger is an empty
// Doc; Archive of a missing ledger returns without taking the lock. None
// of them makes the ledger's directory, the state root, its locks/
// directory or the lock file. (A Mutate that writes nothing takes a free
// lock, as the engine's MutateProbed does: it needs the lock only when it
// writes.)
// Ablation (run): Archive without its lock-free probe takes the lock,
// which creates the state root, and the test fails.
func TestReadingAMissingLedgerCreatesNothing(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	state := filepath.Join(base, "state")
	t.Setenv("BMAD_LOOP_STATE_DIR", state)
	path := filepath.Join(base, "docs", "deferred-work.md")

	s, err := Open(path)
	require.NoError(t, err, "Open(%s) = %v", path, err)
	_, err = s.LockPath()
	require.NoError(t, err, "LockPath() = %v", err)
	root, err := BmadLoopStateRoot()
	require.True(t, err == nil && root == state, "BmadLoopStateRoot() = %q, %v, want %q", root, err, state)
	d, err := s.View(ctx)
	require.True(t, err == nil && len(d.Entries()) == 0, "View(missing ledger) = %v, %v, want an empty Doc", d, err)
	ids, err := s.Archive(ctx, "", "2026-06-02")
	require.True(t, err == nil && len(ids) == 0, "Archive(missing ledger) = %v, %v, want nothing moved", ids, err)

	ents, err := os.ReadDir(base)
	require.NoError(t, err)
	require.Empty(t, ents, "after reading a missing ledger %s holds %v, want nothing created", base, ents)
}

// TestMutateCreatesTheLedgerButNotItsDirectory: a Mutate that adds to a
// missing ledger whose directory is missing too fails with an error
// matching fs.ErrNotExist and creates no directory: only Append creates
// it, as documented.
// Ablation (run): s.makeDir() at the top of Store.Mutate creates the
// directory and the ledger, and the test fails.
func TestMutateCreatesTheLedgerButNotItsDirectory(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	dir := filepath.Join(base, "docs")
	s := must(Open(filepath.Join(dir, "deferred-work.md"), filetxn.WithLockPath(filepath.Join(base, "dw.lock"))))
	add := func(d *Doc) error {
		_, err := d.Append(Spec{Title: "t", Origin: "o", SourceSpec: "s", Reason: "r"})
		return err
	}
	_, err := s.Mutate(ctx, add)
	require.ErrorIs(t, err, fs.ErrNotExist, "Mutate(append) with %s missing = %v, want fs.ErrNotExist", dir, err)
	_, err = os.Lstat(dir)
	require.ErrorIs(t, err, fs.ErrNotExist, "Mutate(append) made %s: %v, want it left missing", dir, err)
	ids, err := s.Append(ctx, Spec{Title: "t", Origin: "o", SourceSpec: "s", Reason: "r"})
	require.True(t, err == nil && len(ids) == 1, "Append with %s missing = %v, %v, want the directory made and one id", dir, ids, err)
}

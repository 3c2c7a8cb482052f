package seam_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/ledger"
	"github.com/filetxn/filetxn/lock"
	"github.com/filetxn/filetxn/loopstate"
)

// A faultStore is one store's write, set up in a fresh directory.
type faultStore struct {
	name string
	// open makes the store's files in dir, with its locks under state, and
	// returns the data file, its lock file and the write (n numbers the
	// call, so that each one changes the file).
	open func(t *testing.T, dir, state string) (data, lockFile string, write func(n int) error)
}

var faultStores = []faultStore{
	{"ledger append", func(t *testing.T, dir, state string) (string, string, func(int) error) {
		p := filepath.Join(dir, "deferred-work.md")
		require.NoError(t, os.WriteFile(p, []byte("# Deferred Work\n"), 0o644))
		s, err := ledger.Open(p, filetxn.WithStateRoot(state))
		require.NoError(t, err)
		lp, err := s.LockPath()
		require.NoError(t, err)
		return p, lp, func(n int) error {
			_, err := s.Append(context.Background(), ledger.Spec{Title: "T", Origin: fmt.Sprint("o", n), SourceSpec: "s", Reason: "r"})
			return err
		}
	}},
	{"board advance", func(t *testing.T, dir, state string) (string, string, func(int) error) {
		p := filepath.Join(dir, "sprint-status.yaml")
		var b strings.Builder
		b.WriteString("development_status:\n  epic-1: backlog\n")
		for i := range 20 {
			fmt.Fprintf(&b, "  1-%d-s: backlog\n", i)
		}
		require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
		s, err := board.Open(p, filetxn.WithStateRoot(state))
		require.NoError(t, err)
		lp, err := s.LockPath()
		require.NoError(t, err)
		return p, lp, func(n int) error {
			_, err := s.Advance(context.Background(), fmt.Sprintf("1-%d-s", n), board.Done)
			return err
		}
	}},
	{"loop tick", func(t *testing.T, dir, state string) (string, string, func(int) error) {
		root, err := loopstate.NewRoot(dir)
		require.NoError(t, err)
		l, err := root.Create(context.Background(), "t", nil)
		require.NoError(t, err)
		harness := func(context.Context, *loopstate.Run) (loopstate.Result, error) { return loopstate.Result{}, nil }
		return filepath.Join(filepath.Dir(l.LockPath()), ".state.loop"), l.LockPath(), func(int) error {
			_, err := l.Tick(context.Background(), loopstate.TriggerManual, harness)
			return err
		}
	}},
}

// TestInjectedFaultsLoseNothing makes each step of a write fail (creating,
// writing, fsyncing and renaming the temporary file, fsyncing the
// directory, reading the data file, taking the lock, creating the state
// root's lock directory), with ENOSPC and with EIO, under each store's
// write. Each failure is an error that matches the errno and names the data
// file (or, for the lock steps, the lock file); the data file is byte for
// byte what it was (after a failed directory fsync, the new version: the
// rename had happened); no temporary file is left; the lock is free; and
// the next write succeeds.
//
// Ablation: with the deferred pf.Cleanup() of the engine's Tx.write
// removed, a failed write of the temporary file leaves it behind (the
// engine returns before CloseAtomicallyReplace, which cleans up on its own
// failures) and the test fails for every store.
func TestInjectedFaultsLoseNothing(t *testing.T) {
	steps := []seam.Point{seam.Create, seam.Write, seam.Sync, seam.Rename, seam.SyncDir, seam.Read, seam.Lock, seam.Mkdir}
	for _, st := range faultStores {
		for _, step := range steps {
			for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EIO} {
				t.Run(fmt.Sprintf("%s/%s/%s", st.name, step, errno), func(t *testing.T) {
					dir, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
					data, lockFile, write := st.open(t, dir, state)
					if step == seam.Mkdir {
						require.NoError(t, os.RemoveAll(state)) // the state root's lock directory must be made again
					} else {
						require.NoError(t, write(0)) // the lock file exists
					}
					before, err := os.ReadFile(data)
					require.NoError(t, err)
					entries := names(t, filepath.Dir(data))

					hit := 0
					remove := seam.Set(t, func(s seam.Point, path string) error {
						if s != step {
							return nil
						}
						hit++
						return errno
					})
					err = write(1)
					remove()
					if hit == 0 {
						t.Skipf("%s makes no %s step", st.name, step)
					}

					require.Error(t, err, "%s with %s failing = nil, want an error", st.name, step)
					require.ErrorIs(t, err, errno, "%s with %s failing = %v, want it to match %v", st.name, step, err, errno)
					named := data
					if step == seam.Lock || step == seam.Mkdir {
						named = lockFile
					}
					require.Contains(t, err.Error(), filepath.Base(named), "%s with %s failing = %v, want it to name %s", st.name, step, err, named)

					after, rerr := os.ReadFile(data)
					require.NoError(t, rerr)
					if step != seam.SyncDir {
						require.Equal(t, string(before), string(after), "%s after %s failed: the data file changed", st.name, step)
					}
					require.Equal(t, entries, names(t, filepath.Dir(data)), "%s after %s failed: files beside the data", st.name, step)
					h, lerr := lock.TryAcquire(lockFile)
					require.NoError(t, lerr, "%s after %s failed: the lock %s is not free", st.name, step, lockFile)
					h.Release()

					require.NoError(t, write(2), "%s after %s failed: the next write", st.name, step)
				})
			}
		}
	}
}

// names lists dir, lock files aside.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		if !strings.HasSuffix(e.Name(), ".lock") {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

// TestAFileRemovedBetweenTheProbeAndTheLock: a data file that another
// process removes after a write has looked at it and before it takes the
// lock is decided on afresh under the lock: a ledger append starts a new
// ledger with the one entry; a board advance finds no such row (a missing
// board reads as an empty one) and a loop tick no loop, each with its
// sentinel and the file's name; nothing panics and the lock is free after.
func TestAFileRemovedBetweenTheProbeAndTheLock(t *testing.T) {
	for _, st := range faultStores {
		t.Run(st.name, func(t *testing.T) {
			dir, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
			data, lockFile, write := st.open(t, dir, state)
			require.NoError(t, write(0))
			removed := false
			seam.Set(t, func(s seam.Point, path string) error {
				if s == seam.Lock && !removed {
					removed = true
					require.NoError(t, os.Remove(data))
				}
				return nil
			})
			err := write(1)
			require.True(t, removed, "%s took no lock", st.name)
			switch st.name {
			case "ledger append":
				require.NoError(t, err, "%s on a ledger removed before the lock", st.name)
				b, rerr := os.ReadFile(data)
				require.NoError(t, rerr)
				require.Equal(t, 1, strings.Count(string(b), "### DW-"), "%s on a removed ledger: want a new ledger of one entry, got\n%s", st.name, b)
			case "loop tick":
				require.ErrorIs(t, err, filetxn.ErrNotFound, "%s on a removed state = %v", st.name, err)
			default:
				require.ErrorIs(t, err, filetxn.ErrNotFound, "%s on a removed board = %v", st.name, err)
				require.Contains(t, err.Error(), filepath.Base(data))
			}
			h, lerr := lock.TryAcquire(lockFile)
			require.NoError(t, lerr, "%s: the lock %s is not free", st.name, lockFile)
			h.Release()
		})
	}
}

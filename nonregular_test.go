package filetxn

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/internal/testkit"
)

// TestEntryPointsRefuseNonRegularFiles puts a named pipe nobody writes to, a
// directory, a unix socket and a device at the data path (those this system
// can make): every entry point that reads it returns at once an
// *fs.PathError naming the path and wrapping atomicfile.ErrNotRegular, and
// the file is left as it was (the same kind of file, not replaced). fn is
// never called. Ablation: reading with a blocking open (fsys without
// O_NONBLOCK) hangs every entry point on the pipe, and the guard fails the
// test; dropping fsys's fstat check has the pipe and the device read as
// empty files, so Mutate writes over them. Tx.Append, with fsys's
// Append opening by os.OpenFile as it did, hangs on the pipe waiting for a
// reader and writes its record to the device.
func TestEntryPointsRefuseNonRegularFiles(t *testing.T) {
	ctx := context.Background()
	set := func(d *counter) error { d.n = 7; return nil }
	calls := map[string]func(s *Store[*counter]) error{
		"Mutate":       func(s *Store[*counter]) error { _, err := s.Mutate(ctx, set); return err },
		"MutateProbed": func(s *Store[*counter]) error { _, err := s.MutateProbed(ctx, set); return err },
		"View":         func(s *Store[*counter]) error { _, err := s.View(ctx); return err },
		"Restore":      func(s *Store[*counter]) error { _, err := s.Restore(ctx, []byte("7\n"), digestOf(nil)); return err },
		"Tx.Read": func(s *Store[*counter]) error {
			return s.Locked(ctx, func(tx *Tx) error { _, err := tx.Read(s.path); return err })
		},
		"Tx.Append": func(s *Store[*counter]) error {
			return s.Locked(ctx, func(tx *Tx) error { return tx.Append(s.path, []byte("7\n")) })
		},
	}
	for kind, path := range testkit.Make(t) {
		before, err := os.Lstat(path)
		require.NoError(t, err)
		for name, call := range calls {
			t.Run(kind+"/"+name, func(t *testing.T) {
				s := must(NewStore[*counter](path, counterCodec{}))
				err := testkit.Within(t, func() error { return call(s) })
				var pe *fs.PathError
				require.ErrorIs(t, err, atomicfile.ErrNotRegular, "%s(%s) = %v, want an error wrapping atomicfile.ErrNotRegular", name, kind, err)
				require.True(t, errors.As(err, &pe) && pe.Path == path, "%s(%s) = %v, want an *fs.PathError naming %s", name, kind, err, path)
				after, err := os.Lstat(path)
				require.True(t, err == nil && after.Mode().Type() == before.Mode().Type() && os.SameFile(before, after),
					"%s(%s) left %v, %v at the path, want the %s untouched", name, kind, after, err, kind)
			})
		}
	}
}

// TestLockFileThatIsNotRegularIsRefused puts a named pipe, a directory, a
// unix socket and a device at the lock file's path: every call that locks
// returns at once an *fs.PathError naming the lock file and wrapping
// atomicfile.ErrNotRegular, fn never runs and the data file is not
// created; a MutateProbed whose fn changes nothing still succeeds on its
// probe, as it does wherever the lock cannot be taken. Ablation: package
// lock opening its file with os.OpenFile, as before, has Mutate lock the
// pipe and the device and write the data file (and the holder record into
// the device), and fail on the directory and the socket with a bare EISDIR
// or ENXIO.
func TestLockFileThatIsNotRegularIsRefused(t *testing.T) {
	ctx := context.Background()
	for kind, lockPath := range testkit.Make(t) {
		t.Run(kind, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "data")
			s := must(NewStore[*counter](path, counterCodec{}, WithLockPath(lockPath)))
			ran := false
			set := func(d *counter) error { ran = true; d.n = 7; return nil }
			calls := map[string]func() error{
				"Mutate":       func() error { _, err := s.Mutate(ctx, set); return err },
				"MutateProbed": func() error { _, err := s.MutateProbed(ctx, set); return err },
				"Restore":      func() error { _, err := s.Restore(ctx, []byte("7\n"), digestOf(nil)); return err },
				"Locked":       func() error { return s.Locked(ctx, func(*Tx) error { ran = true; return nil }) },
			}
			for name, call := range calls {
				ran = false
				err := testkit.Within(t, call)
				require.ErrorIs(t, err, atomicfile.ErrNotRegular, "%s(lock file: %s) = %v, want an error wrapping atomicfile.ErrNotRegular", name, kind, err)
				var pe *fs.PathError
				require.True(t, errors.As(err, &pe) && pe.Path == lockPath, "%s(lock file: %s) = %v, want an *fs.PathError naming %s", name, kind, err, lockPath)
				require.False(t, ran && name != "MutateProbed", "%s(lock file: %s) ran its callback without the lock", name, kind)
				_, err = os.Lstat(path)
				require.ErrorIs(t, err, fs.ErrNotExist, "%s(lock file: %s): Lstat(data) = %v, want the data file not created", name, kind, err)
			}
			c, err := testkit.Within(t, func() commitResult {
				c, err := s.MutateProbed(ctx, func(*counter) error { return nil })
				return commitResult{c, err}
			}).get()
			require.NoError(t, err, "MutateProbed(lock file: %s, fn that changes nothing) = %v, want nil from its probe", kind, err)
			require.False(t, c.Written, "MutateProbed(lock file: %s, fn that changes nothing) wrote", kind)
		})
	}
}

type commitResult struct {
	c   Commit
	err error
}

func (r commitResult) get() (Commit, error) { return r.c, r.err }

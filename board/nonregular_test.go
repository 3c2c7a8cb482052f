package board

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/internal/testkit"
)

// TestStoreRefusesNonRegularFiles puts a named pipe nobody writes to, a
// directory, a unix socket and a device (those this system can make) at the
// board's path: Advance, Mutate, View and Status return at once an
// *fs.PathError naming the path and wrapping atomicfile.ErrNotRegular, and
// leave it as it was. Before, a pipe hung "board show" and "board advance"
// forever. Ablation: fsys opening without O_NONBLOCK hangs the pipe cases
// (the guard fails the test); without its fstat check every case goes red
// (the pipe and the device read as an empty file, which is refused as "no
// YAML document", the directory gives EISDIR, the socket ENXIO).
func TestStoreRefusesNonRegularFiles(t *testing.T) {
	ctx := context.Background()
	ops := map[string]func(s *Store) error{
		"Advance": func(s *Store) error { _, err := s.Advance(ctx, "1-1-a", "done"); return err },
		"Mutate":  func(s *Store) error { _, err := s.Mutate(ctx, func(*Doc) error { return nil }); return err },
		"View":    func(s *Store) error { _, err := s.View(ctx); return err },
		"Status":  func(s *Store) error { _, _, err := storeStatus(ctx, s, "1-1-a"); return err },
	}
	for kind, path := range testkit.Make(t) {
		before, err := os.Lstat(path)
		require.NoError(t, err)
		for name, op := range ops {
			t.Run(kind+"/"+name, func(t *testing.T) {
				s, err := Open(path, filetxn.WithLockPath(filepath.Join(t.TempDir(), "l.lock")))
				require.NoError(t, err)
				err = testkit.Within(t, func() error { return op(s) })
				var pe *fs.PathError
				require.ErrorIs(t, err, atomicfile.ErrNotRegular, "%s(%s) = %v, want an error wrapping atomicfile.ErrNotRegular", name, kind, err)
				require.True(t, errors.As(err, &pe) && pe.Path == path, "%s(%s) = %v, want an *fs.PathError naming %s", name, kind, err, path)
				after, err := os.Lstat(path)
				require.True(t, err == nil && os.SameFile(before, after), "%s(%s) left %v, %v, want it untouched", name, kind, after, err)
			})
		}
	}
}

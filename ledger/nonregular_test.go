package ledger

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/filetxn/filetxn"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/internal/testkit"
)

// TestStoreRefusesNonRegularFiles puts a named pipe nobody writes to, a
// directory, a unix socket and a device (those this system can make) at the
// ledger's path, and separately at the archive's: every operation that reads
// it returns at once an *fs.PathError naming that path and wrapping
// atomicfile.ErrNotRegular, and leaves it as it was. Before, a pipe hung
// every command forever. Ablation: fsys opening without O_NONBLOCK hangs
// the pipe cases (the guard fails the test); without its fstat check the
// pipe and the device read as an empty ledger and View, Mutate (a close) and
// Archive go red (an Append, and the archive's write, are still refused by
// atomicfile's own check of the target before it stages).
func TestStoreRefusesNonRegularFiles(t *testing.T) {
	ctx := context.Background()
	ops := map[string]func(s *Store) error{
		"Append": func(s *Store) error {
			_, err := s.Append(ctx, Spec{Title: "t", Origin: "o", SourceSpec: "s", Reason: "r"})
			return err
		},
		"Mutate": func(s *Store) error {
			_, err := s.Mutate(ctx, func(d *Doc) error { _, err := d.MarkDone([]string{"DW-1"}, "2026-06-01", "n"); return err })
			return err
		},
		"View":    func(s *Store) error { _, err := s.View(ctx); return err },
		"Archive": func(s *Store) error { _, err := s.Archive(ctx, "", "2026-06-02"); return err },
	}
	const closed = "# Deferred Work\n\n### DW-1: t\norigin: o\nlocation: n/a\nsource_spec: `s`\nreason: r\nstatus: done 2026-06-01\n"
	for kind, odd := range testkit.Make(t) {
		for _, at := range []string{"ledger", "archive"} {
			path := odd
			if at == "archive" {
				if kind == "socket" {
					continue // a listening socket cannot be renamed on every system
				}
				// The ledger is a regular file with a closed entry; the odd
				// file moves to the archive's path beside it.
				path = filepath.Join(filepath.Dir(odd), archiveName)
				require.NoError(t, os.Rename(odd, path))
				require.NoError(t, os.WriteFile(odd, []byte(closed), 0o644))
			}
			before, err := os.Lstat(path)
			require.NoError(t, err)
			for name, op := range ops {
				if at == "archive" && name != "Archive" {
					continue
				}
				t.Run(kind+"/"+at+"/"+name, func(t *testing.T) {
					s := must(Open(odd, filetxn.WithLockPath(filepath.Join(t.TempDir(), "l.lock"))))
					err := testkit.Within(t, func() error { return op(s) })
					var pe *fs.PathError
					require.ErrorIs(t, err, atomicfile.ErrNotRegular, "%s(%s at the %s) = %v, want an error wrapping atomicfile.ErrNotRegular", name, kind, at, err)
					require.True(t, errors.As(err, &pe) && pe.Path == path, "%s(%s at the %s) = %v, want an *fs.PathError naming %s", name, kind, at, err, path)
					after, err := os.Lstat(path)
					require.True(t, err == nil && os.SameFile(before, after), "%s(%s at the %s) left %v, %v, want it untouched", name, kind, at, after, err)
				})
			}
		}
	}
}

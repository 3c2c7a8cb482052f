package filetxn

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/internal/seam"
)

// TestAppendThatCreatesItsLogSyncsTheDirectory: a durable Tx.Append that
// creates its log fsyncs the log's directory after the log, as its godoc
// says, so that a power loss cannot take away the new log with the record
// Append acknowledged; appending to the log it made syncs no directory, and
// neither atomicfile.WithoutDirSync nor a WithoutSync store syncs one.
// Ablation (run): fsys.Append without its directory fsync after a
// creation syncs no directory for the new log.
func TestAppendThatCreatesItsLogSyncsTheDirectory(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store []Option
		opts  []atomicfile.Option
		want  []int // directory fsyncs of the first Append and of the second
	}{
		{"durable", nil, nil, []int{1, 0}},
		{"WithoutDirSync", nil, []atomicfile.Option{atomicfile.WithoutDirSync()}, []int{0, 0}},
		{"WithoutSync store", []Option{WithoutSync()}, nil, []int{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newCounter(t, tc.store...)
			dir := filepath.Join(filepath.Dir(s.path), "logs")
			require.NoError(t, os.Mkdir(dir, 0o755))
			log := filepath.Join(dir, "ticks.jsonl")
			synced := 0
			seam.Set(t, func(step seam.Point, path string) error {
				if step == seam.SyncDir && path == dir {
					synced++
				}
				return nil
			})
			var got []int
			for _, rec := range []string{"one\n", "two\n"} {
				synced = 0
				err := s.Locked(context.Background(), func(tx *Tx) error { return tx.Append(log, []byte(rec), tc.opts...) })
				require.NoError(t, err, "Tx.Append(%q) = %v, want nil", log, err)
				got = append(got, synced)
			}
			require.Equal(t, tc.want, got, "directory fsyncs of Tx.Append(new log), Tx.Append(existing log) = %v, want %v", got, tc.want)
		})
	}
}

// TestRestoreRemovalWhoseDirectorySyncFailsReportsIt: a Restore(nil) whose
// removal happened but whose directory fsync failed reports the removal in
// its Commit, as Tx.Write reports a write whose directory fsync failed, with
// an error that matches the errno, names the data file and says the
// directory was not synced; the file is gone.
// Ablation (run): Restore setting Written only on a nil error reports
// nothing written for a file it removed.
func TestRestoreRemovalWhoseDirectorySyncFailsReportsIt(t *testing.T) {
	s := newCounter(t)
	c, err := s.Mutate(context.Background(), func(d *counter) error { d.n = 1; return nil })
	require.NoError(t, err)
	owned, ok := c.Digest()
	require.True(t, ok, "Commit.Digest() of a write = _, false, want true")
	dir := filepath.Dir(s.path)
	seam.Set(t, func(step seam.Point, path string) error {
		if step == seam.SyncDir && path == dir {
			return syscall.EIO
		}
		return nil
	})
	c, err = s.Restore(context.Background(), nil, owned)
	require.ErrorIs(t, err, syscall.EIO, "Restore(nil) with the directory fsync failing = %v, want EIO", err)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, s.path, pe.Path, "Restore(nil) error's Path = %q, want %q", pe.Path, s.path)
	require.Contains(t, err.Error(), "not synced", "Restore(nil) error = %v, want it to say the directory was not synced", err)
	require.True(t, c.Written, "Restore(nil) Commit.Written = false, want true: the file was removed")
	_, serr := os.Lstat(s.path)
	require.ErrorIs(t, serr, fs.ErrNotExist, "Lstat(%q) after Restore(nil) = %v, want fs.ErrNotExist", s.path, serr)
}

package filetxn

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/internal/fault"
)

// TestAppendThatCreatesItsLogSyncsTheDirectory: a durable Tx.Append that
// creates its log fsyncs the log's directory after the log, as its godoc
// says, so that a power loss cannot take away the new log with the record
// Append acknowledged; appending to the log it made syncs no directory, and
// neither atomicfile.WithoutDirSync nor a WithoutSync store syncs one.
// Ablation (run): Tx.Append through atomicfile.AppendFile (no SyncCreated)
// syncs no directory for the new log.
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
			fault.Set(t, func(step fault.Step, path string) error {
				if step == fault.SyncDir && path == dir {
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

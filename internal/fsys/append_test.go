package fsys

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/seam"
)

// recordSteps sets a seam hook that records every file-system step, as
// "step path", and fails the steps fail names with its error.
func recordSteps(t *testing.T, fail map[seam.Point]error) *[]string {
	t.Helper()
	var steps []string
	seam.Set(t, func(step seam.Point, path string) error {
		if !step.Fails() {
			return nil
		}
		steps = append(steps, fmt.Sprintf("%s %s", step, path))
		return fail[step]
	})
	return &steps
}

// TestAppendThatCreatesTheLogSyncsItsDirectory: an Append that creates its
// log fsyncs the file and then its directory, so that a power loss cannot
// take away the new log and the record it acknowledged; one that appends to
// an existing log fsyncs only the file; NoDirSync leaves the directory alone,
// and NoSync fsyncs nothing.
// Ablation (run): without the directory fsync after a creation, the first
// case records only the file's fsync.
func TestAppendThatCreatesTheLogSyncsItsDirectory(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "ticks.jsonl")

	steps := recordSteps(t, nil)
	require.NoError(t, Append("AppendFile", log, []byte("a\n"), 0o644, Options{}))
	require.Equal(t, []string{"sync " + log, "syncdir " + dir}, *steps,
		"Append(new log) steps = %v, want the file's fsync, then the directory's", *steps)

	*steps = nil
	require.NoError(t, Append("AppendFile", log, []byte("b\n"), 0o644, Options{}))
	require.Equal(t, []string{"sync " + log}, *steps,
		"Append(existing log) steps = %v, want the file's fsync alone", *steps)

	for i, tc := range []struct {
		name  string
		o     Options
		steps []string
	}{
		{"NoSync", Options{NoSync: true}, nil},
		{"NoDirSync", Options{NoDirSync: true}, []string{"sync "}},
	} {
		other := filepath.Join(dir, fmt.Sprint("other", i))
		*steps = nil
		require.NoError(t, Append("AppendFile", other, []byte("a\n"), 0o644, tc.o))
		var want []string
		for _, s := range tc.steps {
			want = append(want, s+other)
		}
		require.Equal(t, want, *steps, "Append(new log, %s) steps = %v, want %v", tc.name, *steps, want)
	}
}

// TestAppendWhoseDirectorySyncFailsSaysTheRecordIsThere: when only the
// directory fsync after creating the log fails, Append's error matches the
// errno and names the log, and the record is in the log.
func TestAppendWhoseDirectorySyncFailsSaysTheRecordIsThere(t *testing.T) {
	log := filepath.Join(t.TempDir(), "ticks.jsonl")
	recordSteps(t, map[seam.Point]error{seam.SyncDir: syscall.EIO})
	err := Append("AppendFile", log, []byte("a\n"), 0o644, Options{})
	require.ErrorIs(t, err, syscall.EIO, "Append(new log, directory fsync failing) = %v, want EIO", err)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, log, pe.Path, "Append error's Path = %q, want %q", pe.Path, log)
	data, rerr := os.ReadFile(log)
	require.NoError(t, rerr)
	require.Equal(t, "a\n", string(data), "log after a failed directory fsync = %q, want %q", data, "a\n")
}

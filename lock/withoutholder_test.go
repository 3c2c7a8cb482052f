package lock_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/lock"
)

// TestWithoutHolderDoesNotWriteTheLockFile: WithoutHolder's godoc says the
// lock file is not written. A lock file holding another program's record
// keeps it, byte for byte, while the lock is held WithoutHolder and after
// its Release (which clears only a record it wrote). Ablation: granted
// writing the record whatever o.NoHolder says makes ReadHolder name this
// process while held, and the file cleared after.
func TestWithoutHolderDoesNotWriteTheLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	const content = "\n" + `{"pid":1,"program":"other","acquired":"2020-01-01T00:00:00Z"}` + "\n"
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	h := mustAcquire(t, path, lock.WithoutHolder())
	rec, err := lock.ReadHolder(path)
	require.True(t, err == nil && rec != nil && rec.PID == 1 && rec.Program == "other",
		"ReadHolder(held WithoutHolder) = %+v, %v, want the record that was there (pid 1, program other)", rec, err)
	require.NoError(t, h.Release(), "Release()")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, content, string(got), "lock file after Acquire(WithoutHolder) and Release = %q, want %q as before", got, content)
}

package harness

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/filetxn/filetxn/loopstate"
	"github.com/stretchr/testify/require"
)

// TestAWorkingDirectoryThatIsNoDirectoryIsNamed: a Command whose Dir is
// missing, or is a file, cannot start its child; Run's error names the
// directory (a missing one matches fs.ErrNotExist), not the program, which
// is there. The error is the tick's note, where an operator reads it.
// Ablation (run): without Run's check of the directory the error is
// "fork/exec <program>: no such file or directory" (Linux), which blames
// the program and names no directory.
func TestAWorkingDirectoryThatIsNoDirectoryIsNamed(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	base := t.TempDir()
	file := filepath.Join(base, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for name, dir := range map[string]string{"missing": filepath.Join(base, "missing"), "a file": file} {
		_, err := (&Command{Path: exe, Args: []string{"-test.run=^$"}, Dir: dir}).Run(context.Background(), &loopstate.Run{})
		require.ErrorContains(t, err, dir, "Command{Dir: %s}.Run = %v, want an error naming the directory", name, err)
		if name == "missing" {
			require.ErrorIs(t, err, fs.ErrNotExist, "Command{Dir: %s}.Run = %v, want fs.ErrNotExist", name, err)
		}
	}
}

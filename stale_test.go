package filetxn_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/atomicfile"
)

// abandon stages a replacement of target with atomicfile and leaves its
// temporary file behind, as a writer SIGKILLed between its staging and its
// rename does; it returns the temporary file's name.
func abandon(t *testing.T, target string) string {
	t.Helper()
	pf, err := atomicfile.Create(target, 0o644)
	require.NoError(t, err, "atomicfile.Create(%q)", target)
	tmp := pf.TempPath()
	// What a killed writer leaves is the file without its descriptor: the
	// same name is made again after Cleanup, so no descriptor stays open
	// (Windows could not remove the file while one did).
	require.NoError(t, pf.Cleanup())
	require.NoError(t, os.WriteFile(tmp, []byte("a version that was never published"), 0o644))
	return filepath.Base(tmp)
}

// TestWriteRemovesADeadWritersTemporaryFiles: the next write of a file,
// under its lock, removes the temporary files that killed writers of that
// file left, and touches nothing else in the directory: not another file's
// temporary file, not a name outside atomicfile's naming. Ablation: without
// the staletemp.Remove call in Tx.Write, both stale files stay and the test
// fails.
func TestWriteRemovesADeadWritersTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.txt")
	require.NoError(t, os.WriteFile(path, []byte("1\n"), 0o644))
	other := filepath.Join(dir, "other.txt")
	stale1, stale2 := abandon(t, path), abandon(t, path)
	othersTemp := abandon(t, other) // other.txt's writer may be alive: its lock is not ours
	for _, n := range []string{".state.txt.swp", ".state.txt~", "state.txt.bak"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("keep"), 0o644))
	}

	s, err := filetxn.NewStore(path, countCodec{}, filetxn.WithStateRoot(t.TempDir()))
	require.NoError(t, err)
	_, err = s.Mutate(context.Background(), func(n *int) error { *n++; return nil })
	require.NoError(t, err, "Mutate(%s)", path)

	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var got []string
	for _, e := range es {
		got = append(got, e.Name())
	}
	want := []string{".state.txt.swp", ".state.txt~", othersTemp, "state.txt", "state.txt.bak"}
	sort.Strings(want)
	require.Equal(t, want, got, "directory after Mutate(%s) with stale %s and %s", path, stale1, stale2)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "2\n", string(data), "%s after Mutate", path)
}

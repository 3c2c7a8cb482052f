//go:build unix

package fsys

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKeyIsTheLockFilesIdentity: every spelling of one lock file (through
// a symbolic link, a "..", a hard link) gives one key, and another file
// renamed over the path gives another, as does a recreated one: the names
// belong to the file a writer locked, not to its path. A missing file has
// no key. Ablation: keying by the path (filepath.Abs) gives the replaced
// file the old key, and the test fails.
func TestKeyIsTheLockFilesIdentity(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	require.NoError(t, os.WriteFile(p, nil, 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.Symlink(p, filepath.Join(dir, "link.lock")))
	require.NoError(t, os.Link(p, filepath.Join(dir, "hard.lock")))
	key, ok := Key(p)
	require.True(t, ok, "Key(%s)", p)
	for _, q := range []string{filepath.Join(dir, "link.lock"), filepath.Join(dir, "sub", "..", "x.lock"), filepath.Join(dir, "hard.lock")} {
		got, ok := Key(q)
		require.True(t, ok && got == key, "Key(%s) = %q, %v, want %q (the same file as %s)", q, got, ok, key, p)
	}

	other := filepath.Join(dir, "other")
	require.NoError(t, os.WriteFile(other, nil, 0o600))
	require.NoError(t, os.Rename(other, p))
	got, ok := Key(p)
	require.True(t, ok, "Key(%s) after a rename over it", p)
	require.NotEqual(t, key, got, "Key(%s) of the file renamed over the locked one", p)

	missing := filepath.Join(dir, "missing.lock")
	got, ok = Key(missing)
	require.False(t, ok, "Key(%s) = %q, true, want false", missing, got)
}

//go:build unix

package filetxn

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRestoreOfAMissingFileRemovesTheFileALinkNames: a data path that is a
// symbolic link is written through, to the file the link names (atomicfile
// follows links, and keeps them), so Restore(nil), which "removes the file",
// removes that file and keeps the link, as a write keeps it: afterwards a
// View through the link finds no file, and so does any reader of the file
// itself, and the next write recreates the file at the link's target.
// Ablation: removing the path itself, as Restore did, removes the link and
// leaves the file with the bytes Restore was to take away, for every reader
// that opens it by its own name; the next write then makes a regular file
// at the link's place.
func TestRestoreOfAMissingFileRemovesTheFileALinkNames(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	target := filepath.Join(dir, "real", "count.txt")
	require.NoError(t, os.Mkdir(filepath.Dir(target), 0o755))
	link := filepath.Join(dir, "count.txt")
	require.NoError(t, os.Symlink(filepath.Join("real", "count.txt"), link))
	s := must(NewStore[*counter](link, counterCodec{}))
	c, err := s.Mutate(ctx, func(d *counter) error { d.n = 7; return nil })
	require.NoError(t, err, "Mutate(n = 7)")
	d, ok := c.Digest()
	require.True(t, ok, "Mutate(n = 7).Digest() reports no digest")

	c, err = s.Restore(ctx, nil, d)
	require.True(t, err == nil && c.Written, "Restore(nil, own digest) = %+v, %v, want the file removed", c, err)
	_, err = os.Lstat(target)
	require.ErrorIs(t, err, fs.ErrNotExist, "Restore(nil) through a link: Lstat(the file it names) = %v, want it removed", err)
	fi, err := os.Lstat(link)
	require.True(t, err == nil && fi.Mode()&fs.ModeSymlink != 0, "Restore(nil) through a link: Lstat(link) = %v, %v, want the link kept", fi, err)

	_, err = s.Mutate(ctx, func(d *counter) error { d.n = 8; return nil })
	require.NoError(t, err, "Mutate(n = 8) after Restore(nil)")
	got, err := os.ReadFile(target)
	require.True(t, err == nil && string(got) == "8\n", "after Restore(nil) and Mutate(n = 8), the file the link names holds %q, %v, want %q", got, err, "8\n")
}

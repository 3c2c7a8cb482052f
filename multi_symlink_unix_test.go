//go:build unix

package filetxn_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
)

// TestMutateAllRefusesTwoMembersThatAreOneFileThroughALink: two members
// whose paths differ but name one file (one path a symbolic link to the
// other) and whose fn changes both fail with ErrInvalidArgument, naming
// both, and write nothing: renamed one after the other, the second would
// silently replace the first's change, and both would be reported Written.
//
// Ablation seen red (the bug this test found): publish without its check
// of the members' targets (no error; the file holds the second member's
// version only).
func TestMutateAllRefusesTwoMembersThatAreOneFileThroughALink(t *testing.T) {
	dir := t.TempDir()
	a, b := twoStores(t, dir, false)
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink("a.json", link))
	l := must(filetxn.NewStore[*counter](link, filetxn.JSON[counter]()))
	before, err := os.ReadFile(filepath.Join(dir, "a.json"))
	require.NoError(t, err)
	cs, err := filetxn.MutateAll(context.Background(), []filetxn.Member{a, b, l}, func(m *filetxn.Multi) error {
		filetxn.In(m, a).N++
		filetxn.In(m, b).N++
		filetxn.In(m, l).N += 10
		return nil
	})
	require.ErrorIs(t, err, filetxn.ErrInvalidArgument, "MutateAll of a file and a link to it = %v (Commits %v), want ErrInvalidArgument", err, cs)
	require.ErrorContains(t, err, link)
	require.Nil(t, cs)
	after, err := os.ReadFile(filepath.Join(dir, "a.json"))
	require.NoError(t, err)
	require.Equal(t, string(before), string(after))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 6, "a.json, b.json, link.json and their locks")
}

package filetxn_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
)

type counter struct{ N int }

// TestMutateAllPublishesEveryChangedFileAndLeavesNothingBehind runs a
// two-file commit and looks at the directory: both files new, no staged
// file and no intent record left.
func TestMutateAllPublishesEveryChangedFileAndLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	a, err := filetxn.NewStore[*counter](filepath.Join(dir, "a.json"), filetxn.JSON[counter]())
	require.NoError(t, err)
	b, err := filetxn.NewStore[*counter](filepath.Join(dir, "b.json"), filetxn.JSON[counter]())
	require.NoError(t, err)
	for i := 1; i <= 3; i++ {
		cs, err := filetxn.MutateAll(context.Background(), []filetxn.Member{a, b}, func(m *filetxn.Multi) error {
			filetxn.In(m, a).N++
			filetxn.In(m, b).N += 10
			return nil
		})
		require.NoError(t, err)
		require.Len(t, cs, 2)
		require.True(t, cs[0].Written)
		require.True(t, cs[1].Written)
	}
	da, _ := a.View(context.Background())
	db, _ := b.View(context.Background())
	require.Equal(t, 3, da.N)
	require.Equal(t, 30, db.N)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{"a.json", "b.json", "a.json.lock", "b.json.lock"}, names)
}

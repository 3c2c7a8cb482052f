package filetxn_test

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/seam"
)

// TestAFailedDetachLeavesNoStagedFile fails the close of each staged file
// as the commit detaches it, after the commit point and before the
// renames (for the second file and later, once the files before it are
// detached), in each layout: MutateAll fails with the error, naming the
// file, publishes nothing, and leaves no staged file and no intent record
// at once, before any other transaction (the undo removed the records, so
// no recovery would ever find a staged file left); then every file takes
// writes again.
//
// Ablation seen red: publish's undo calling Cleanup on every staged file
// until all are detached (a no-op on the ones already detached) leaves
// the first file's staged version behind when the second's close fails.
func TestAFailedDetachLeavesNoStagedFile(t *testing.T) {
	for _, lay := range multiLayouts {
		for k := range lay.files {
			t.Run(fmt.Sprintf("%s/file %d", lay.name, k), func(t *testing.T) {
				f := lay.make(t)
				want := f.values(t)
				s := step{seam.Close, f.rel(f.paths[k]), 1}
				hit, remove := f.fail(t, s, syscall.EIO)
				cs, err := f.commit(1)
				remove()
				require.True(t, hit(), "%v was not reached", s)
				require.ErrorIs(t, err, syscall.EIO, "MutateAll with %v failing = %v, want it to match EIO", s, err)
				require.Contains(t, err.Error(), filepath.Base(f.paths[k]), "MutateAll with %v failing = %v, want it to name the file", s, err)
				require.Nil(t, cs, "MutateAll with %v failing: Commits %v, want none", s, cs)
				require.Equal(t, want, f.values(t), "the files after %v failed", s)
				require.Empty(t, f.leftovers(t), "left behind by MutateAll with %v failing", s)
				f.writable(t, want, fmt.Sprintf("after %v failed", s))
			})
		}
	}
}

package loopstate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/stretchr/testify/require"
)

// TestADanglingLinkAtTheStateIsNoLoop: a symbolic link at .state.loop whose
// target is gone is no state file. View, Open and every change say the loop
// is not there (filetxn.ErrNotFound), and so do Ticks, which is documented
// to answer as View does, and List, which lists only the directories that
// hold a state file. A link to a state file is still a loop for all of them.
// Ablation (run): os.Lstat for os.Stat in Ticks gives the log (nil error),
// and in List lists the loop that Open then says is not there.
func TestADanglingLinkAtTheStateIsNoLoop(t *testing.T) {
	testkit.Skip(t, testkit.NoSymlinks)
	r, _ := newTestRoot(t)
	linked := mustCreate(t, r, "linked", Template{})
	dangling := mustCreate(t, r, "dangling", Template{})
	target := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.Rename(linked.state, target))
	if err := os.Symlink(target, linked.state); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	require.NoError(t, os.Remove(dangling.state))
	require.NoError(t, os.Symlink(filepath.Join(t.TempDir(), "missing"), dangling.state))

	_, err := r.Open(ctx0, "dangling")
	require.ErrorIs(t, err, filetxn.ErrNotFound, "Open(dangling) = %v, want filetxn.ErrNotFound", err)
	_, err = dangling.View(ctx0)
	require.ErrorIs(t, err, filetxn.ErrNotFound, "View(dangling) = %v, want filetxn.ErrNotFound", err)
	recs, err := dangling.Ticks(ctx0)
	require.ErrorIs(t, err, filetxn.ErrNotFound, "Ticks(dangling) = %v, %v, want filetxn.ErrNotFound, as View", recs, err)
	require.ErrorContains(t, err, dangling.state, "Ticks(dangling) = %v, want it to name %s", err, dangling.state)

	ls, err := r.List(ctx0)
	require.NoError(t, err, "List() = %v", err)
	var names []string
	for _, l := range ls {
		names = append(names, l.Name())
	}
	require.Equal(t, []string{"linked"}, names, "List() = %v, want the loop whose state is a link to a file, not the dangling one", names)
	_, err = linked.Ticks(ctx0)
	require.NoError(t, err, "Ticks(linked) = %v, want its log", err)
	_, err = linked.View(ctx0)
	require.NoError(t, err, "View(linked) = %v, want its state", err)
}

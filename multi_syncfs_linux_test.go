package filetxn_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/fsys"
	"github.com/filetxn/filetxn/internal/seam"
)

// TestACommitFlushesEachFileSystemOnce commits two files on two file
// systems (the test's temporary directory and /dev/shm's tmpfs): the
// commit flushes each of them once with syncfs at its commit point, through
// the copy of the intent record on it, and once after the renames, through
// the directory of its file, and fsyncs nothing.
//
// Ablation seen red: flushTasks putting every item in one group (one
// syncfs of the first file system at each step: the second's data and
// renames would not be durable).
func TestACommitFlushesEachFileSystemOnce(t *testing.T) {
	dirA := t.TempDir()
	devA, okA := fsys.FileSystem(dirA, nil)
	devB, okB := fsys.FileSystem("/dev/shm", nil)
	if !okA || !okB || devA == devB {
		t.Skip("needs two file systems that syncfs serves: the temporary directory's and /dev/shm's")
	}
	dirB, err := os.MkdirTemp("/dev/shm", "filetxn-syncfs-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dirB) })
	a := must(filetxn.NewStore[*counter](filepath.Join(dirA, "a.json"), filetxn.JSON[counter]()))
	b := must(filetxn.NewStore[*counter](filepath.Join(dirB, "b.json"), filetxn.JSON[counter]()))
	commit := func() {
		t.Helper()
		_, err := filetxn.MutateAll(context.Background(), []filetxn.Member{a, b}, func(m *filetxn.Multi) error {
			filetxn.In(m, a).N++
			filetxn.In(m, b).N++
			return nil
		})
		require.NoError(t, err)
	}
	commit() // the lock files exist from now on

	var mu sync.Mutex // protects flushed, fsynced
	var flushed, fsynced []string
	seam.Set(t, func(p seam.Point, path string) error {
		mu.Lock()
		defer mu.Unlock()
		switch p {
		case seam.SyncFS:
			flushed = append(flushed, path)
		case seam.Sync, seam.SyncDir:
			fsynced = append(fsynced, path)
		}
		return nil
	})
	commit()
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(flushed)
	want := []string{dirA, filepath.Join(dirA, "a.json.lock.intent"), dirB, filepath.Join(dirB, "b.json.lock.intent")}
	slices.Sort(want)
	require.Equal(t, want, flushed, "the syncfs of a commit over two file systems")
	require.Empty(t, fsynced, "a commit flushed with syncfs fsyncs")
}

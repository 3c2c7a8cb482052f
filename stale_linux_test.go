package filetxn_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/filetxn/filetxn"
)

// dirReads watches dir with inotify and returns a function that reports
// how many times its entries have been read (IN_ACCESS on the directory
// itself, which getdents(2) raises: opening it to fsync it does not) since
// the watch began.
func dirReads(t *testing.T, dir string) func() int {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Skipf("no inotify here: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	_, err = unix.InotifyAddWatch(fd, dir, unix.IN_ACCESS)
	require.NoError(t, err, "inotify_add_watch(%s)", dir)
	reads := 0
	return func() int {
		buf := make([]byte, 64<<10)
		for {
			n, err := unix.Read(fd, buf)
			if errors.Is(err, unix.EAGAIN) {
				return reads
			}
			require.NoError(t, err, "reading inotify events")
			for b := buf[:n]; len(b) >= unix.SizeofInotifyEvent; {
				mask := binary.NativeEndian.Uint32(b[4:8])
				nameLen := int(binary.NativeEndian.Uint32(b[12:16]))
				if mask&unix.IN_ACCESS != 0 && nameLen == 0 { // the directory itself, not an entry of it
					reads++
				}
				b = b[unix.SizeofInotifyEvent+nameLen:]
			}
		}
	}
}

// TestWriteReadsNoDirectory: a durable Mutate of a file in a directory of
// a thousand other files, with a dead writer's temporary file beside it,
// removes that file and never reads the directory: its cost does not grow
// with what the directory holds. The watch must see a plain os.ReadDir,
// or the test cannot tell. Ablation: an os.ReadDir of the directory in
// fsys's stageLocked (the sweep before this version read it with
// getdents(2) after every write) is seen, and the test fails.
func TestWriteReadsNoDirectory(t *testing.T) {
	dir := t.TempDir()
	for i := range 1000 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("story-%04d.md", i)), nil, 0o644))
	}
	path := filepath.Join(dir, "state.txt")
	require.NoError(t, os.WriteFile(path, []byte("1\n"), 0o644))
	s, err := filetxn.NewStore(path, countCodec{}, filetxn.WithStateRoot(t.TempDir()))
	require.NoError(t, err)
	lockPath, err := s.LockPath()
	require.NoError(t, err)
	stale := abandon(t, path, lockPath)

	reads := dirReads(t, dir)
	_, err = os.ReadDir(dir)
	require.NoError(t, err)
	seen := reads()
	require.Positive(t, seen, "directory reads seen after an os.ReadDir(%s)", dir)

	for range 3 {
		_, err = s.Mutate(context.Background(), func(n *int) error { *n++; return nil })
		require.NoError(t, err, "Mutate(%s)", path)
	}
	require.Equal(t, seen, reads(), "directory reads of %s after three Mutates, want none but the test's own", dir)
	require.NoFileExists(t, filepath.Join(dir, stale), "the dead writer's temporary file after Mutate")
}

package filetxn_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/filetxn/filetxn"
)

// TestStoreMutatesAPathLongerThanMaxPath: a store whose file's path is over
// 260 characters (Windows' MAX_PATH), with its lock beside it or under a
// state root, creates, changes and reads it as with a short path. On Windows
// the raw MoveFileEx of the replace failed there with "The system cannot find
// the path specified" where os succeeds; the module's own Win32 calls now
// give a long path the \\?\ prefix (fsys.LongPath). The ablation it is
// there to catch, on Windows without long paths enabled: replace without the
// prefix. Under Wine, which has no MAX_PATH limit (wine.NoMaxPath), it passes
// either way, as on Linux: there it checks that long paths work end to end.
func TestStoreMutatesAPathLongerThanMaxPath(t *testing.T) {
	dir := t.TempDir()
	for len(dir) < 300 {
		dir = filepath.Join(dir, strings.Repeat("d", 60))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []filetxn.Option
	}{
		{"lock beside", nil},
		{"state root", []filetxn.Option{filetxn.WithStateRoot(filepath.Join(t.TempDir(), "state"))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".txt")
			s, err := filetxn.NewStore(path, countCodec{}, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for i := range 2 {
				if c, err := s.Mutate(ctx, func(n *int) error { *n++; return nil }); err != nil || !c.Written {
					t.Fatalf("Mutate %d of a %d-byte path = %+v, %v, want written, nil", i+1, len(path), c, err)
				}
			}
			n, err := s.View(ctx)
			if err != nil {
				t.Fatalf("View of a %d-byte path = %v, want nil", len(path), err)
			}
			if *n != 2 {
				t.Fatalf("View of a %d-byte path = %d, want 2", len(path), *n)
			}
		})
	}
}

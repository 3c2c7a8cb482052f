package ledger

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// TestAppendWithLostLockPublishesNothing is the reproduction, with
// processes: a holder appending "holder A" is stopped inside its
// transaction, right before it publishes; its sidecar lock file is removed
// (and, separately, replaced by a rename); a second process appends "second
// B" and commits. The holder then gets an error matching lock.ErrLockLost
// and publishes nothing: the ledger holds "second B" under DW-1 and nothing
// of "holder A", where before both printed DW-1 and "second B" was lost.
//
// Ablation: with the engine's Tx.checkLock returning nil right after its
// seam, the holder's Append succeeds with DW-1 and the ledger loses "second
// B"; the test goes red in the holder and in the parent.
func TestAppendWithLostLockPublishesNothing(t *testing.T) {
	for _, how := range []string{"removed", "replaced"} {
		t.Run(how, func(t *testing.T) {
			if c := testkit.Child(t); c != nil {
				var once sync.Once
				seam.Set(t, func(p seam.Point, _ string) error { // the child's one transaction
					if p == seam.Check {
						once.Do(func() { c.Mark("inside"); testkit.WaitFor(t, filepath.Join(c.Dir, "resume")) })
					}
					return nil
				})
				ctx := context.Background()
				ids, err := openShared(c.Dir).Append(ctx, Spec{Title: "holder A", Origin: "oA", SourceSpec: "sA", Reason: "r"})
				require.ErrorIs(t, err, lock.ErrLockLost, "holder's Append after its lock file was lost = %v, %v, want ErrLockLost", ids, err)
				return
			}
			dir := t.TempDir()
			s := openShared(dir)
			lockPath, err := s.LockPath()
			require.NoError(t, err)
			g := testkit.Start(t, 1, dir)
			g.WaitMark("inside")
			switch how {
			case "removed":
				err = os.Remove(lockPath)
			case "replaced":
				require.NoError(t, os.WriteFile(lockPath+".other", nil, 0o600))
				err = os.Rename(lockPath+".other", lockPath)
			}
			if err != nil && runtime.GOOS == "windows" {
				t.Skipf("the lock file cannot be %s while held open here: %v", how, err) // a sharing violation
			}
			require.NoError(t, err, "lock file %s: %v", how, err)
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout)
			defer cancel()
			ids, err := s.Append(ctx, Spec{Title: "second B", Origin: "oB", SourceSpec: "sB", Reason: "r"})
			require.True(t, err == nil && len(ids) == 1 && ids[0] == "DW-1", "second Append = %v, %v, want [DW-1]", ids, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "resume"), nil, 0o644))
			g.Wait()

			got, err := os.ReadFile(s.path)
			require.NoError(t, err)
			require.True(t, strings.Contains(string(got), "second B") && !strings.Contains(string(got), "holder A"),
				"ledger after the holder lost its lock =\n%s\nwant \"second B\" and nothing of \"holder A\"", got)
			require.Equal(t, 1, strings.Count(string(got), "DW-1"), "ledger after the holder lost its lock =\n%s\nwant DW-1 once", got)
		})
	}
}

package board

import (
	"context"
	"github.com/filetxn/filetxn"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

const lostBoard = "development_status:\n  epic-1: backlog\n  1-1-a: backlog\n  1-2-b: backlog\n"

// TestAdvanceWithLostLockPublishesNothing: a holder advancing row 1-1-a is
// stopped inside its transaction, right before it publishes; its sidecar
// lock file is removed (and, separately, replaced by a rename); a second
// process advances row 1-2-b and commits. The holder then gets an error
// matching lock.ErrLockLost and publishes nothing: the board has 1-2-b's
// move and 1-1-a still in backlog, where before the holder's write erased
// the second move.
//
// Ablation: with the engine's Tx.checkLock returning nil right after its
// seam, the holder's Advance succeeds and 1-2-b is back in backlog; the test
// goes red in the holder and in the parent.
func TestAdvanceWithLostLockPublishesNothing(t *testing.T) {
	for _, how := range []string{"removed", "replaced"} {
		t.Run(how, func(t *testing.T) {
			open := func(dir string) *Store {
				s, err := Open(filepath.Join(dir, "sprint-status.yaml"), filetxn.WithStateRoot(filepath.Join(dir, "state")))
				require.NoError(t, err)
				return s
			}
			if c := testkit.Child(t); c != nil {
				var once sync.Once
				seam.Set(t, func(p seam.Point, _ string) error { // the child's one transaction
					if p == seam.Check {
						once.Do(func() { c.Mark("inside"); testkit.WaitFor(t, filepath.Join(c.Dir, "resume")) })
					}
					return nil
				})
				ctx := context.Background()
				got, err := open(c.Dir).Advance(ctx, "1-1-a", "in-progress")
				require.ErrorIs(t, err, lock.ErrLockLost, "holder's Advance after its lock file was lost = %q, %v, want ErrLockLost", got, err)
				return
			}
			dir := t.TempDir()
			s := open(dir)
			require.NoError(t, os.WriteFile(s.path, []byte(lostBoard), 0o644))
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
			got, err := s.Advance(ctx, "1-2-b", "review")
			require.True(t, err == nil && got == "review", "second Advance(1-2-b, review) = %q, %v, want review", got, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "resume"), nil, 0o644))
			g.Wait()

			for key, want := range map[string]Status{"1-1-a": Backlog, "1-2-b": Review} {
				got, _, err := storeStatus(context.Background(), s, key)
				require.True(t, err == nil && got == want, "Status(%s) after the holder lost its lock = %q, %v, want %q", key, got, err, want)
			}
		})
	}
}

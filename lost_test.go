package filetxn

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

// loseLock makes the lock file at path stop being the file a holder locked:
// "removed" deletes it, "replaced" renames another file over it. Either is
// what a cleaner of a state directory does to a lock file in use.
//
// Windows may refuse both while the holder has the file open (a sharing
// violation): then the lock cannot be lost this way, and the test is
// skipped.
func loseLock(t testing.TB, how, path string) {
	t.Helper()
	var err error
	switch how {
	case "removed":
		err = os.Remove(path)
	case "replaced":
		other := path + ".other"
		require.NoError(t, os.WriteFile(other, nil, 0o600))
		err = os.Rename(other, path)
	default:
		t.Fatalf("loseLock(%q): unknown way", how)
	}
	if err != nil && runtime.GOOS == "windows" {
		t.Skipf("the lock file cannot be %s while held open here: %v", how, err)
	}
	require.NoError(t, err, "lock file %s: %v", how, err)
}

// stopAtCheck makes the child's transaction stop, the first time it is
// about to re-check its lock before publishing, until the parent touches
// "resume": it marks "inside" first, so that the parent knows it is there.
// The child makes no other transaction, so the first check is its.
func stopAtCheck(c *testkit.C) {
	var once sync.Once
	seam.Set(c.T, func(p seam.Point, _ string) error {
		if p == seam.Check {
			once.Do(func() {
				c.Mark("inside")
				testkit.WaitFor(c.T, filepath.Join(c.Dir, "resume"))
			})
		}
		return nil
	})
}

// TestLostLockPublishesNothing: a holder process stopped inside its
// transaction, right before it publishes, has its lock file removed (and,
// separately, replaced by a rename); a second process then takes the lock on
// the file now at the path and commits. When the holder resumes, it
// publishes nothing and gets an error matching lock.ErrLockLost that names
// the data file and the lock file, and the files hold the second writer's
// change and nothing of the holder's: never do both commit. It is run for
// each way the engine publishes: Mutate's write, a Locked callback writing
// two files (the lost lock writes neither), Tx.Append, and Restore's removal
// of the file.
//
// Ablation: with Tx.checkLock returning nil right after its seam, every case
// goes red in the holder: its error is nil and it publishes (a Commit
// written over the second writer's, a second Tx.Write that succeeds, an
// append, a removal).
func TestLostLockPublishesNothing(t *testing.T) {
	for _, op := range []string{"mutate", "locked-two-files", "append", "restore-remove"} {
		for _, how := range []string{"removed", "replaced"} {
			t.Run(op+"/"+how, func(t *testing.T) {
				if c := testkit.Child(t); c != nil {
					lostHolder(c, op)
					return
				}
				dir := t.TempDir()
				path := filepath.Join(dir, "count.txt")
				require.NoError(t, os.WriteFile(path, []byte("41\n"), 0o644))
				g := testkit.Start(t, 1, dir)
				g.WaitMark("inside")
				loseLock(t, how, path+".lock")

				// The second writer: it locks the file now at the lock path.
				s := must(NewStore[*counter](path, counterCodec{}))
				ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout)
				defer cancel()
				if op == "append" {
					err := s.Locked(ctx, func(tx *Tx) error { return tx.Append(filepath.Join(dir, "log"), []byte("second\n")) })
					require.NoError(t, err, "second writer's Append = %v, want nil", err)
				} else {
					c, err := s.Mutate(ctx, func(d *counter) error { d.n++; return nil })
					require.True(t, err == nil && c.Written, "second writer's Mutate = %+v, %v, want written", c, err)
				}
				touch(t, filepath.Join(dir, "resume"))
				g.Wait() // the holder checks its own error

				want := "42\n"
				if op == "append" {
					want = "41\n"
					got, err := os.ReadFile(filepath.Join(dir, "log"))
					require.NoError(t, err)
					require.Equal(t, "second\n", string(got), "log after the holder lost its lock = %q, want %q", got, "second\n")
				}
				got, err := os.ReadFile(path)
				require.NoError(t, err, "counter after the holder lost its lock: %v, want the second writer's %q", err, want)
				require.Equal(t, want, string(got), "counter after the holder lost its lock = %q, want %q", got, want)
				_, err = os.Stat(filepath.Join(dir, "a.txt"))
				require.True(t, os.IsNotExist(err), "a.txt after the holder lost its lock: Stat = %v, want it never written", err)
				entries, err := os.ReadDir(dir)
				require.NoError(t, err)
				for _, e := range entries {
					require.False(t, strings.Contains(e.Name(), ".tmp-") || strings.HasSuffix(e.Name(), ".tmp"), "%s left behind by the holder, want its temp file removed", e.Name())
				}
			})
		}
	}
}

// lostHolder is the holder of TestLostLockPublishesNothing: it runs op,
// stopping before it publishes, and checks that it published nothing.
func lostHolder(c *testkit.C, op string) {
	t := c.T
	path := filepath.Join(c.Dir, "count.txt")
	s := must(NewStore[*counter](path, counterCodec{}))
	stopAtCheck(c)
	ctx := context.Background()
	var err error
	var commit Commit
	switch op {
	case "mutate":
		commit, err = s.Mutate(ctx, func(d *counter) error { d.n += 100; return nil })
	case "locked-two-files":
		err = s.Locked(ctx, func(tx *Tx) error {
			_, err1 := tx.Write(filepath.Join(c.Dir, "a.txt"), []byte("holder\n"))
			_, err2 := tx.Write(path, []byte("141\n")) // written even after a failure: it must fail too
			require.ErrorIs(t, err2, lock.ErrLockLost, "second Tx.Write after a lost lock = %v, want ErrLockLost", err2)
			return err1
		})
	case "append":
		err = s.Locked(ctx, func(tx *Tx) error { return tx.Append(filepath.Join(c.Dir, "log"), []byte("holder\n")) })
	case "restore-remove":
		commit, err = s.Restore(ctx, nil, digestOf([]byte("41\n")))
	}
	require.ErrorIs(t, err, lock.ErrLockLost, "holder's %s after its lock file was lost = %+v, %v, want ErrLockLost", op, commit, err)
	require.False(t, commit.Written, "holder's %s = %+v, want nothing written", op, commit)
	published := map[string]string{"mutate": path, "locked-two-files": filepath.Join(c.Dir, "a.txt"), "append": filepath.Join(c.Dir, "log"), "restore-remove": path}[op]
	for _, name := range []string{published + ":", path + ".lock"} {
		require.Contains(t, err.Error(), name, "holder's %s error = %q, want it to name %s", op, err, name)
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, nil, 0o644))
}

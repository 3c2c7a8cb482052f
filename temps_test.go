package filetxn

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/fsys"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// temps returns the names in dir that end in ".tmp", sorted: the engine's
// temporary files (see internal/fsys).
func temps(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		if strings.HasSuffix(e.Name(), ".tmp") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// TestWriteLeavesANeighboursTemporaryFile: a process creating a neighbour
// whose name is the data file's plus digits ("log2" beside "log", "b.yaml1"
// beside "b.yaml") stops with its temporary file staged, right before its
// rename; meanwhile another process writes the data file three times, under
// the data file's own lock. The neighbour's writer then publishes, as if
// nobody had been there. Ablations (run): removing, after the rename, every
// regular file named "." + the data file's name + anything (a sweep by
// prefix) instead of the one other name, both cases fail, the neighbour's
// rename finding no file; the engine before this change, which swept the
// directory for "." + name + at least 13 digits, failed either case when
// renameio's number for the neighbour had 18 digits, about one run in ten
// (seen red in two of nine runs).
func TestWriteLeavesANeighboursTemporaryFile(t *testing.T) {
	for _, pair := range [][2]string{{"log", "log2"}, {"b.yaml", "b.yaml1"}} {
		t.Run(pair[0]+"-"+pair[1], func(t *testing.T) {
			if c := testkit.Child(t); c != nil {
				s := must(NewStore(filepath.Join(c.Dir, pair[1]), counterCodec{}))
				stopAtCheck(c)
				cm, err := s.Mutate(context.Background(), func(d *counter) error { d.n = 7; return nil })
				require.True(c.T, err == nil && cm.Written, "the neighbour's Mutate(%s) = %+v, %v, want written", pair[1], cm, err)
				return
			}
			dir := t.TempDir()
			path := filepath.Join(dir, pair[0])
			require.NoError(t, os.WriteFile(path, []byte("1\n"), 0o644))
			g := testkit.Start(t, 1, dir)
			g.WaitMark("inside")
			es, err := os.ReadDir(dir)
			require.NoError(t, err)
			staged := 0
			for _, e := range es {
				if strings.HasPrefix(e.Name(), "."+pair[1]) {
					staged++
				}
			}
			require.Equal(t, 1, staged, "the neighbour's staged temporary files in %s", dir)

			s := must(NewStore(path, counterCodec{}))
			for range 3 {
				cm, err := s.Mutate(context.Background(), func(d *counter) error { d.n++; return nil })
				require.True(t, err == nil && cm.Written, "Mutate(%s) = %+v, %v, want written", path, cm, err)
			}
			touch(t, filepath.Join(dir, "resume"))
			g.Wait()

			for name, want := range map[string]string{pair[0]: "4\n", pair[1]: "7\n"} {
				got, err := os.ReadFile(filepath.Join(dir, name))
				require.NoError(t, err)
				require.Equal(t, want, string(got), "%s after both writers", name)
			}
			require.Empty(t, temps(t, dir), "temporary files left in %s", dir)
		})
	}
}

// TestTxWriteLeavesAnotherLocksTemporaryFiles: a Tx.Write to a file that
// another lock guards (a Locked callback of one store writing a second
// store's file) does not touch the temporary file that the second store's
// writer, stopped right before its rename, has staged for that file: the
// two locks' writers use other names. (What the two writes do to each
// other's content is the price of writing a file under the wrong lock.)
// Ablation (run): the engine before this change swept the file's
// directory after the callback's write and removed the other writer's
// temporary file, and that writer's rename failed.
func TestTxWriteLeavesAnotherLocksTemporaryFiles(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		s := must(NewStore(filepath.Join(c.Dir, "p.txt"), counterCodec{}))
		stopAtCheck(c)
		cm, err := s.Mutate(context.Background(), func(d *counter) error { d.n = 42; return nil })
		require.True(c.T, err == nil && cm.Written, "p.txt's own writer: Mutate = %+v, %v, want written", cm, err)
		return
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "p.txt")
	require.NoError(t, os.WriteFile(p, []byte("1\n"), 0o644))
	g := testkit.Start(t, 1, dir)
	g.WaitMark("inside")

	q := must(NewStore(filepath.Join(dir, "q.txt"), counterCodec{}))
	err := q.Locked(context.Background(), func(tx *Tx) error {
		_, err := tx.Write(p, []byte("99\n"))
		return err
	})
	require.NoError(t, err, "Tx.Write(%s) under q.txt's lock", p)
	touch(t, filepath.Join(dir, "resume"))
	g.Wait()

	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "42\n", string(got), "%s after its own writer's rename", p)
	require.Empty(t, temps(t, dir), "temporary files left in %s", dir)
}

// TestAKilledWritersTemporaryFileGoesAtTheNextWrite: a writer SIGKILLed
// between its staging and its rename (stopped right before its lock check)
// leaves its temporary file; after one such kill, and after two in a row
// (the second writer stages under the other name, the first's file being
// there), the next write under the lock publishes and leaves no temporary
// file behind. Ablation (run): without the removal of the other name after
// the rename (removeStale(pf.stale) in fsys's publish), the dead
// writers' files stay and both cases fail.
func TestAKilledWritersTemporaryFileGoesAtTheNextWrite(t *testing.T) {
	for _, kills := range []int{1, 2} {
		t.Run(strings.Repeat("kill", kills), func(t *testing.T) {
			if c := testkit.Child(t); c != nil {
				s := must(NewStore(filepath.Join(c.Dir, "count.txt"), counterCodec{}))
				stopAtCheck(c)
				_, err := s.Mutate(context.Background(), func(d *counter) error { d.n += 100; return nil })
				c.T.Fatalf("Mutate returned %v, want to be killed before", err)
				return
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "count.txt")
			require.NoError(t, os.WriteFile(path, []byte("1\n"), 0o644))
			for k := range kills {
				g := testkit.Start(t, 1, dir)
				g.WaitMark("inside")
				g.Kill(0)
				require.NoError(t, os.Remove(filepath.Join(dir, "inside")))
				require.Len(t, temps(t, dir), k+1, "temporary files after %d kills", k+1)
			}

			s := must(NewStore(path, counterCodec{}))
			cm, err := s.Mutate(context.Background(), func(d *counter) error { d.n++; return nil })
			require.True(t, err == nil && cm.Written, "Mutate(%s) after %d kills = %+v, %v, want written", path, kills, cm, err)
			require.Empty(t, temps(t, dir), "temporary files left in %s after the next write", dir)
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, "2\n", string(got), "%s after the next write", path)
		})
	}
}

// TestALostWritersTemporaryFileIsNoLaterHoldersName: a writer stopped
// right before its lock check, with its temporary file staged, has its lock
// file deleted; another process then writes twice under the new lock file
// at the path. Those writes take names of their own (the names are the
// lock file's, not the path's), so the stopped writer's temporary file is
// still the one it made, and no later writer ever makes a file of its name
// that its rename could publish half-written. Resumed, the writer finds
// its lock lost, publishes nothing and removes its file. Ablation (run):
// keying the names by the lock's path (filepath.Abs in fsys.Key), the
// first later write removes the stopped writer's file and the second makes
// one of that name afresh, and the test fails.
func TestALostWritersTemporaryFileIsNoLaterHoldersName(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		s := must(NewStore(filepath.Join(c.Dir, "count.txt"), counterCodec{}))
		stopAtCheck(c)
		cm, err := s.Mutate(context.Background(), func(d *counter) error { d.n += 100; return nil })
		require.ErrorIs(c.T, err, lock.ErrLockLost, "the stopped writer's Mutate = %+v, %v, want ErrLockLost", cm, err)
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "count.txt")
	require.NoError(t, os.WriteFile(path, []byte("1\n"), 0o644))
	g := testkit.Start(t, 1, dir)
	g.WaitMark("inside")
	staged := temps(t, dir)
	require.Len(t, staged, 1, "the stopped writer's temporary file")
	before, err := os.Stat(filepath.Join(dir, staged[0]))
	require.NoError(t, err)
	loseLock(t, "removed", path+".lock")

	s := must(NewStore(path, counterCodec{}))
	for range 2 {
		cm, err := s.Mutate(context.Background(), func(d *counter) error { d.n++; return nil })
		require.True(t, err == nil && cm.Written, "Mutate(%s) under the new lock file = %+v, %v, want written", path, cm, err)
	}
	after, err := os.Stat(filepath.Join(dir, staged[0]))
	require.NoError(t, err, "the stopped writer's temporary file after two writes under the new lock file")
	require.True(t, os.SameFile(before, after), "%s after two writes under the new lock file is another file", staged[0])
	touch(t, filepath.Join(dir, "resume"))
	g.Wait()

	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "3\n", string(got), "%s after the stopped writer resumed", path)
	require.Empty(t, temps(t, dir), "temporary files left in %s", dir)
}

// TestALostWriterLeavesTheNewHoldersTemporaryFile: writer A holds the lock
// and is inside its fn when its lock file is replaced; writer B takes the
// lock on the new file and stops right before its lock check, its
// temporary file staged under the first of the new lock file's names, and
// a dead writer's file has the second. A then writes: both names are
// taken, but A's lock is lost, so A must not remove the first to stage
// there itself. B, let go while A waits at its own check, publishes its
// own bytes, and A publishes nothing. Ablation (run): stageLocked removing
// the first name without asking whether the lock is still held (as
// before) has A replace B's staged file with its own, and B's rename then
// publishes A's 101 under a lock A had lost.
func TestALostWriterLeavesTheNewHoldersTemporaryFile(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		s := must(NewStore(filepath.Join(c.Dir, "count.txt"), counterCodec{}))
		switch c.Args {
		case "A":
			seam.Set(c.T, func(p seam.Point, _ string) error { // the child's one transaction
				if p == seam.Check {
					c.Mark("a-check")
					testkit.WaitFor(c.T, filepath.Join(c.Dir, "a-resume"))
				}
				return nil
			})
			ctx := context.Background()
			_, err := s.Mutate(ctx, func(d *counter) error {
				c.Mark("a-inside")
				testkit.WaitFor(c.T, filepath.Join(c.Dir, "a-write"))
				d.n += 100
				return nil
			})
			require.ErrorIs(c.T, err, lock.ErrLockLost, "A's Mutate = %v, want ErrLockLost", err)
		case "B":
			seam.Set(c.T, func(p seam.Point, _ string) error { // the child's one transaction
				if p == seam.Check {
					c.Mark("b-check")
					testkit.WaitFor(c.T, filepath.Join(c.Dir, "b-resume"))
				}
				return nil
			})
			ctx := context.Background()
			cm, err := s.Mutate(ctx, func(d *counter) error { d.n = 7; return nil })
			require.True(c.T, err == nil && cm.Written, "B's Mutate = %+v, %v, want written", cm, err)
		}
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "count.txt")
	require.NoError(t, os.WriteFile(path, []byte("1\n"), 0o644))
	a := testkit.StartWith(t, 1, dir, testkit.Options{Args: "A"})
	a.WaitMark("a-inside")
	loseLock(t, "replaced", path+".lock")
	b := testkit.StartWith(t, 1, dir, testkit.Options{Args: "B"})
	b.WaitMark("b-check")

	key, ok := fsys.Key(path + ".lock")
	require.True(t, ok, "fsys.Key(%s.lock)", path)
	names := fsys.Names("count.txt", key)
	staged, err := os.Stat(filepath.Join(dir, names[0]))
	require.NoError(t, err, "B's temporary file %s", names[0])
	require.NoError(t, os.WriteFile(filepath.Join(dir, names[1]), []byte("dead"), 0o644)) // a dead writer's

	touch(t, filepath.Join(dir, "a-write"))
	a.WaitMark("a-check")
	now, err := os.Stat(filepath.Join(dir, names[0]))
	require.NoError(t, err, "B's temporary file %s after A staged", names[0])
	require.True(t, os.SameFile(staged, now), "%s after A, whose lock was lost, staged: another file", names[0])
	touch(t, filepath.Join(dir, "b-resume"))
	b.Wait()
	touch(t, filepath.Join(dir, "a-resume"))
	a.Wait()
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "7\n", string(got), "%s after both writers", path)
}

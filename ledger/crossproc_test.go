package ledger

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/filetxn/filetxn"

	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

const (
	appenders      = 8
	appendsEach    = 50
	closers        = 2
	crossProcState = "state"
)

func openShared(dir string) *Store {
	return must(Open(filepath.Join(dir, "deferred-work.md"), filetxn.WithStateRoot(filepath.Join(dir, crossProcState)), filetxn.WithoutSync()))
}

func writeLines(t testing.TB, path string, lines []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\n")
}

// TestConcurrentAppendsAndClosesAcrossProcesses: 8 processes append 50
// entries each, one Store.Append per entry, while 2 more processes close
// random open entries. The ledger ends with all 400 entries under 400
// distinct ids, each id reported to its appender is in the file with that
// appender's entry, and every close reported to a closer is in the file.
// Ablation: giving each child process its own lock file (no mutual
// exclusion) loses appends, mints ids twice and reverts closes; the test goes
// red on the entry count and the duplicate ids.
func TestConcurrentAppendsAndClosesAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	if c := testkit.Child(t); c != nil {
		s := openShared(c.Dir)
		c.Barrier()
		if c.Index < appenders {
			var ids []string
			for j := range appendsEach {
				got, err := s.Append(ctx, Spec{
					Title:      fmt.Sprintf("item %d of process %d", j, c.Index),
					Origin:     fmt.Sprintf("process %d item %d", c.Index, j),
					SourceSpec: "spec-concurrency.md",
					Reason:     "concurrency test",
				})
				if err != nil || len(got) != 1 || got[0] == "" {
					t.Fatalf("Append = %v, %v", got, err)
				}
				ids = append(ids, got[0])
			}
			writeLines(t, filepath.Join(c.Dir, fmt.Sprintf("appended-%d", c.Index)), ids)
			c.Mark(fmt.Sprintf("done-%d", c.Index))
			return
		}
		rng := rand.New(rand.NewPCG(uint64(c.Index), 42))
		var closed []string
		for {
			finished := true
			for i := range appenders {
				if _, err := os.Stat(filepath.Join(c.Dir, fmt.Sprintf("done-%d", i))); err != nil {
					finished = false
				}
			}
			d, err := s.View(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if open := openIDs(d); len(open) > 0 {
				id := open[rng.IntN(len(open))]
				var got []string
				_, err := s.Mutate(ctx, func(d *Doc) (err error) {
					got, err = d.MarkDone([]string{id}, "2026-06-11", fmt.Sprintf("closed by process %d", c.Index))
					return err
				})
				if err != nil {
					t.Fatalf("MarkDone(%s) = %v", id, err)
				}
				closed = append(closed, got...)
			}
			if finished {
				break
			}
		}
		writeLines(t, filepath.Join(c.Dir, fmt.Sprintf("closed-%d", c.Index)), closed)
		return
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "deferred-work.md"), []byte(ledgerFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	g := testkit.Start(t, appenders+closers, dir)
	g.Release()
	g.Wait()

	d, err := openShared(dir).View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if dups := d.duplicates(); len(dups) != 0 {
		t.Fatalf("duplicate ids: %v", dups)
	}
	entries := d.Entries()
	if want := 3 + appenders*appendsEach; len(entries) != want {
		t.Fatalf("%d entries, want %d", len(entries), want)
	}
	byID := make(map[string]Entry)
	for _, e := range entries {
		byID[e.ID] = e
	}
	reported := map[string]bool{}
	for i := range appenders {
		ids := readLines(t, filepath.Join(dir, fmt.Sprintf("appended-%d", i)))
		if len(ids) != appendsEach {
			t.Fatalf("process %d reported %d ids", i, len(ids))
		}
		for j, id := range ids {
			e, ok := byID[id]
			if !ok || reported[id] || !strings.Contains(e.Body, fmt.Sprintf("origin: process %d item %d\n", i, j)) {
				t.Fatalf("process %d item %d: id %s missing, reported twice, or not its entry", i, j, id)
			}
			reported[id] = true
		}
	}
	closedBy := map[string]int{}
	for k := range closers {
		idx := appenders + k
		for _, id := range readLines(t, filepath.Join(dir, fmt.Sprintf("closed-%d", idx))) {
			if _, twice := closedBy[id]; twice {
				t.Errorf("%s reported closed by two processes", id)
			}
			closedBy[id] = idx
		}
	}
	if len(closedBy) == 0 {
		t.Errorf("the closers closed nothing")
	}
	for _, e := range entries {
		idx, closed := closedBy[e.ID]
		switch {
		case closed && (e.Status != "done 2026-06-11" || !strings.Contains(e.Body, fmt.Sprintf("resolution: closed by process %d\n", idx))):
			t.Errorf("close of %s by process %d was lost: %q", e.ID, idx, e.Body)
		case !closed && e.ID != "DW-2" && !e.Open():
			t.Errorf("%s is closed but nobody reported closing it", e.ID)
		}
	}
	t.Logf("%d entries, %d closed concurrently", len(entries), len(closedBy))
}

// TestArchiveCrashBetweenWritesRecovers kills a process with SIGKILL in its
// Archive after the archive's rename and before the ledger's (at
// seam.Published). The lock is free, the archive has the bodies, the ledger
// is as it was and the commit's intent record is beside the lock; the
// parent's next transaction, an Append, publishes the crashed run's stubs
// (stamped with its date) before it appends, and leaves no staged file or
// record behind. A second Archive moves nothing.
// Ablation: going back to two writes (the archive, then the ledger, under
// Locked, with the kill between them) leaves the ledger without its stub
// after the Append (red on "the next transaction did not complete").
func TestArchiveCrashBetweenWritesRecovers(t *testing.T) {
	ctx := context.Background()
	if c := testkit.Child(t); c != nil {
		s := openShared(c.Dir)
		seam.Set(c.T, func(p seam.Point, path string) error {
			if p == seam.Published && path == s.archive {
				c.Mark("between-renames")
				select {} // wait here to be killed
			}
			return nil
		})
		c.Barrier()
		s.Archive(ctx, "", "2026-08-24")
		t.Fatal("Archive returned; it should have been killed between its renames")
		return
	}
	dir := t.TempDir()
	s := openShared(dir)
	if err := os.WriteFile(s.path, []byte(ledgerFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	g := testkit.Start(t, 1, dir)
	g.Release()
	g.WaitMark("between-renames")
	g.Kill(0)

	if got := string(readOrNil(t, s.path)); got != ledgerFixture {
		t.Fatalf("the ledger was published before the archive: %q", got)
	}
	crashed := string(readOrNil(t, s.archive))
	if !strings.Contains(crashed, "status: done 2026-05-25\narchived: 2026-08-24\n") {
		t.Fatalf("archive after the crash = %q", crashed)
	}
	lp, _ := s.LockPath()
	if readOrNil(t, lp+".intent") == nil {
		t.Fatalf("no intent record beside the lock after the crash")
	}
	h, err := lock.TryAcquire(lp)
	if err != nil {
		t.Fatalf("the killed process left the lock held: %v", err)
	}
	h.Release()

	ids, err := s.Append(ctx, Spec{Title: "later", Origin: "o-later", SourceSpec: "s.md", Reason: "r"})
	if err != nil || !slices.Equal(ids, []string{"DW-4"}) {
		t.Fatalf("the next Append = %v, %v", ids, err)
	}
	ledger := string(readOrNil(t, s.path))
	if !strings.Contains(ledger, "### DW-2: Old closed item\n\nstatus: done 2026-05-25\norigin: code review of spec-1-1.md, 2026-05-20\narchived: 2026-08-24\n\n") {
		t.Errorf("the next transaction did not complete the crashed commit: ledger = %q", ledger)
	}
	if !strings.Contains(ledger, "### DW-4: later") {
		t.Errorf("the Append is not in the ledger: %q", ledger)
	}
	if got := string(readOrNil(t, s.archive)); got != crashed {
		t.Errorf("the next transaction changed the archive: %q", got)
	}
	for _, d := range []string{dir, filepath.Dir(lp)} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if n := e.Name(); strings.HasSuffix(n, ".intent") || strings.HasSuffix(n, ".tmp") {
				t.Errorf("left behind: %s", filepath.Join(d, n))
			}
		}
	}
	if again, err := s.Archive(ctx, "", "2026-08-31"); err != nil || len(again) != 0 {
		t.Errorf("Archive after recovery = %v, %v, want nothing", again, err)
	}
}

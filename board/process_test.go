package board

import (
	"context"
	"fmt"
	"github.com/filetxn/filetxn"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/filetxn/filetxn/internal/testkit"
)

const (
	procWorkers = 6  // each moves its own epic's stories to in-progress, then review
	procDoners  = 2  // both move the same stories (the odd ones of every epic) to done
	procStories = 20 // stories per epic
)

// procBoard is the board the processes share: one epic per worker, in backlog, with
// section comments, a trailing comment on every story, and comment blocks around.
func procBoard() string {
	var b strings.Builder
	b.WriteString("# Sprint status — shared by 8 processes\ngenerated: 01-06-2026 10:00\nlast_updated: 01-06-2026 10:00\n\n# STATUS DEFINITIONS\n#   backlog -> ready-for-dev -> in-progress -> review -> done\ndevelopment_status:\n")
	for e := 1; e <= procWorkers; e++ {
		fmt.Fprintf(&b, "  # Epic %d: owned by worker %d\n  epic-%d: backlog\n", e, e-1, e)
		for s := 1; s <= procStories; s++ {
			fmt.Fprintf(&b, "  %d-%d-story-%d-%d: backlog  # owner: worker %d, комментарий %d\n", e, s, e, s, e-1, s)
		}
		fmt.Fprintf(&b, "  epic-%d-retrospective: optional\n\n", e)
	}
	b.WriteString("# WORKFLOW NOTES\n# keep these comments\n")
	return b.String()
}

func procKey(e, s int) string { return fmt.Sprintf("%d-%d-story-%d-%d", e, s, e, s) }

// TestStoreAdvanceAcrossProcesses runs 6 worker processes, each advancing its own 20
// stories to in-progress and then review, and 2 more processes advancing the same odd
// stories of every epic to done, all at once through the real Store with a shared state
// root. At the end every story is at the highest status anyone asked for (done for the
// odd ones, review for the others), every epic was lifted, every Advance answered at or
// past its target, and every line but the moved values is byte-identical.
//
// Ablations: with the engine's lock placement split per process (a WithLockPath unique
// to each child) flips are lost and this goes red; so does a Store.Advance that decides on
// its lock-free read and publishes those bytes under the lock.
func TestStoreAdvanceAcrossProcesses(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		path := filepath.Join(c.Dir, "sprint-status.yaml")
		s, err := Open(path, filetxn.WithStateRoot(filepath.Join(c.Dir, "state")))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		advance := func(key string, target Status) {
			got, err := s.Advance(ctx, key, target, Stamp(fmt.Sprintf("child %d", c.Index)))
			if err != nil {
				t.Fatalf("child %d: Advance(%q, %q) = %v", c.Index, key, target, err)
			}
			if Rank(got) < Rank(target) {
				t.Fatalf("child %d: Advance(%q, %q) = %q, below the target", c.Index, key, target, got)
			}
		}
		c.Barrier()
		if c.Index < procWorkers {
			e := c.Index + 1
			for st := 1; st <= procStories; st++ {
				advance(procKey(e, st), InProgress)
				advance(procKey(e, st), Review)
			}
			return
		}
		for st := 1; st <= procStories; st += 2 {
			for e := 1; e <= procWorkers; e++ {
				advance(procKey(e, st), Done)
			}
		}
		return
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "sprint-status.yaml")
	src := procBoard()
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	g := testkit.Start(t, procWorkers+procDoners, dir)
	g.Release()
	g.Wait()

	out, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse(out)
	if err != nil {
		t.Fatalf("the final board does not parse: %v", err)
	}
	for e := 1; e <= procWorkers; e++ {
		for st := 1; st <= procStories; st++ {
			want := Review
			if st%2 == 1 {
				want = Done
			}
			if got, _ := d.Status(procKey(e, st)); got != want {
				t.Errorf("%s = %q, want %q", procKey(e, st), got, want)
			}
		}
		if got, _ := d.Status(fmt.Sprintf("epic-%d", e)); got != InProgress {
			t.Errorf("epic-%d = %q, want in-progress", e, got)
		}
	}
	// Every line but the values that moved (and last_updated) is byte-identical.
	before, after := splitLines(src), splitLines(string(out))
	if len(before) != len(after) {
		t.Fatalf("line count %d, want %d", len(after), len(before))
	}
	for i := range before {
		a, b := before[i].text, after[i].text
		if a == b {
			continue
		}
		if strings.HasPrefix(a, "last_updated: ") && strings.HasPrefix(b, "last_updated: child ") {
			continue
		}
		if !sameShape(a, b) || !strings.Contains(a, ": backlog") {
			t.Errorf("line %d changed beyond its value: %q -> %q", i+1, a, b)
		}
	}
}

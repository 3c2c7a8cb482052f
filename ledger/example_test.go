package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/ledger"
)

const exampleLedger = `# Deferred Work

## Deferred from: code review of 1-1 (2026-06-01)

- a legacy bullet, kept as prose

### DW-1: Harden unicode handling
origin: code review of spec-1-1.md
status: open

### DW-2: Old closed item
status: done 2026-05-25
`

func ExampleParse() {
	d, err := ledger.Parse([]byte(exampleLedger))
	if err != nil {
		panic(err)
	}
	for _, e := range d.Entries() {
		fmt.Printf("%s %q open=%v line=%d\n", e.ID, e.Title, e.Open(), e.Line)
	}
	e, ok := d.Entry("DW-2") // the first entry with the id, the one every operation acts on
	fmt.Println(e.ID, e.Done(), ok)
	_, ok = d.Entry("DW-9")
	fmt.Println("DW-9", ok)
	// Output:
	// DW-1 "Harden unicode handling" open=true line=7
	// DW-2 "Old closed item" open=false line=11
	// DW-2 true true
	// DW-9 false
}

func ExampleDoc_Append() {
	d, _ := ledger.Parse([]byte("# Deferred Work\n"))
	ids, _ := d.Append(
		ledger.Spec{Title: "Retry transient SMTP failures", Origin: "code review of spec-3-2.md", SourceSpec: "spec-3-2.md", Reason: "out of scope", Severity: "medium"},
		ledger.Spec{Title: "Retry transient SMTP failures", Origin: "code review of spec-3-2.md", SourceSpec: "spec-3-2.md", Reason: "out of scope"},
	)
	fmt.Printf("%q\n", ids)
	fmt.Printf("%s", d.Bytes())
	// Output:
	// ["DW-1" ""]
	// # Deferred Work
	//
	// ### DW-1: Retry transient SMTP failures
	// origin: code review of spec-3-2.md
	// location: n/a
	// source_spec: `spec-3-2.md`
	// severity: medium
	// reason: out of scope
	// status: open
}

func ExampleDoc_MarkDone() {
	d, _ := ledger.Parse([]byte("### DW-1: standard\n\nstatus: open\n"))
	if _, err := d.MarkDone([]string{"DW-1", "DW-7"}, "2026-06-11", "by dw-a"); err != nil {
		fmt.Println(err) // a typo is not a replay: nothing is closed
	}
	closed, _ := d.MarkDone([]string{"DW-1"}, "2026-06-11", "by dw-a")
	again, _ := d.MarkDone([]string{"DW-1"}, "2026-06-11", "by dw-a") // a replay
	fmt.Println(closed, again)
	fmt.Printf("%s", d.Bytes())
	// Output:
	// ledger: no entry DW-7: filetxn: not found
	// [DW-1] []
	// ### DW-1: standard
	//
	// status: done 2026-06-11
	// resolution: by dw-a
}

func ExampleDoc_MarkOpen() {
	const text = "### DW-1: formatted\nstatus:   open # keep this\n"
	d, _ := ledger.Parse([]byte(text))
	d.MarkDone([]string{"DW-1"}, "2026-06-11", "fixed by run 42", ledger.Reopenable("run-42/dw-fix"))
	e, _ := d.Entry("DW-1")
	fmt.Println(e.Status)
	reopened, _ := d.MarkOpen([]string{"DW-1"}, "fixed by run 42", "run-42/dw-fix")
	fmt.Println(reopened, string(d.Bytes()) == text)
	// Output:
	// done 2026-06-11
	// [DW-1] true
}

func ExampleDoc_RecordDecision() {
	d, _ := ledger.Parse([]byte("### DW-1: x\nstatus: open\n"))
	d.RecordDecision("DW-1", "2026-06-11", "fix now", "worth the churn")
	d.MarkDone([]string{"DW-1"}, "2026-06-11", "closed by decision") // decide and close
	fmt.Printf("%s", d.Bytes())
	// Output:
	// ### DW-1: x
	// status: done 2026-06-11
	// resolution: closed by decision
	// decision: 2026-06-11 fix now — worth the churn
}

func ExampleDoc_ArchiveInto() {
	d, _ := ledger.Parse([]byte("### DW-1: old\norigin: review\nreason: long text\nstatus: done 2026-05-25\n\n### DW-2: live\nstatus: open\n"))
	archive, _ := ledger.Parse(nil) // no archive file yet
	moved, _ := d.ArchiveInto(archive, "", "2026-08-24")
	fmt.Println(moved)
	fmt.Printf("%s", d.Bytes())
	fmt.Println("--- archive:")
	fmt.Printf("%s", archive.Bytes())
	// Output:
	// [DW-1]
	// ### DW-1: old
	//
	// status: done 2026-05-25
	// origin: review
	// archived: 2026-08-24
	//
	// ### DW-2: live
	// status: open
	// --- archive:
	// ### DW-1: old
	// origin: review
	// reason: long text
	// status: done 2026-05-25
	// archived: 2026-08-24
}

func ExampleDoc_Merge() {
	snapshot, _ := ledger.Parse([]byte("### DW-4: kept\nstatus: open\n\n### DW-5: ours, lost to a reset\nstatus: open\n"))
	current, _ := ledger.Parse([]byte("### DW-4: kept\nstatus: open\n\n### DW-5: a rival's, minted after the reset\nstatus: open\n\n### DW-6: another\nstatus: open\n"))
	rep := current.Merge(snapshot)
	fmt.Printf("carried %v, collisions %v\n", rep.Carried, rep.Collisions)
	// Output:
	// carried [], collisions [DW-5]
}

// File and close deferred work in a copy of the sample ledger the README
// uses (examples/testdata).
func ExampleStore() {
	dir, _ := os.MkdirTemp("", "ledger-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	sample, err := os.ReadFile(filepath.Join("..", "examples", "testdata", "deferred-work.md"))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := os.MkdirAll(filepath.Join(dir, "artifacts"), 0o755); err != nil {
		fmt.Println(err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, "artifacts", "deferred-work.md"), sample, 0o644); err != nil {
		fmt.Println(err)
		return
	}

	// The lock is bmad-loop's sidecar under the state root; a bmad-loop run
	// with the same state root excludes this process and vice versa.
	s, err := ledger.Open(filepath.Join(dir, "artifacts", "deferred-work.md"), filetxn.WithStateRoot(filepath.Join(dir, "state")))
	if err != nil {
		fmt.Println(err)
		return
	}

	ids, _ := s.Append(ctx,
		ledger.Spec{Title: "Rate-limit the export endpoint", Origin: "code review of spec-3-3-export.md", SourceSpec: "spec-3-3-export.md", Reason: "out of scope"},
		ledger.Spec{Title: "Retry SMTP on a 4xx reply", Origin: "code review of spec-3-2-digest-delivery.md, 2026-06-05", SourceSpec: "spec-3-2-digest-delivery.md", Reason: "filed already"},
	)
	fmt.Println("appended", ids) // "": an open entry has this origin and source spec (DW-3)

	// Close DW-3 and say what became of it. Mutate runs fn once, under the
	// lock.
	var closed []string
	var wasDone bool
	closeDW3 := func(d *ledger.Doc) (err error) {
		e, _ := d.Entry("DW-3")
		wasDone = e.Done()
		closed, err = d.MarkDone([]string{"DW-3"}, "2026-06-11", "backoff added in 3-2")
		return err
	}
	c, _ := s.Mutate(ctx, closeDW3)
	fmt.Println("closed", closed, "written", c.Written)

	// A replay writes nothing; through MutateProbed it needs no lock (fn may
	// then run twice, first on a lock-free read: it assigns its results).
	c, _ = s.MutateProbed(ctx, closeDW3)
	fmt.Println("closed again", closed, "already done", wasDone, "written", c.Written)

	// Several changes in one lock, one read and one write.
	s.Mutate(ctx, func(d *ledger.Doc) error {
		if err := d.RecordDecision("DW-1", "2026-06-12", "fix now", "emoji titles reach customers"); err != nil {
			return err
		}
		_, err := d.Append(ledger.Spec{Title: "Test subjects with combining marks", Origin: "decision on DW-1", SourceSpec: "spec-3-2-digest-delivery.md", Reason: "split"})
		return err
	})

	d, _ := s.View(ctx)
	var open []string
	for _, e := range d.Entries() {
		if e.Open() {
			open = append(open, e.ID)
		}
	}
	fmt.Println("open", open)
	// Output:
	// appended [DW-5 ]
	// closed [DW-3] written true
	// closed again [] already done true written false
	// open [DW-1 DW-4 DW-5 DW-6]
}

// Close a batch of ids that holds a typo, and report what became of each:
// fn looks each id up, closes the ones the ledger knows and sorts them all.
// Mutate runs fn once, under the lock, so fn may collect its results.
// Given the typo, MarkDone refuses the whole batch, naming the id and the
// ledger.
func ExampleStore_Mutate() {
	dir, _ := os.MkdirTemp("", "ledger-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	s, err := ledger.Open(filepath.Join(dir, "deferred-work.md"), filetxn.WithStateRoot(filepath.Join(dir, "state")))
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := s.Append(ctx,
		ledger.Spec{Title: "Harden unicode handling", Origin: "code review of spec-3-2.md", SourceSpec: "spec-3-2.md", Reason: "out of scope"},
		ledger.Spec{Title: "Retry SMTP", Origin: "code review of spec-3-3.md", SourceSpec: "spec-3-3.md", Reason: "later"},
	); err != nil {
		fmt.Println(err)
		return
	}

	ids := []string{"DW-1", "DW-7"}
	var closed, done, unknown []string
	_, err = s.Mutate(ctx, func(d *ledger.Doc) (err error) {
		var known []string
		for _, id := range ids {
			e, ok := d.Entry(id)
			if !ok {
				unknown = append(unknown, id)
				continue
			}
			if e.Done() {
				done = append(done, id)
			}
			known = append(known, id)
		}
		closed, err = d.MarkDone(known, "2026-06-11", "fixed in 3-4")
		return err
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("closed", closed, "already done", done, "unknown", unknown)

	_, err = s.Mutate(ctx, func(d *ledger.Doc) error {
		_, err := d.MarkDone(ids, "2026-06-11", "fixed in 3-4")
		return err
	})
	var pe *fs.PathError
	fmt.Println(errors.Is(err, filetxn.ErrNotFound), errors.As(err, &pe) && pe.Path == filepath.Join(dir, "deferred-work.md"))
	// Output:
	// closed [DW-1] already done [] unknown [DW-7]
	// true true
}

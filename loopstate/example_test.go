package loopstate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/ledger"
	"github.com/filetxn/filetxn/lock"
	"github.com/filetxn/filetxn/loopstate"
)

// Create claims a name atomically: the second create of the same name is
// refused, and List finds every loop.
func ExampleRoot_Create() {
	dir, _ := os.MkdirTemp("", "loopstate-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	root := must(loopstate.NewRoot(dir))

	ciTriage := func(d *loopstate.Doc) error {
		d.Template = "ci-triage"
		d.Gates = loopstate.Gates{MaxTicks: new(int64(20)), BudgetUSD: new(5.0)}
		d.Schedule = loopstate.Schedule{Enabled: true, Every: "15m"}
		return nil
	}
	if _, err := root.Create(ctx, "ci-triage-main", ciTriage); err != nil {
		fmt.Println(err)
		return
	}
	_, err := root.Create(ctx, "ci-triage-main", ciTriage)
	fmt.Println(errors.Is(err, fs.ErrExist))
	_, err = root.Create(ctx, "../escape", ciTriage)
	fmt.Println(errors.Is(err, filetxn.ErrInvalidArgument))

	loops, _ := root.List(ctx)
	for _, l := range loops {
		d, _ := l.View(ctx)
		fmt.Println(l.Name(), d.Status, d.TickCount, d.Template, d.Schedule.Enabled)
	}
	// Output:
	// true
	// true
	// ci-triage-main running 0 ci-triage true
}

// A gate halts the loop; pause refuses to hide the halt; approve releases it
// and opens a new window, so check-gate passes again.
func ExampleLoop_Approve() {
	dir, _ := os.MkdirTemp("", "loopstate-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	root := must(loopstate.NewRoot(dir))
	l, _ := root.Create(ctx, "nightly", func(d *loopstate.Doc) error {
		d.Gates.MaxTicks = new(int64(2))
		return nil
	})

	work := func(ctx context.Context, run *loopstate.Run) (loopstate.Result, error) {
		return loopstate.Result{Cost: &loopstate.Cost{USD: 0.5}}, nil
	}
	for range 2 {
		rec, err := l.Tick(ctx, loopstate.TriggerManual, work)
		fmt.Println(rec.N, rec.Outcome, rec.StatusAfter, rec.GatesTripped, err)
	}
	fmt.Println(l.CheckGate(ctx))
	err := l.Pause(ctx, "alice", "look at it")
	var ge *loopstate.GuardError
	fmt.Println(err, errors.As(err, &ge) && ge.Status == loopstate.Halted)
	fmt.Println(l.Approve(ctx, "alice", "reviewed"))
	fmt.Println(l.CheckGate(ctx))

	d, _ := l.View(ctx)
	fmt.Println(d.Status, d.ResumedCount, d.Epoch.Tick, d.LastApproval.Reason)
	// Output:
	// 1 ok running [] <nil>
	// 2 ok halted [max_ticks] <nil>
	// nightly: halted (max_ticks: 2 ticks in window >= 2)
	// nightly: not running (status halted) true
	// <nil>
	// <nil>
	// running 1 2 reviewed
}

// Mutate changes the state in one transaction: here the gates and the
// schedule, with one lock, one read and one write. Setting the schedule as
// it already is writes nothing and never waits for the lock.
func ExampleLoop_Mutate() {
	dir, _ := os.MkdirTemp("", "loopstate-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	root := must(loopstate.NewRoot(dir))
	l, _ := root.Create(ctx, "triage", nil)

	c, err := l.Mutate(ctx, func(d *loopstate.Doc) error {
		d.Gates.BudgetTokens = new(int64(1_000_000))
		d.Gates.CheckpointEvery = new(int64(10))
		d.Schedule.Enabled = true
		return nil
	})
	fmt.Println(c.Written, err)
	_, err = l.Mutate(ctx, func(d *loopstate.Doc) error {
		d.Gates.CheckpointEvery = new(int64(0)) // at least 1
		return nil
	})
	var fe *filetxn.FormatError
	fmt.Println(errors.As(err, &fe), fe.Key)
	fmt.Println(l.SetSchedule(ctx, true))

	d, _ := l.View(ctx)
	fmt.Println(*d.Gates.BudgetTokens, *d.Gates.CheckpointEvery, d.Schedule.Enabled)
	// Output:
	// true <nil>
	// true gates.checkpoint_every
	// <nil>
	// 1000000 10 true
}

// A tick runs its harness under the loop's lock and records the result in
// the state and the tick log.
func ExampleLoop_Tick() {
	dir, _ := os.MkdirTemp("", "loopstate-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	root := must(loopstate.NewRoot(dir))
	l, _ := root.Create(ctx, "triage", nil)

	work := func(ctx context.Context, run *loopstate.Run) (loopstate.Result, error) {
		return loopstate.Result{Cost: &loopstate.Cost{USD: 0.09, Tokens: 21000, Seconds: 63}, Note: "3 failing checks classified"}, nil
	}
	rec, err := l.Tick(ctx, loopstate.TriggerManual, work)
	fmt.Println(rec.N, rec.Outcome, rec.Cost.Tokens, rec.Note, err)

	// A scheduled tick runs only when the schedule is enabled.
	rec, _ = l.Tick(ctx, loopstate.TriggerSchedule, work)
	fmt.Println(rec.Outcome, rec.SkipReason)

	d, _ := l.View(ctx)
	fmt.Println(d.TickCount, d.Spent.USD, !d.LastTickAt.IsZero())
	log, _ := l.Ticks(ctx)
	fmt.Println(len(log))
	// Output:
	// 1 ok 21000 3 failing checks classified <nil>
	// skipped schedule_disabled
	// 1 0.09 true
	// 2
}

// A tick whose harness finished a story records it in one commit: close
// the story's deferred work, advance it to done and count the tick, all
// published or none (copies of the README's sample files).
func ExampleWithCommit() {
	dir, _ := os.MkdirTemp("", "loopstate-example")
	defer os.RemoveAll(dir)
	for _, name := range []string{"deferred-work.md", "sprint-status.yaml"} {
		data, _ := os.ReadFile(filepath.Join("..", "examples", "testdata", name))
		_ = os.WriteFile(filepath.Join(dir, name), data, 0o644)
	}
	ctx := context.Background()
	led, _ := ledger.Open(filepath.Join(dir, "deferred-work.md"))
	brd, _ := board.Open(filepath.Join(dir, "sprint-status.yaml"))
	l, _ := must(loopstate.NewRoot(filepath.Join(dir, "loops"))).Create(ctx, "dev", nil)

	work := func(ctx context.Context, run *loopstate.Run) (loopstate.Result, error) {
		return loopstate.Result{Note: "3-2 implemented"}, nil
	}
	rec, err := l.Tick(ctx, loopstate.TriggerManual, work, loopstate.WithCommit([]filetxn.Member{led, brd},
		func(m *filetxn.Multi, rec loopstate.TickRecord) error {
			if rec.Outcome != loopstate.OK {
				return nil // counted, the story left as it is
			}
			if _, err := led.In(m).MarkDone([]string{"DW-1", "DW-3"}, "2026-12-01", "fixed in 3-2"); err != nil {
				return err // nothing of this is published, and the tick is counted failed
			}
			_, err := brd.In(m).Advance("3-2-digest-delivery", board.Done)
			return err
		}))

	d, _ := led.View(ctx)
	e, _ := d.Entry("DW-3")
	b, _ := brd.View(ctx)
	s, _ := b.Status("3-2-digest-delivery")
	st, _ := l.View(ctx)
	fmt.Println(err, rec.N, rec.Outcome, e.Done(), s, st.TickCount)
	// Output: <nil> 1 ok true done 1
}

// WithLockTimeout bounds a manual tick's wait for the loop's lock, and only
// the wait: while an operator command holds the lock, the tick gives up
// after the bound (a *lock.BusyError) naming the holder, having recorded
// nothing; once it has the lock, its harness runs as long as it needs.
func ExampleWithLockTimeout() {
	dir, _ := os.MkdirTemp("", "loopstate-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	root := must(loopstate.NewRoot(dir))
	l, _ := root.Create(ctx, "triage", nil)
	work := func(ctx context.Context, run *loopstate.Run) (loopstate.Result, error) {
		time.Sleep(50 * time.Millisecond) // longer than the lock timeout
		return loopstate.Result{Cost: &loopstate.Cost{}}, ctx.Err()
	}

	// Another holder (here a goroutine; usually another process).
	held, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		h, err := lock.Acquire(ctx, l.LockPath(), lock.WithPurpose("approve triage"))
		if err != nil {
			panic(err)
		}
		close(held)
		<-release
		h.Release()
	}()
	<-held
	rec, err := l.Tick(ctx, loopstate.TriggerManual, work, loopstate.WithLockTimeout(10*time.Millisecond))
	var busy *lock.BusyError
	if errors.As(err, &busy) {
		fmt.Println(rec.Outcome == "", busy.Holder.Purpose, errors.Is(err, context.DeadlineExceeded))
	}
	close(release)
	<-done

	rec, err = l.Tick(ctx, loopstate.TriggerManual, work, loopstate.WithLockTimeout(10*time.Millisecond))
	fmt.Println(rec.N, rec.Outcome, err)
	// Output:
	// true approve triage true
	// 1 ok <nil>
}

// A loop's state is its file's JSON document: View decodes it,
// MarshalJSON gives it back as the file holds it (byte for byte, while it
// is unchanged), and UnmarshalJSON reads one as strictly as the package's
// own reads do.
func ExampleDoc_MarshalJSON() {
	dir, _ := os.MkdirTemp("", "loopstate-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	root := must(loopstate.NewRoot(dir))
	l, _ := root.Create(ctx, "x", nil)

	d, _ := l.View(ctx)
	b, _ := json.Marshal(d)
	file, _ := os.ReadFile(filepath.Join(filepath.Dir(l.LockPath()), ".state.loop"))
	var compact bytes.Buffer
	json.Compact(&compact, file)
	fmt.Println(bytes.Equal(b, compact.Bytes()))

	var back loopstate.Doc
	fmt.Println(json.Unmarshal(b, &back), back.Name, back.Status)
	err := json.Unmarshal([]byte(`{"schema": 1, "name": "x"}`), &back)
	var fe *filetxn.FormatError
	fmt.Println(errors.As(err, &fe), fe.Key)
	// Output:
	// true
	// <nil> x running
	// true template
}

// must returns r, and panics if NewRoot refused its arguments.
func must(r *loopstate.Root, err error) *loopstate.Root {
	if err != nil {
		panic(err)
	}
	return r
}

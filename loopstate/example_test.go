package loopstate_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/filetxn/filetxn/lock"
	"github.com/filetxn/filetxn/loopstate"
)

// clock is a fixed time, so that the examples' output does not change.
func clock() time.Time { return time.Date(2025, 5, 1, 9, 0, 0, 0, time.UTC) }

// Create claims a name atomically: the second create of the same name is
// refused, and List reads every loop without a lock.
func ExampleRoot_Create() {
	dir, _ := os.MkdirTemp("", "loopstate-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	root := must(loopstate.NewRoot(dir))

	tpl := loopstate.Template{
		Name:     "ci-triage",
		Gates:    loopstate.Gates{MaxTicks: new(int64(20)), Budget: loopstate.Budget{USD: new(5.0)}},
		Schedule: loopstate.Schedule{Enabled: true, Every: "15m"},
	}
	if _, err := root.Create(ctx, "ci-triage-main", tpl); err != nil {
		fmt.Println(err)
		return
	}
	_, err := root.Create(ctx, "ci-triage-main", tpl)
	fmt.Println(errors.Is(err, loopstate.ErrExists))
	_, err = root.Create(ctx, "../escape", tpl)
	fmt.Println(errors.Is(err, loopstate.ErrInvalidName))

	loops, _ := root.List(ctx)
	for _, l := range loops {
		fmt.Println(l.Name, l.State.Status, l.State.TickCount, l.State.Schedule.Enabled)
	}
	// Output:
	// true
	// true
	// ci-triage-main running 0 true
}

// A gate halts the loop; pause refuses to hide the halt; approve releases it
// and opens a new window, so check-gate passes again.
func ExampleLoop_Approve() {
	dir, _ := os.MkdirTemp("", "loopstate-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	root := must(loopstate.NewRoot(dir))
	l, _ := root.Create(ctx, "nightly", loopstate.Template{Gates: loopstate.Gates{MaxTicks: new(int64(2))}})

	work := func(ctx context.Context, run *loopstate.Run) (loopstate.Result, error) {
		return loopstate.Result{Cost: &loopstate.Cost{USD: 0.5}}, nil
	}
	for range 2 {
		rec, err := l.Tick(ctx, loopstate.TriggerManual, work)
		fmt.Println(rec.N, rec.Outcome, rec.StatusAfter, rec.GatesTripped, err)
	}
	err := l.Pause(ctx, "alice", "look at it")
	fmt.Println(err, errors.Is(err, loopstate.ErrNotRunning))
	fmt.Println(l.Approve(ctx, "alice", "reviewed"))
	fmt.Println(l.CheckGate(ctx))

	d, _ := l.View(ctx)
	fmt.Println(d.Status, d.ResumedCount, d.Epoch.Tick, d.LastApproval.Note)
	// Output:
	// 1 ok running [] <nil>
	// 2 ok halted [max_ticks] <nil>
	// nightly: not running (status halted) true
	// <nil>
	// <nil>
	// running 1 2 reviewed
}

// A tick runs its harness under the loop's lock and records the result in
// the state and the tick log.
func ExampleLoop_Tick() {
	dir, _ := os.MkdirTemp("", "loopstate-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	root := must(loopstate.NewRoot(dir))
	l, _ := root.Create(ctx, "triage", loopstate.Template{})

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

// WithLockTimeout bounds a manual tick's wait for the loop's lock, and only
// the wait: while an operator command holds the lock, the tick gives up
// after the bound (a *lock.BusyError) naming the holder, having recorded
// nothing; once it has the lock, its harness runs as long as it needs.
func ExampleWithLockTimeout() {
	dir, _ := os.MkdirTemp("", "loopstate-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	root := must(loopstate.NewRoot(dir))
	l, _ := root.Create(ctx, "triage", loopstate.Template{})
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

// CheckGates is a pure transition on the state: it halts a running loop and
// lists every gate that tripped.
func ExampleDoc_CheckGates() {
	d, _ := loopstate.New("ci", clock(), loopstate.Template{Gates: loopstate.Gates{
		MaxTicks:               new(int64(20)),
		MaxConsecutiveFailures: new(int64(3)),
	}})
	d.TickCount, d.ConsecutiveFailures, d.FailuresTotal = 20, 3, 3
	trips, err := d.CheckGates(clock())
	fmt.Println(len(trips), err)
	fmt.Println(d.Status, d.Halted.Gates)
	fmt.Println(d.Halted.Reason)
	_, err = d.CheckGates(clock())
	fmt.Println(errors.Is(err, loopstate.ErrHalted))
	// Output:
	// 2 <nil>
	// halted [max_ticks max_consecutive_failures]
	// max_ticks: 20 ticks in window >= 20; max_consecutive_failures: 3 consecutive failures >= 3
	// true
}

// A state that is not changed is written back byte for byte; a changed one
// in the canonical layout.
func ExampleCodec() {
	in := []byte(`{"schema": 1, "name": "x", "template": null, "status": "running",
 "created_at": "2025-05-01T09:00:00Z", "updated_at": "2025-05-01T09:00:00Z", "last_tick_at": null,
 "tick_count": 0, "resumed_count": 0, "consecutive_failures": 0, "failures_total": 0,
 "spent": {"usd": 0.0, "tokens": 0, "seconds": 0.0},
 "epoch": {"started_at": "2025-05-01T09:00:00Z", "tick": 0, "spent": {"usd": 0.0, "tokens": 0, "seconds": 0.0}},
 "gates": {"max_ticks": null, "max_consecutive_failures": null, "budget": {"usd": null, "tokens": null, "seconds": null}, "expires_at": null},
 "schedule": {"enabled": false, "every": null},
 "current_tick": null, "pause": null, "halt": null, "last_approval": null}
`)
	var c loopstate.Codec
	d, _ := c.Decode(in)
	out, _ := c.Encode(d)
	fmt.Println(string(out) == string(in))

	d.DisableSchedule(clock())
	d.EnableSchedule(clock().Add(time.Hour))
	out, _ = c.Encode(d)
	fmt.Println(strings.Join(strings.SplitN(string(out), "\n", 5)[:4], "\n"))
	// Output:
	// true
	// {
	//   "schema": 1,
	//   "name": "x",
	//   "template": null,
}

// must returns r, and panics if NewRoot refused its arguments.
func must(r *loopstate.Root, err error) *loopstate.Root {
	if err != nil {
		panic(err)
	}
	return r
}

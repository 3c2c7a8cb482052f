//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package loopstate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
	"github.com/stretchr/testify/require"
)

// TestTickThatLostItsLockFileIsRecordedOnceAndRefusesEveryChange is the
// loop half of the lost-lock reproduction, with real processes: a
// runner (a child process) is inside its tick, its harness blocked on a
// barrier file, when the loop's .state.lock is replaced by another file (or
// removed). From this process every change then takes the lock on the file
// now at the path (re-created when it was removed) and finds the runner
// alive: a manual tick, Pause, Resume, Approve, CheckGate, SetSchedule,
// Mutate and Delete are refused with an error matching lock.ErrLockLost
// (exit 75) that names the runner's pid and tick, and change nothing; a
// scheduled tick logs skipped/busy. When the harness is let go, the
// runner's tick finds its lock lost, takes the lock again and records the
// tick: one ok line with its cost and the lost lock in its note,
// tick_count 1, current_tick cleared. The next tick counts nothing as
// abandoned.
// Ablations (run, in a copy of the tree): runnerBusy returning nil, the
// Pause applies while the runner runs (status paused, and the other
// changes too); recordLost returning lostErr at once (the tick dropped, as
// before), the runner's Tick fails, the log has no line for tick 1 and the
// next tick counts it abandoned; runnerGone reporting every runner gone,
// the second tick counts the live tick as abandoned and runs; runnerBusy
// without its exemption for the runner's own lock (its holder record), the
// no-op CheckGate before the removal returns a *lock.BusyError.
func TestTickThatLostItsLockFileIsRecordedOnceAndRefusesEveryChange(t *testing.T) {
	for _, how := range []string{"replaced", "removed"} {
		t.Run(how, func(t *testing.T) {
			if c := testkit.Child(t); c != nil {
				l := mustOpen(t, rootIn(c.Dir), "lost")
				c.Barrier()
				rec, err := l.Tick(ctx0, TriggerManual, testHarness(t, "block", c.Dir))
				writeResult(t, c.Dir, "runner-result", err)
				c.Mark("runner-note-" + strconv.FormatBool(strings.HasPrefix(rec.Note, lostNote)))
				return
			}
			dir := t.TempDir()
			l := mustCreate(t, rootIn(dir), "lost", Template{Schedule: Schedule{Enabled: true}})
			runner := testkit.Start(t, 1, dir)
			runner.Release()
			waitTight(t, filepath.Join(dir, "harness-running-1"))
			d := mustView(t, l)
			require.NotNil(t, d.current, "current_tick while the harness runs = nil, want the runner's")
			require.Equal(t, runner.Pid(0), d.current.PID, "current_tick.pid = %d, want the runner's %d", d.current.PID, runner.Pid(0))
			// While the runner holds its lock, a no-op answers from its
			// lock-free probe at once, as it always did.
			tried, cancelTried := context.WithCancel(ctx0)
			cancelTried()
			err := l.CheckGate(tried)
			require.NoError(t, err, "CheckGate (no gate) while the runner holds its lock = %v, want nil at once", err)

			switch how {
			case "replaced":
				other := filepath.Join(l.dir, "other.lock")
				require.NoError(t, os.WriteFile(other, nil, 0o600))
				require.NoError(t, os.Rename(other, l.lock), "replacing %s", l.lock)
			case "removed":
				require.NoError(t, os.Remove(l.lock), "removing %s", l.lock)
			}

			ctx, cancel := context.WithTimeout(ctx0, 30*time.Second)
			defer cancel()
			state := readFile(t, l.state)
			runnerNamed := fmt.Sprintf("tick 1 is still running in pid %d", runner.Pid(0))
			_, err = l.Tick(ctx, TriggerManual, mustNotRun(t))
			require.ErrorIs(t, err, ErrTickInProgress, "second Tick(manual) = %v, want ErrTickInProgress", err)
			require.ErrorIs(t, err, lock.ErrLockLost, "second Tick(manual) = %v, want lock.ErrLockLost", err)
			require.Equal(t, exitBusy, exitCode(err), "exitCode(second Tick(manual)) = %d, want %d", exitCode(err), exitBusy)
			rec, err := l.Tick(ctx, TriggerSchedule, mustNotRun(t))
			require.NoError(t, err, "second Tick(schedule) = %v, want nil", err)
			require.Equal(t, skipBusy, rec.SkipReason, "second Tick(schedule) = %+v, want skipped/busy", rec)
			for _, op := range []struct {
				name string
				call func() error
			}{
				{"Pause", func() error { return l.Pause(ctx, "ops", "while the runner's lock was lost") }},
				{"Resume", func() error { return l.Resume(ctx) }},
				{"Approve", func() error { return l.Approve(ctx, "ops", "") }},
				{"CheckGate", func() error { return l.CheckGate(ctx) }},
				{"SetSchedule", func() error { return l.SetSchedule(ctx, false) }},
				{"Mutate", func() error {
					_, err := l.Mutate(ctx, func(d *Doc) error { d.Template = "changed"; return nil })
					return err
				}},
				{"Delete", func() error { return l.Delete(ctx) }},
			} {
				err := op.call()
				require.ErrorIs(t, err, lock.ErrLockLost, "%s during the runner's tick = %v, want lock.ErrLockLost", op.name, err)
				require.Equal(t, exitBusy, exitCode(err), "exitCode(%s) = %d, want %d", op.name, exitCode(err), exitBusy)
				require.Contains(t, err.Error(), runnerNamed, "%s's error = %q, want it to name the runner", op.name, err)
				require.Equal(t, string(state), string(readFile(t, l.state)), "state after the refused %s changed", op.name)
			}

			require.NoError(t, os.WriteFile(filepath.Join(dir, "harness-release-1"), nil, 0o644))
			runner.Wait()
			res := readResult(t, dir, "runner-result")
			require.Equal(t, exitOK, res.code, "the runner's Tick = %q, want nil: its tick recorded once it held the lock again", res.msg)
			_, err = os.Stat(filepath.Join(dir, "runner-note-true"))
			require.NoError(t, err, "the runner's record's note does not start with %q", lostNote)
			d = mustView(t, l)
			require.Nil(t, d.current, "current_tick after the runner recorded its tick = %+v, want nil", d.current)
			require.Equal(t, int64(1), d.TickCount, "tick_count after the runner's tick = %d, want 1", d.TickCount)
			require.Equal(t, Running, d.Status, "status after the runner's tick = %s, want running", d.Status)
			require.Equal(t, Cost{USD: 0.09, Tokens: 21000}, Cost{USD: d.Spent.USD, Tokens: d.Spent.Tokens}, "spent after the runner's tick = %+v, want its cost", d.Spent)

			rec, err = l.Tick(ctx0, TriggerManual, okHarness(Cost{}))
			require.NoError(t, err, "Tick after the runner exited = %+v, %v, want nil", rec, err)
			d = mustView(t, l)
			var counted []TickRecord
			for _, r := range mustTicks(t, l) {
				if r.Outcome != Skipped {
					counted = append(counted, r)
				}
			}
			require.Len(t, counted, int(d.TickCount), "counted lines %+v, want one per counted tick (tick_count %d)", counted, d.TickCount)
			require.Equal(t, int64(2), d.TickCount, "tick_count = %d, want 2 (the runner's, then this one)", d.TickCount)
			require.Equal(t, OK, counted[0].Outcome, "line 1 = %+v, want the runner's tick ok", counted[0])
			require.Equal(t, int64(1), counted[0].N, "line 1 = %+v, want n 1", counted[0])
			require.Equal(t, runner.Pid(0), counted[0].PID, "line 1's pid = %d, want the runner's %d", counted[0].PID, runner.Pid(0))
			require.Equal(t, 0.09, counted[0].Cost.USD, "line 1's cost = %+v, want the harness's", counted[0].Cost)
			require.True(t, strings.HasPrefix(counted[0].Note, lostNote), "line 1's note = %q, want it to start with %q", counted[0].Note, lostNote)
			require.Equal(t, OK, counted[1].Outcome, "line 2 = %+v, want ok", counted[1])
		})
	}
}

// TestRunnerKilledAroundItsLogLineCountsTheTickOnce: a runner (a child
// process) is SIGKILLed inside its tick's last step, just before it appends
// the tick's line, or after the line and before the state that counts it
// (a seam at the engine's check before each publish picks the moment).
// The next tick counts the killed tick exactly once: abandoned when its line
// was never written, as its line says (ok, with its cost) when it was; the
// log has one counted line per counted tick either way.
// Ablation (run): commit writing the state before the line (the order
// before this fix) counts the tick without any line when the kill lands
// between the two: the state has no marker left and the log no line for
// tick 1.
func TestRunnerKilledAroundItsLogLineCountsTheTickOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		killAt  int // the engine's publish checks of a tick: 1 the marker, 2 the line, 3 the state
		outcome Outcome
	}{
		{"before the line", 2, Abandoned},
		{"between the line and the state", 3, OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if c := testkit.Child(t); c != nil {
				l := mustOpen(t, rootIn(c.Dir), "k")
				c.Barrier()
				checks := 0
				seam.Set(t, func(p seam.Point, _ string) error { // the child's one Tick
					if p != seam.Check {
						return nil
					}
					if checks++; checks == tc.killAt {
						c.Mark("dying")
						syscall.Kill(os.Getpid(), syscall.SIGKILL)
						select {} // the signal is on its way
					}
					return nil
				})
				l.Tick(ctx0, TriggerManual, okHarness(Cost{USD: 0.25, Tokens: 10, Seconds: 1}))
				t.Fatalf("the runner survived its tick")
				return
			}
			dir := t.TempDir()
			l := mustCreate(t, rootIn(dir), "k", Template{})
			runner := testkit.Start(t, 1, dir)
			runner.Release()
			runner.WaitMark("dying")
			runner.Kill(0) // the runner kills itself, or is killed here, where it waits in the hook
			d := mustView(t, l)
			require.NotNil(t, d.current, "current_tick after the kill = nil, want the killed tick's marker")

			rec, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{}))
			require.NoError(t, err, "Tick after the kill = %+v, %v, want nil", rec, err)
			d = mustView(t, l)
			var counted []TickRecord
			for _, r := range mustTicks(t, l) {
				if r.Outcome != Skipped {
					counted = append(counted, r)
				}
			}
			require.Len(t, counted, int(d.TickCount), "counted lines %+v, want one per counted tick (tick_count %d)", counted, d.TickCount)
			require.Equal(t, int64(2), d.TickCount, "tick_count = %d, want 2", d.TickCount)
			require.Equal(t, tc.outcome, counted[0].Outcome, "line 1 = %+v, want %s", counted[0], tc.outcome)
			require.Equal(t, int64(1), counted[0].N, "line 1's n = %d, want 1", counted[0].N)
			if tc.outcome == OK {
				require.Equal(t, Cost{USD: 0.25, Tokens: 10, Seconds: 1}, d.Spent, "spent = %+v, want the killed tick's cost", d.Spent)
			}
		})
	}
}

// TestANoOpDuringATickOfARunnerThatWritesNoHolderRecordDoesNotWait: a
// runner (a child process) that writes no holder record, as bmad-loop
// writes none and a Root made WithLockOptions(lock.WithoutHolder()) none,
// is inside its tick, holding its lock. A CheckGate that trips no gate,
// with a ctx that is already done, answers from its lock-free probe at
// once, as it did before the lost-lock refusal: the runner's marker
// refuses a change only from a caller that holds the loop's lock.
// Ablation (run): runnerBusy refusing a probe that finds no holder record
// (as before this fix) makes the probe fail, and the call, not to wait,
// returns a *lock.BusyError.
func TestANoOpDuringATickOfARunnerThatWritesNoHolderRecordDoesNotWait(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		l := mustOpen(t, rootIn(c.Dir, filetxn.WithLockOptions(lock.WithoutHolder())), "norecord")
		c.Barrier()
		// The harness runs in the runner's process: a harness process
		// would be handed the lock, and HandOver writes a record.
		_, err := l.Tick(ctx0, TriggerManual, func(context.Context, *Run) (Result, error) {
			c.Mark("harness-running-1")
			testkit.WaitFor(c.T, filepath.Join(c.Dir, "harness-release-1"))
			return Result{Cost: &Cost{}}, nil
		})
		writeResult(t, c.Dir, "runner-result", err)
		return
	}
	dir := t.TempDir()
	l := mustCreate(t, rootIn(dir), "norecord", Template{})
	runner := testkit.Start(t, 1, dir)
	runner.Release()
	waitTight(t, filepath.Join(dir, "harness-running-1"))
	h, err := lock.ReadHolder(l.lock)
	require.True(t, err == nil && h == nil, "ReadHolder(%s) while the runner holds it = %v, %v, want no record", l.lock, h, err)
	tried, cancel := context.WithCancel(ctx0)
	cancel()
	err = l.CheckGate(tried)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "harness-release-1"), nil, 0o644))
	runner.Wait()
	require.NoError(t, err, "CheckGate (no gate) while a runner without a holder record holds its lock = %v, want nil at once", err)
	res := readResult(t, dir, "runner-result")
	require.Equal(t, exitOK, res.code, "the runner's Tick = %q, want nil", res.msg)
}

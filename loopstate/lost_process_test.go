//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package loopstate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/filetxn/filetxn/internal/proctest"
	"github.com/filetxn/filetxn/internal/txhook"
	"github.com/filetxn/filetxn/lock"
	"github.com/stretchr/testify/require"
)

// TestTickThatLostItsLockFilePublishesNothing is the loop half of the
// issue's lost-lock reproduction, with real processes: a runner (a child
// process) is inside its tick, its harness blocked on a barrier file, when
// the loop's .state.lock is replaced by another file (or removed). Then,
// from this process, a second tick takes the lock on the file now at the
// path (re-created when it was removed) and finds the runner alive: a
// manual tick is refused as busy and a scheduled one logs skipped/busy,
// neither counts the live tick as abandoned; a pause applies. When the
// harness is let go, the runner's tick finds its lock lost: it gets
// ErrLockLost and publishes nothing, neither its log line nor its state.
// Once the runner has exited, the next tick counts its tick as abandoned,
// once, and at the end tick_count and the counted lines of the log agree.
// Ablations (run, in a copy of the tree): the engine's check before it
// publishes (Tx.checkLock returning nil) removed, the runner's tick
// succeeds, writing its line and its state over the pause; runnerGone
// reporting every runner gone, the second tick counts the live tick as
// abandoned and runs.
func TestTickThatLostItsLockFilePublishesNothing(t *testing.T) {
	for _, how := range []string{"replaced", "removed"} {
		t.Run(how, func(t *testing.T) {
			if c := proctest.Child(t); c != nil {
				l := mustOpen(t, rootIn(c.Dir), "lost")
				c.Barrier()
				_, err := l.Tick(ctx0, TriggerManual, testHarness(t, "block", c.Dir))
				writeResult(t, c.Dir, "runner-result", err)
				c.Mark("runner-lost-" + strconv.FormatBool(errors.Is(err, lock.ErrLockLost)))
				return
			}
			dir := t.TempDir()
			l := mustCreate(t, rootIn(dir), "lost", Template{Schedule: Schedule{Enabled: true}})
			runner := proctest.Start(t, 1, dir)
			runner.Release()
			waitTight(t, filepath.Join(dir, "harness-running-1"))
			d := mustView(t, l)
			require.NotNil(t, d.current, "current_tick while the harness runs = nil, want the runner's")
			require.Equal(t, runner.Pid(0), d.current.PID, "current_tick.pid = %d, want the runner's %d", d.current.PID, runner.Pid(0))

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
			_, err := l.Tick(ctx, TriggerManual, mustNotRun(t))
			require.ErrorIs(t, err, ErrTickInProgress, "second Tick(manual) = %v, want ErrTickInProgress", err)
			require.Equal(t, exitBusy, exitCode(err), "exitCode(second Tick(manual)) = %d, want %d", exitCode(err), exitBusy)
			rec, err := l.Tick(ctx, TriggerSchedule, mustNotRun(t))
			require.NoError(t, err, "second Tick(schedule) = %v, want nil", err)
			require.Equal(t, skipBusy, rec.SkipReason, "second Tick(schedule) = %+v, want skipped/busy", rec)
			require.NoError(t, l.Pause(ctx, "ops", "while the runner's lock was lost"), "Pause during the tick")
			state, log := readFile(t, l.state), readFile(t, l.log)
			d = mustView(t, l)
			require.Equal(t, Paused, d.Status, "status after the pause = %s, want paused", d.Status)
			require.NotNil(t, d.current, "the live runner's current_tick was cleared")
			require.Equal(t, int64(0), d.TickCount, "tick_count during the runner's tick = %d, want 0", d.TickCount)

			require.NoError(t, os.WriteFile(filepath.Join(dir, "harness-release-1"), nil, 0o644))
			runner.Wait()
			res := readResult(t, dir, "runner-result")
			_, err = os.Stat(filepath.Join(dir, "runner-lost-true"))
			require.NoError(t, err, "the runner's Tick = %q, want an error matching lock.ErrLockLost", res.msg)
			require.Equal(t, string(state), string(readFile(t, l.state)), "the runner published its state after its lock was lost")
			require.Equal(t, string(log), string(readFile(t, l.log)), "the runner published its log line after its lock was lost")

			require.NoError(t, l.Resume(ctx0), "Resume after the runner exited")
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
			require.Equal(t, int64(2), d.TickCount, "tick_count = %d, want 2 (the runner's abandoned, then ok)", d.TickCount)
			require.Equal(t, Abandoned, counted[0].Outcome, "line 1 = %+v, want the runner's tick abandoned", counted[0])
			require.Equal(t, runner.Pid(0), counted[0].PID, "line 1's pid = %d, want the runner's %d", counted[0].PID, runner.Pid(0))
			require.Equal(t, OK, counted[1].Outcome, "line 2 = %+v, want ok", counted[1])
		})
	}
}

// TestRunnerKilledAroundItsLogLineCountsTheTickOnce: a runner (a child
// process) is SIGKILLed inside its tick's last step, just before it appends
// the tick's line, or after the line and before the state that counts it
// (a txhook at the engine's check before each publish picks the moment).
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
			if c := proctest.Child(t); c != nil {
				l := mustOpen(t, rootIn(c.Dir), "k")
				c.Barrier()
				checks := 0
				ctx := txhook.With(ctx0, txhook.Hooks{txhook.Check: func() {
					if checks++; checks == tc.killAt {
						c.Mark("dying")
						syscall.Kill(os.Getpid(), syscall.SIGKILL)
						select {} // the signal is on its way
					}
				}})
				l.Tick(ctx, TriggerManual, okHarness(Cost{USD: 0.25, Tokens: 10, Seconds: 1}))
				t.Fatalf("the runner survived its tick")
				return
			}
			dir := t.TempDir()
			l := mustCreate(t, rootIn(dir), "k", Template{})
			runner := proctest.Start(t, 1, dir)
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

package loopstate

import (
	"context"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/proc"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
	"github.com/stretchr/testify/require"
)

// The tests in this file are about the edges of exclusion and counting: a
// marked tick whose runner still runs, a runner gone between its log line
// and its state, a removed lock file, counters at their largest values.

// markTick sets current_tick as a runner with pid and start token would.
func markTick(t *testing.T, l *Loop, pid int, start string) *currentTick {
	t.Helper()
	var ct *currentTick
	_, err := l.Mutate(ctx0, func(d *Doc) error {
		ct = &currentTick{N: d.TickCount + 1, StartedAt: epoch0, PID: pid, pidStart: start}
		d.current = ct
		return nil
	})
	require.NoError(t, err, "Mutate(set current_tick) = %v, want nil", err)
	return ct
}

// deadPid returns the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	require.NoError(t, cmd.Run(), "running %s -test.run=^$", exe)
	return cmd.Process.Pid
}

// parentPid returns the pid of this process's parent: a live process that
// is not this one.
func parentPid(t *testing.T) int {
	t.Helper()
	ppid := os.Getppid()
	if ppid == 0 {
		testkit.Skip(t, "a program started from Linux has no Windows parent process (os.Getppid() is 0)")
	}
	require.NotZero(t, ppid, "os.Getppid() = 0, want the parent's pid")
	return ppid
}

// mustNotRun is a harness that fails the test if a tick runs it.
func mustNotRun(t *testing.T) Harness {
	return func(context.Context, *Run) (Result, error) {
		t.Errorf("the harness ran")
		return Result{}, nil
	}
}

// TestTickLeavesALiveRunnersTickAlone: current_tick names a process that is
// alive and is the same process (this test's parent, with its start token),
// as when the runner's lock file was replaced or removed under it. A manual
// tick refuses with ErrTickInProgress and lock.ErrWouldBlock (exit 75) and changes
// nothing; a scheduled one logs skipped/busy and changes no state.
// Ablation (run): runnerGone reporting every runner gone counts the live
// runner's tick as abandoned, and the manual tick succeeds.
func TestTickLeavesALiveRunnersTickAlone(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{Schedule: Schedule{Enabled: true}})
	ppid := parentPid(t)
	markTick(t, l, ppid, proc.Start(ppid))
	state := readFile(t, l.state)

	_, err := l.Tick(ctx0, TriggerManual, mustNotRun(t))
	require.ErrorIs(t, err, ErrTickInProgress, "Tick(manual) with a live runner = %v, want ErrTickInProgress", err)
	require.ErrorIs(t, err, lock.ErrWouldBlock, "Tick(manual) with a live runner = %v, want lock.ErrWouldBlock too", err)
	require.Equal(t, exitBusy, exitCode(err), "exitCode(%v) = %d, want %d", err, exitCode(err), exitBusy)
	require.Equal(t, string(state), string(readFile(t, l.state)), "state after the refused tick changed")
	require.Empty(t, mustTicks(t, l), "tick log after the refused tick, want empty")

	rec, err := l.Tick(ctx0, TriggerSchedule, mustNotRun(t))
	require.NoError(t, err, "Tick(schedule) with a live runner = %v, want nil", err)
	require.Equal(t, Skipped, rec.Outcome, "Tick(schedule).Outcome = %s, want skipped", rec.Outcome)
	require.Equal(t, skipBusy, rec.SkipReason, "Tick(schedule).SkipReason = %s, want busy", rec.SkipReason)
	require.Equal(t, string(state), string(readFile(t, l.state)), "state after the skipped tick changed")
	recs := mustTicks(t, l)
	require.Len(t, recs, 1, "tick log = %+v, want one skipped/busy line", recs)
	require.Equal(t, skipBusy, recs[0].SkipReason, "tick log = %+v, want one skipped/busy line", recs)
}

// TestTickTakesAnotherProcessBehindTheRunnersPidForGone: current_tick names
// a live pid whose start token is not the recorded one: the pid was reused,
// the runner is gone, and its tick is abandoned.
// Ablation (run): runnerGone ignoring pidStart (a live pid is the runner)
// refuses the tick.
func TestTickTakesAnotherProcessBehindTheRunnersPidForGone(t *testing.T) {
	if proc.Self() == "" {
		t.Skip("this system gives no start tokens: a live pid counts as the runner")
	}
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{})
	ppid := parentPid(t)
	markTick(t, l, ppid, "a process that exited long ago")
	rec, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{}))
	require.NoError(t, err, "Tick over a reused pid = %+v, %v, want nil", rec, err)
	recs := mustTicks(t, l)
	require.Len(t, recs, 2, "tick log = %+v, want abandoned 1 then ok 2", recs)
	require.Equal(t, Abandoned, recs[0].Outcome, "tick log = %+v, want abandoned 1 then ok 2", recs)
	require.Equal(t, ppid, recs[0].PID, "abandoned line's pid = %d, want %d", recs[0].PID, ppid)
}

// TestTickCountsADeadRunnersLoggedTickFromItsLine: the runner died after
// appending its tick's line and before writing the state that counts it.
// The next tick counts what the line says (outcome, cost) and logs nothing
// more for it: one line per counted tick. The same for a recovery's
// abandoned line.
// Ablation (run): settleAbandoned ignoring the log (always recoverTick)
// logs tick 1 twice and counts an ok tick as a failure.
func TestTickCountsADeadRunnersLoggedTickFromItsLine(t *testing.T) {
	for _, outcome := range []Outcome{OK, Fail, Abandoned} {
		t.Run(string(outcome), func(t *testing.T) {
			r, _ := newTestRoot(t)
			l := mustCreate(t, r, "x", Template{})
			pid := deadPid(t)
			ct := markTick(t, l, pid, "")
			line := TickRecord{
				N: 1, StartedAt: ct.StartedAt, EndedAt: epoch0.Add(time.Minute), Outcome: outcome,
				StatusBefore: Running, StatusAfter: Running, Cost: Cost{USD: 0.5, Tokens: 7, Seconds: 60},
				Trigger: TriggerManual, PID: pid,
			}
			if outcome == Abandoned {
				line.Cost = Cost{}
			}
			require.NoError(t, os.WriteFile(l.log, appendRecord(nil, &line), 0o644))

			rec, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{}))
			require.NoError(t, err, "Tick after a logged, uncounted tick = %+v, %v, want nil", rec, err)
			require.Equal(t, int64(2), rec.N, "Tick().N = %d, want 2", rec.N)
			recs := mustTicks(t, l)
			require.Len(t, recs, 2, "tick log = %+v, want %s 1 then ok 2", recs, outcome)
			require.Equal(t, outcome, recs[0].Outcome, "tick log = %+v, want %s 1 then ok 2", recs, outcome)
			d := mustView(t, l)
			require.Equal(t, int64(2), d.TickCount, "tick_count = %d, want 2", d.TickCount)
			require.Equal(t, line.Cost, d.Spent, "spent = %+v, want the logged tick's %+v", d.Spent, line.Cost)
			wantFailures := int64(0)
			if outcome != OK {
				wantFailures = 1
			}
			require.Equal(t, wantFailures, d.FailuresTotal, "failures_total = %d, want %d", d.FailuresTotal, wantFailures)
			require.Nil(t, d.current, "current_tick = %+v, want null", d.current)
		})
	}
}

// TestTickLogsADeadRunnersTickOnce: current_tick names a dead runner and the
// log has no line for its tick: the next tick logs it abandoned, once, and
// counts it.
func TestTickLogsADeadRunnersTickOnce(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{})
	pid := deadPid(t)
	markTick(t, l, pid, proc.Start(os.Getpid())) // a token, but not the dead pid's
	_, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{}))
	require.NoError(t, err, "Tick after a dead runner = %v, want nil", err)
	recs := mustTicks(t, l)
	require.Len(t, recs, 2, "tick log = %+v, want abandoned 1 then ok 2", recs)
	require.Equal(t, Abandoned, recs[0].Outcome, "tick log = %+v, want abandoned 1 then ok 2", recs)
	require.Equal(t, pid, recs[0].PID, "abandoned line's pid = %d, want %d", recs[0].PID, pid)
	require.Equal(t, int64(2), mustView(t, l).TickCount, "tick_count, want 2")
}

// TestRemovedLockFileIsRecreated: a loop whose .state.lock was removed (its
// state is still there) gets it back from the next operation: tick, pause
// and resume work, and View never needed it. A directory with neither state
// nor lock file is no loop, and no lock file appears in it.
// Ablation (run): locked without restoreLock gives filetxn.ErrNotFound for all three;
// mutate that never restores (lockMissing ignored) fails Pause with the
// lock's "no such file" for its lock file.
func TestRemovedLockFileIsRecreated(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{})
	ops := []struct {
		name string
		run  func() error
	}{
		{"Tick", func() error { _, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{})); return err }},
		{"Pause", func() error { return l.Pause(ctx0, "ops", "removed lock") }},
		{"Resume", func() error { return l.Resume(ctx0) }},
	}
	for _, op := range ops {
		require.NoError(t, os.Remove(l.lock), "removing %s", l.lock)
		err := op.run()
		require.NoError(t, err, "%s() after the lock file was removed = %v, want nil", op.name, err)
		_, err = os.Stat(l.lock)
		require.NoError(t, err, "the lock file after %s: %v, want it re-created", op.name, err)
	}
	d := mustView(t, l)
	require.Equal(t, Running, d.Status, "status = %s, want running", d.Status)
	require.Equal(t, int64(1), d.TickCount, "tick_count = %d, want 1", d.TickCount)

	// A directory without a state is no loop: nothing is created in it.
	empty := filepath.Join(r.dir, loopsDir, "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	el := r.loop("empty")
	err := el.Pause(ctx0, "ops", "")
	require.ErrorIs(t, err, filetxn.ErrNotFound, "Pause(a directory without state) = %v, want filetxn.ErrNotFound", err)
	_, err = os.Stat(el.lock)
	require.ErrorIs(t, err, os.ErrNotExist, "a lock file appeared in a directory without state: %v", err)
}

// TestCountersNeverOverflow: an operation that would take a counter or a
// sum of spent past what the format holds fails with a
// *filetxn.FormatError whose Key is the counter, inside an *fs.PathError
// naming the state file, and the state left behind decodes. Each case
// starts from a state that Decode accepts.
// Ablation (run): dropping checkInc from beginTick fails the tick_count case
// (Encode's Validate now refuses the wrapped current_tick.n at the key
// current_tick; before it checked tick_count, the marker with n =
// -9223372036854775808 was written); dropping addCost's token check fails
// the tokens case; dropping Tick's pathError fails every tick case (the
// error names no file).
func TestCountersNeverOverflow(t *testing.T) {
	big := Cost{USD: math.MaxFloat64, Tokens: math.MaxInt64 - 1, Seconds: math.MaxFloat64}
	for _, tc := range []struct {
		name   string
		set    func(d *Doc)
		op     func(l *Loop) error
		writes bool // the op may write a running marker before it fails
	}{
		{"tick_count", func(d *Doc) { d.TickCount = math.MaxInt64; d.Epoch.Tick = math.MaxInt64 },
			func(l *Loop) error { _, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{})); return err }, false},
		{"failures_total", func(d *Doc) { d.FailuresTotal = math.MaxInt64 },
			func(l *Loop) error { _, err := l.Tick(ctx0, TriggerManual, failHarness); return err }, true},
		{"consecutive_failures", func(d *Doc) { d.ConsecutiveFailures = math.MaxInt64 },
			func(l *Loop) error { _, err := l.Tick(ctx0, TriggerManual, failHarness); return err }, true},
		{"spent.tokens", func(d *Doc) { d.Spent.Tokens = big.Tokens },
			func(l *Loop) error { _, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{Tokens: 2})); return err }, true},
		{"spent.usd", func(d *Doc) { d.Spent.USD = big.USD },
			func(l *Loop) error { _, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{USD: big.USD})); return err }, true},
		{"spent.seconds", func(d *Doc) { d.Spent.Seconds = big.Seconds },
			func(l *Loop) error {
				_, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{Seconds: big.Seconds}))
				return err
			}, true},
		{"resumed_count", func(d *Doc) {
			d.ResumedCount = math.MaxInt64
			d.Status, d.Halted = Halted, &Event{At: epoch0, Gates: []string{gateMaxTicks}, Reason: "r"}
		}, func(l *Loop) error { return l.Approve(ctx0, "ops", "") }, false},
		{"recovered tick", func(d *Doc) {
			d.FailuresTotal = math.MaxInt64
			d.current = &currentTick{N: d.TickCount + 1, StartedAt: epoch0, PID: os.Getpid()}
		}, func(l *Loop) error { _, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{})); return err }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newTestRoot(t)
			l := mustCreate(t, r, "x", Template{})
			_, err := l.Mutate(ctx0, func(d *Doc) error { tc.set(d); return nil })
			require.NoError(t, err, "Mutate(%s at its largest) = %v, want nil", tc.name, err)
			before := readFile(t, l.state)
			err = tc.op(l)
			key, _, _ := refusal(err)
			want := tc.name
			if want == "recovered tick" {
				want = "failures_total"
			}
			require.Equal(t, want, key, "the operation on %s at its largest = %v, want a *filetxn.FormatError at %s", tc.name, err, want)
			var pe *fs.PathError
			require.ErrorAs(t, err, &pe, "the operation on %s at its largest = %v, want an *fs.PathError", tc.name, err)
			require.Equal(t, l.state, pe.Path, "the operation on %s at its largest = %v, want it to name the state file", tc.name, err)
			after := readFile(t, l.state)
			if !tc.writes {
				require.Equal(t, string(before), string(after), "the state changed although the operation failed")
			}
			_, err = codec{}.Decode(after)
			require.NoError(t, err, "Decode(the state after the overflow) = %v, want nil", err)
			require.Empty(t, mustTicks(t, l), "tick log after the overflow, want no counted line")
		})
	}
}

// TestDecodeRefusesACurrentTickPastTheLargestCount: current_tick.n cannot
// be tick_count+1 when tick_count is the largest int64.
func TestDecodeRefusesACurrentTickPastTheLargestCount(t *testing.T) {
	d, err := New("x", epoch0, Template{})
	require.NoError(t, err)
	d.TickCount = math.MaxInt64
	d.current = &currentTick{N: math.MinInt64, StartedAt: epoch0, PID: 1}
	err = d.validate()
	key, inv, _ := refusal(err)
	require.Equal(t, []string{"current_tick", invCurrentTick}, []string{key, inv}, "Validate(tick_count max, current_tick.n min) = %v, want a *filetxn.FormatError at current_tick", err)
}

// TestDeleteWhoseLockFileWasReplacedPublishesNothing: the loop's lock file
// is replaced after Delete took the lock and before it renames the loop's
// directory away: Delete fails with ErrLockLost, naming the lock file, and
// the loop is still there.
// Ablation (run): Delete without its Current check renames the directory
// away under a lock that guards nothing.
func TestDeleteWhoseLockFileWasReplacedPublishesNothing(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows does not let a lock file that is open be replaced")
	}
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{})
	seam.Set(t, func(p seam.Point, path string) error {
		if p == seam.Check && path == l.state {
			other := filepath.Join(l.dir, "other.lock")
			require.NoError(t, os.WriteFile(other, nil, 0o600))
			require.NoError(t, os.Rename(other, l.lock))
		}
		return nil
	})
	err := l.Delete(ctx0)
	require.ErrorIs(t, err, lock.ErrLockLost, "Delete() with its lock file replaced = %v, want ErrLockLost", err)
	require.ErrorContains(t, err, l.lock, "Delete() = %v, want it to name %s", err, l.lock)
	require.Equal(t, Running, mustView(t, l).Status, "the loop after the refused Delete, want it still there")
}

// TestCurrentTickWithoutpidStartStillDecodes: a state written before
// current_tick.pid_start existed decodes, with an empty pidStart, and
// encodes back byte for byte while unchanged; a changed one writes the key
// (null). A token round-trips; an empty string is refused (null is written
// for "none").
func TestCurrentTickWithoutpidStartStillDecodes(t *testing.T) {
	d, err := New("x", epoch0, Template{})
	require.NoError(t, err)
	require.NoError(t, d.beginTick(epoch0, 42, "linux:boot:7"))
	withToken := d.canonical()
	require.Contains(t, withToken, `"pid_start": "linux:boot:7"`, "canonical current_tick, want pid_start")
	old := []byte(strings.Replace(withToken, `, "pid_start": "linux:boot:7"`, "", 1))
	require.NotContains(t, string(old), "pid_start", "the old-format state still has pid_start")

	od, err := codec{}.Decode(old)
	require.NoError(t, err, "Decode(a state without pid_start) = %v, want nil", err)
	require.Equal(t, "", od.current.pidStart, "pidStart of an old state = %q, want \"\"", od.current.pidStart)
	out, err := codec{}.Encode(od)
	require.NoError(t, err)
	require.Equal(t, string(old), string(out), "Encode(unchanged old state) differs from its bytes")
	od.Template = "changed"
	out, err = codec{}.Encode(od)
	require.NoError(t, err)
	require.Contains(t, string(out), `"pid": 42, "pid_start": null}`, "Encode(changed old state), want pid_start null")

	nd, err := codec{}.Decode([]byte(withToken))
	require.NoError(t, err, "Decode(a state with pid_start) = %v, want nil", err)
	require.Equal(t, "linux:boot:7", nd.current.pidStart, "pidStart = %q, want the token", nd.current.pidStart)
	_, err = codec{}.Decode([]byte(strings.Replace(withToken, `"linux:boot:7"`, `""`, 1)))
	key, _, _ := refusal(err)
	require.Equal(t, "current_tick.pid_start", key, "Decode(pid_start \"\") = %v, want a *filetxn.FormatError at current_tick.pid_start", err)
}

// TestATickOfThisProcessThatLostItsLockIsNotAbandoned: the runner is this
// process. Its harness (in-process, on the Tick's goroutine) removes the
// loop's lock file and waits; meanwhile another goroutine's manual Tick and
// Pause take the lock on the file brought back at the path, find the tick
// still run here, and are refused with lock.ErrLockLost, changing nothing.
// Let go, the tick records itself once, ok with its cost.
// Ablation (run): runningHere returning false (a tick marked by this
// process always counts as left unfinished, as before) makes the second
// Tick count the running tick as abandoned and run, and the first then
// cannot record its own.
func TestATickOfThisProcessThatLostItsLockIsNotAbandoned(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows does not let a lock file that is open be removed")
	}
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "here", Template{})
	inside, release := make(chan struct{}), make(chan struct{})
	type result struct {
		rec TickRecord
		err error
	}
	done := make(chan result, 1)
	go func() {
		rec, err := l.Tick(ctx0, TriggerManual, func(ctx context.Context, run *Run) (Result, error) {
			if err := os.Remove(l.lock); err != nil {
				return Result{}, err
			}
			close(inside)
			<-release
			return Result{Cost: &Cost{USD: 0.5}}, nil
		})
		done <- result{rec, err}
	}()
	testkit.Recv(t, inside, "the harness to remove the lock file")
	state := readFile(t, l.state)

	_, err := l.Tick(ctx0, TriggerManual, mustNotRun(t))
	require.ErrorIs(t, err, lock.ErrLockLost, "Tick(manual) while this process's tick runs = %v, want lock.ErrLockLost", err)
	err = l.Pause(ctx0, "ops", "")
	require.ErrorIs(t, err, lock.ErrLockLost, "Pause while this process's tick runs = %v, want lock.ErrLockLost", err)
	require.Equal(t, string(state), string(readFile(t, l.state)), "state after the refused calls changed")
	require.Empty(t, mustTicks(t, l), "tick log while the tick runs, want empty")

	close(release)
	res := testkit.Recv(t, done, "the tick")
	require.NoError(t, res.err, "Tick whose lock file was removed = %v, want nil (recorded)", res.err)
	require.Equal(t, OK, res.rec.Outcome, "Tick = %+v, want ok", res.rec)
	recs := mustTicks(t, l)
	require.Len(t, recs, 1, "tick log = %+v, want the tick's one line", recs)
	require.Equal(t, 0.5, recs[0].Cost.USD, "the line's cost = %+v, want the harness's", recs[0].Cost)
	d := mustView(t, l)
	require.Equal(t, int64(1), d.TickCount, "tick_count = %d, want 1", d.TickCount)
	require.Nil(t, d.current, "current_tick = %+v, want nil", d.current)
}

// TestANoOpDuringATickOfThisProcessDoesNotWait: a CheckGate that trips no
// gate, from another goroutine of the process whose tick holds the lock,
// answers from its lock-free probe, with a ctx that is already done, as
// one from another process does: the live runner's marker refuses a
// change only once the runner has lost its lock.
// Ablation (run): runnerBusy refusing whenever this process runs the tick
// (without asking whether its lock is still current) makes the probe fail,
// and the call, not to wait, returns a *lock.BusyError.
func TestANoOpDuringATickOfThisProcessDoesNotWait(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "noop", Template{})
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := l.Tick(ctx0, TriggerManual, func(ctx context.Context, run *Run) (Result, error) {
			close(inside)
			<-release
			return Result{Cost: &Cost{}}, nil
		})
		done <- err
	}()
	testkit.Recv(t, inside, "the harness to run")
	ctx, cancel := context.WithCancel(ctx0)
	cancel()
	err := l.CheckGate(ctx)
	close(release)
	require.NoError(t, err, "CheckGate (no gate) during this process's tick = %v, want nil at once", err)
	require.NoError(t, testkit.Recv(t, done, "the tick"), "Tick = got, want nil")
}

// TestALockLostBetweenTheLineAndTheStateCountsTheLineOnce: the loop's lock
// file is removed just before the tick's last write, the state's, after its
// line was appended under the lock (a seam at the engine's check before
// each publish picks the moment). The state write publishes nothing; the
// runner takes the lock again, finds its line in the log and counts it as
// it says, without a second line.
// Ablation (run): record, after the lock was lost, ignoring the line in the
// log (no loggedTick) logs the tick twice.
func TestALockLostBetweenTheLineAndTheStateCountsTheLineOnce(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows does not let a lock file that is open be removed")
	}
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "between", Template{})
	checks := 0
	seam.Set(t, func(p seam.Point, _ string) error {
		// 1 the marker, 2 the line, 3 the state
		if p != seam.Check {
			return nil
		}
		if checks++; checks == 3 {
			if err := os.Remove(l.lock); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	rec, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{USD: 0.75}))
	require.NoError(t, err, "Tick whose lock file went before its state write = %+v, %v, want nil", rec, err)
	recs := mustTicks(t, l)
	require.Len(t, recs, 1, "tick log = %+v, want the tick's one line", recs)
	require.Equal(t, OK, recs[0].Outcome, "tick log = %+v, want one ok line", recs)
	d := mustView(t, l)
	require.Equal(t, int64(1), d.TickCount, "tick_count = %d, want 1", d.TickCount)
	require.Equal(t, 0.75, d.Spent.USD, "spent = %+v, want the tick's cost", d.Spent)
	require.Nil(t, d.current, "current_tick = %+v, want nil", d.current)
}

// TestATickWhoseRecordAfterALostLockPanicsIsNotLeftRunning: the harness
// removes the loop's lock file, so the tick's record finds the lock lost
// and the tick is recorded again under the lock brought back; that record
// panics (a seam hook at its line's lock check). The panic propagates, and
// this process no longer counts the tick as its own running one: a Pause
// then succeeds and the next tick settles the tick as left unfinished.
// Ablation (run): Tick forgetting the tick only after recordLost returns
// (not deferred) leaves it in the registry for good, and the Pause, and
// every later change of the loop in this process, is refused with
// lock.ErrLockLost.
func TestATickWhoseRecordAfterALostLockPanicsIsNotLeftRunning(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows does not let a lock file that is open be removed")
	}
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "panics", Template{})
	checks := 0
	remove := seam.Set(t, func(p seam.Point, path string) error {
		// 1 the marker, 2 the line (the lock file is gone: lost), 3 the
		// line of the record made again
		if p == seam.Check {
			if checks++; checks == 3 {
				panic("the record made again")
			}
		}
		return nil
	})
	func() {
		defer func() {
			require.Equal(t, "the record made again", recover(), "Tick's panic")
		}()
		l.Tick(ctx0, TriggerManual, func(ctx context.Context, run *Run) (Result, error) {
			return Result{Cost: &Cost{}}, os.Remove(l.lock)
		})
	}()
	remove()
	require.NotNil(t, mustView(t, l).current, "current_tick after the panic, want the tick's marker")
	err := l.Pause(ctx0, "ops", "")
	require.NoError(t, err, "Pause after the tick's record panicked = %v, want nil", err)
	require.NoError(t, l.Resume(ctx0))
	rec, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{}))
	require.NoError(t, err, "Tick after the panicked one = %+v, %v, want nil", rec, err)
	recs := mustTicks(t, l)
	require.Len(t, recs, 2, "tick log = %+v, want abandoned 1 then ok 2", recs)
	require.Equal(t, Abandoned, recs[0].Outcome, "tick log = %+v, want abandoned 1 then ok 2", recs)
}

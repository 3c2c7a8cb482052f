//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package loopstate

import (
	"context"
	"errors"
	"fmt"
	"github.com/filetxn/filetxn"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// The tests in this file are the concurrency tests T1..T14 of the format's
// section 10, with real processes: the test binary re-executes itself
// (filetxntest), children line up on a barrier and then on one go-file
// per round, and a tick's harness is this binary again (see runHarness).
// States are written without fsync (WithoutSync) to keep the rounds fast;
// the rename that makes writes atomic is the same.

// rootIn is the loops' root of a test directory shared with its children.
func rootIn(dir string, opts ...filetxn.Option) *Root {
	return mustRoot(NewRoot(filepath.Join(dir, "root"), append([]filetxn.Option{filetxn.WithoutSync()}, opts...)...))
}

// result is what a child recorded about one command: its exit code (see
// exitCode) and error text.
type result struct {
	code int
	msg  string
}

func writeResult(t testing.TB, dir, name string, err error) {
	t.Helper()
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	data := fmt.Sprintf("%d\n%s", exitCode(err), msg)
	if err := atomicfile.WriteFile(filepath.Join(dir, name), []byte(data), 0o644, atomicfile.WithoutSync()); err != nil {
		t.Fatal(err)
	}
}

func readResult(t testing.TB, dir, name string) result {
	t.Helper()
	code, msg, _ := strings.Cut(string(readFile(t, filepath.Join(dir, name))), "\n")
	n, err := strconv.Atoi(code)
	if err != nil {
		t.Fatalf("result %s: %q", name, code)
	}
	return result{n, msg}
}

// waitTight waits for a file with a short poll, so that children released by
// one go-file start within about 100µs of each other.
func waitTight(t testing.TB, path string) {
	t.Helper()
	deadline := time.Now().Add(testkit.Timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// raceChild runs op once per round; round r starts when the parent creates
// go-<r>, and op's outcome is recorded in res-<r>-<index>.
func raceChild(c *testkit.C, rounds int, op func(round int) error) {
	c.Barrier()
	for r := range rounds {
		waitTight(c.T, filepath.Join(c.Dir, fmt.Sprintf("go-%d", r)))
		writeResult(c.T, c.Dir, fmt.Sprintf("res-%d-%d", r, c.Index), op(r))
	}
}

// raceParent drives rounds of n racing children: prepare the round, let
// them go, collect their results, check.
func raceParent(t *testing.T, g *testkit.Group, dir string, n, rounds int, prepare func(round int), check func(round int, res []result)) {
	t.Helper()
	g.Release()
	for r := range rounds {
		prepare(r)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("go-%d", r)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		res := make([]result, n)
		for i := range n {
			name := fmt.Sprintf("res-%d-%d", r, i)
			g.WaitMark(name)
			res[i] = readResult(t, dir, name)
		}
		check(r, res)
		if t.Failed() {
			t.Fatalf("round %d failed", r)
		}
	}
	g.Wait()
}

func roundName(r int) string { return fmt.Sprintf("r%d", r) }

// TestConcurrentApprovesHaveOneWinner is T1: 5 processes approve one halted
// loop at once, 40 rounds. Exactly one exits 0; four exit 1 with "not
// halted"; resumed_count is 1, last_approval is the winner's and the
// window was reset once (at the winner's approval).
// Ablation (run): Loop.mutate deciding on a lock-free snapshot (reading the
// state before taking the lock, as the old runner did) gives 2 to 5 winners
// in most rounds.
func TestConcurrentApprovesHaveOneWinner(t *testing.T) {
	const n, rounds = 5, 40
	if c := testkit.Child(t); c != nil {
		r := rootIn(c.Dir)
		raceChild(c, rounds, func(round int) error {
			l, err := r.Open(ctx0, roundName(round))
			if err != nil {
				return err
			}
			return l.Approve(ctx0, fmt.Sprintf("p%d", c.Index), "go on")
		})
		return
	}
	dir := t.TempDir()
	r := rootIn(dir)
	g := testkit.Start(t, n, dir)
	raceParent(t, g, dir, n, rounds, func(round int) {
		l := mustCreate(t, r, roundName(round), Template{Gates: Gates{MaxTicks: i64(0)}})
		var ge *GuardError
		if err := l.CheckGate(ctx0); !errors.As(err, &ge) || ge.Status != Halted {
			t.Fatalf("CheckGate at max_ticks 0 = %v, want a halt", err)
		}
	}, func(round int, res []result) {
		winner := -1
		for i, rs := range res {
			switch {
			case rs.code == exitOK && winner < 0:
				winner = i
			case rs.code == exitOK:
				t.Errorf("round %d: approves %d and %d both succeeded", round, winner, i)
			case rs.code != exitRefused || !strings.Contains(rs.msg, "not halted"):
				t.Errorf("round %d: approve %d = exit %d %q, want exit 1 not halted", round, i, rs.code, rs.msg)
			}
		}
		d := mustView(t, mustOpen(t, r, roundName(round)))
		if winner < 0 || d.Status != Running || d.ResumedCount != 1 || d.LastApproval == nil ||
			d.LastApproval.By != fmt.Sprintf("p%d", winner) || !d.Epoch.StartedAt.Equal(d.LastApproval.At) {
			t.Errorf("round %d: winner %d, state %s resumed_count %d last_approval %+v", round, winner, d.Status, d.ResumedCount, d.LastApproval)
		}
	})
}

// TestConcurrentPausesHaveOneWinner is T2: 5 processes pause one running
// loop at once, 40 rounds: one exits 0, four exit 1 "not running", and the
// pause record is the winner's.
// Ablation (run): the lock-free decision of T1 gives several winners, the
// pause record of the last writer.
func TestConcurrentPausesHaveOneWinner(t *testing.T) {
	const n, rounds = 5, 40
	if c := testkit.Child(t); c != nil {
		r := rootIn(c.Dir)
		raceChild(c, rounds, func(round int) error {
			l, err := r.Open(ctx0, roundName(round))
			if err != nil {
				return err
			}
			return l.Pause(ctx0, fmt.Sprintf("p%d", c.Index), "race")
		})
		return
	}
	dir := t.TempDir()
	r := rootIn(dir)
	g := testkit.Start(t, n, dir)
	raceParent(t, g, dir, n, rounds, func(round int) {
		mustCreate(t, r, roundName(round), Template{})
	}, func(round int, res []result) {
		var winners []int
		for i, rs := range res {
			if rs.code == exitOK {
				winners = append(winners, i)
			} else if rs.code != exitRefused || !strings.Contains(rs.msg, "not running") {
				t.Errorf("round %d: pause %d = exit %d %q, want exit 1 not running", round, i, rs.code, rs.msg)
			}
		}
		d := mustView(t, mustOpen(t, r, roundName(round)))
		if len(winners) != 1 || d.Status != Paused || d.Paused == nil || d.Paused.By != fmt.Sprintf("p%d", winners[0]) {
			t.Errorf("round %d: winners %v, pause %+v", round, winners, d.Paused)
		}
	})
}

// TestPauseDuringTickWaitsAndBothSurvive is T3, the lost update of the old
// runner: a tick is in progress in another process (its harness, a child
// of that process, blocks) when this process pauses the loop. The pause
// waits (its lock wait is reported while the harness still runs and the
// state is untouched), and once the tick ends it applies on top of the
// tick's result: the loop is paused with the pause record, and tick_count,
// last_tick_at, spent and the tick's log line are the tick's. 5 rounds.
// Ablation (run): Pause taking a lock file of its own (no exclusion with
// the tick) does not wait: the pause lands in the middle of the tick and
// the test fails on "the pause finished while the tick held the lock".
// (Tick recording on its pre-harness copy instead of re-reading is caught
// by T14, where the harness itself writes.)
func TestPauseDuringTickWaitsAndBothSurvive(t *testing.T) {
	const rounds = 5
	if c := testkit.Child(t); c != nil {
		l := mustOpen(t, rootIn(c.Dir), "t3")
		c.Barrier()
		if _, err := l.Tick(ctx0, TriggerManual, testHarness(t, "block", c.Dir)); err != nil {
			t.Fatalf("Tick = %v", err)
		}
		return
	}
	for round := range rounds {
		dir := t.TempDir()
		waiting := make(chan struct{})
		var once sync.Once
		r := rootIn(dir, filetxn.WithLockOptions(lock.WithWaitReport(20*time.Millisecond, func(*lock.BusyError) {
			once.Do(func() { close(waiting) })
		})))
		l := mustCreate(t, r, "t3", Template{})
		runner := testkit.Start(t, 1, dir)
		runner.Release()
		waitTight(t, filepath.Join(dir, "harness-running-1"))
		paused := make(chan error, 1)
		go func() { paused <- l.Pause(ctx0, "ops", "review") }()
		select {
		case <-waiting:
		case err := <-paused:
			t.Fatalf("round %d: the pause finished while the tick held the lock: %v", round, err)
		}
		if d := mustView(t, l); d.Status != Running || d.current == nil {
			t.Fatalf("round %d: while the harness runs: status %s, current_tick %+v", round, d.Status, d.current)
		}
		os.WriteFile(filepath.Join(dir, "harness-release-1"), nil, 0o644)
		if err := <-paused; err != nil {
			t.Fatalf("round %d: pause after the tick = %v", round, err)
		}
		runner.Wait()
		d := mustView(t, l)
		recs := mustTicks(t, l)
		if d.Status != Paused || d.Paused == nil || d.Paused.By != "ops" {
			t.Fatalf("round %d: after tick and pause: status %s, pause %+v, want paused by ops", round, d.Status, d.Paused)
		}
		if d.TickCount != 1 || d.LastTickAt.IsZero() || d.Spent.USD != 0.09 || d.Spent.Tokens != 21000 || d.current != nil {
			t.Fatalf("round %d: the tick's fields were lost: %s", round, d.canonical())
		}
		if len(recs) != 1 || recs[0].Outcome != OK || recs[0].N != 1 || recs[0].Note != "3 failing checks classified" || recs[0].StatusAfter != Running {
			t.Fatalf("round %d: tick log = %+v", round, recs)
		}
	}
}

// TestScheduledTickAfterPauseIsSkipped is T4: a pause lands first (this
// process), then a scheduled tick fires (another process): the tick logs
// skipped/paused and tick_count is unchanged; its harness never runs.
// Ablation (run): dropping the status guard of step 3 fails the tick.
func TestScheduledTickAfterPauseIsSkipped(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		l := mustOpen(t, rootIn(c.Dir), "t4")
		c.Barrier()
		rec, err := l.Tick(ctx0, TriggerSchedule, func(context.Context, *Run) (Result, error) {
			c.Mark("harness-ran")
			return Result{}, nil
		})
		if err != nil || rec.Outcome != Skipped || rec.SkipReason != skipPaused {
			t.Fatalf("scheduled tick on a paused loop = %+v, %v", rec, err)
		}
		return
	}
	dir := t.TempDir()
	l := mustCreate(t, rootIn(dir), "t4", Template{Schedule: Schedule{Enabled: true, Every: "15m"}})
	if err := l.Pause(ctx0, "ops", ""); err != nil {
		t.Fatal(err)
	}
	g := testkit.Start(t, 1, dir)
	g.Release()
	g.Wait()
	d := mustView(t, l)
	recs := mustTicks(t, l)
	if _, err := os.Stat(filepath.Join(dir, "harness-ran")); err == nil {
		t.Fatalf("the harness ran on a paused loop")
	}
	if d.Status != Paused || d.TickCount != 0 || len(recs) != 1 || recs[0].SkipReason != skipPaused || recs[0].N != 0 || recs[0].Trigger != TriggerSchedule || recs[0].PID != g.Pid(0) {
		t.Fatalf("state %s tick_count %d, log %+v", d.Status, d.TickCount, recs)
	}
}

// TestCheckGateAndApproveRace is T5: check-gate and approve race on a
// running loop whose max_ticks gate has tripped (not yet checked), 50
// rounds. Either check-gate came first and approve released the halt with a
// fresh window (running, epoch.tick == tick_count, no gate trips), or
// approve came first and was refused and check-gate halted the loop. No
// round ends running with a tripped gate.
// Ablation (run): Approve not opening a new window (dropping the epoch
// reset) leaves "running with max_ticks tripped" whenever check-gate wins.
func TestCheckGateAndApproveRace(t *testing.T) {
	const rounds = 50
	if c := testkit.Child(t); c != nil {
		r := rootIn(c.Dir)
		raceChild(c, rounds, func(round int) error {
			l, err := r.Open(ctx0, roundName(round))
			if err != nil {
				return err
			}
			if c.Index == 0 {
				return l.CheckGate(ctx0)
			}
			return l.Approve(ctx0, "ops", "")
		})
		return
	}
	dir := t.TempDir()
	r := rootIn(dir)
	g := testkit.Start(t, 2, dir)
	var checkFirst int
	raceParent(t, g, dir, 2, rounds, func(round int) {
		l := mustCreate(t, r, roundName(round), Template{Gates: Gates{MaxTicks: i64(1)}})
		if _, err := l.Mutate(ctx0, func(d *Doc) error { d.TickCount = 1; return nil }); err != nil {
			t.Fatal(err)
		}
	}, func(round int, res []result) {
		d := mustView(t, mustOpen(t, r, roundName(round)))
		check, approve := res[0], res[1]
		switch {
		case check.code == exitHalted && approve.code == exitOK:
			checkFirst++
			if d.Status != Running || d.Epoch.Tick != d.TickCount || len(d.trippedGates(d.UpdatedAt)) != 0 || d.ResumedCount != 1 {
				t.Errorf("round %d: approved after the halt, but state %s epoch.tick %d tick_count %d trips %v",
					round, d.Status, d.Epoch.Tick, d.TickCount, d.trippedGates(d.UpdatedAt))
			}
		case check.code == exitHalted && approve.code == exitRefused:
			if d.Status != Halted || d.ResumedCount != 0 {
				t.Errorf("round %d: approve refused, check-gate halted, but state %s", round, d.Status)
			}
		default:
			t.Errorf("round %d: check-gate %+v, approve %+v", round, check, approve)
		}
		if d.Status == Running && len(d.trippedGates(d.UpdatedAt)) > 0 {
			t.Errorf("round %d: running with a tripped gate: %v", round, d.trippedGates(d.UpdatedAt))
		}
	})
	t.Logf("check-gate won %d of %d rounds", checkFirst, rounds)
}

// TestResumeRefusesAHalt is T6: 5 processes resume a halted loop at once:
// all exit 1 "not paused", the loop stays halted and resumed_count is
// unchanged. 10 rounds.
// Ablation (run): Resume's guard accepting halted releases the halt.
func TestResumeRefusesAHalt(t *testing.T) {
	const n, rounds = 5, 10
	if c := testkit.Child(t); c != nil {
		r := rootIn(c.Dir)
		raceChild(c, rounds, func(round int) error {
			l, err := r.Open(ctx0, roundName(round))
			if err != nil {
				return err
			}
			return l.Resume(ctx0)
		})
		return
	}
	dir := t.TempDir()
	r := rootIn(dir)
	g := testkit.Start(t, n, dir)
	raceParent(t, g, dir, n, rounds, func(round int) {
		l := mustCreate(t, r, roundName(round), Template{Gates: Gates{MaxTicks: i64(0)}})
		l.CheckGate(ctx0)
	}, func(round int, res []result) {
		for i, rs := range res {
			if rs.code != exitRefused || !strings.Contains(rs.msg, "not paused") {
				t.Errorf("round %d: resume %d of a halted loop = %+v, want exit 1 not paused", round, i, rs)
			}
		}
		d := mustView(t, mustOpen(t, r, roundName(round)))
		if d.Status != Halted || d.ResumedCount != 0 || d.Halted == nil {
			t.Errorf("round %d: after resumes of a halt: %s resumed_count %d", round, d.Status, d.ResumedCount)
		}
	})
}

// TestConcurrentCreatesHaveOneWinner is T7: 2 processes create one name at
// once with different templates, 50 rounds: one succeeds, the other exits 1
// "exists"; the state parses and has the winner's template.
// Ablation (run): creating the directory in place (MkdirAll, then the
// files) instead of publishing a staged one with a no-replace rename lets
// both creates succeed, the last writer's state winning.
func TestConcurrentCreatesHaveOneWinner(t *testing.T) {
	const rounds = 50
	if c := testkit.Child(t); c != nil {
		r := rootIn(c.Dir)
		raceChild(c, rounds, func(round int) error {
			_, err := r.Create(ctx0, roundName(round), Template{Name: fmt.Sprintf("tpl-%d", c.Index)}.apply)
			return err
		})
		return
	}
	dir := t.TempDir()
	r := rootIn(dir)
	if err := os.MkdirAll(filepath.Join(r.dir, loopsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	g := testkit.Start(t, 2, dir)
	raceParent(t, g, dir, 2, rounds, func(int) {}, func(round int, res []result) {
		var winners []int
		for i, rs := range res {
			if rs.code == exitOK {
				winners = append(winners, i)
			} else if rs.code != exitRefused || !strings.Contains(rs.msg, "exists") {
				t.Errorf("round %d: create %d = %+v, want exit 1 exists", round, i, rs)
			}
		}
		d, err := mustOpen(t, r, roundName(round)).View(ctx0)
		if err != nil || len(winners) != 1 || d.Template != fmt.Sprintf("tpl-%d", winners[0]) {
			t.Errorf("round %d: winners %v, template %q, %v", round, winners, d.Template, err)
		}
	})
	ents, _ := os.ReadDir(filepath.Join(r.dir, loopsDir))
	if len(ents) != rounds {
		t.Fatalf("loops directory holds %d entries, want %d (staging left behind?)", len(ents), rounds)
	}
}

// TestKilledRunnerLeavesTheLockFreeAndTheTickAbandoned is T8: the runner (a
// child process) is SIGKILLed while its harness (a grandchild holding the
// handed-over lock) runs. The harness dies with it (parent-death signal), so
// the lock is free: an Acquire here that may wait 30s gets it, and a pause
// from this process (not the runner) succeeds. The state parses, with
// current_tick naming the dead runner; the next tick logs the killed tick as
// abandoned and counts it as a failure. 3 rounds. Unlike the other tests,
// the root here writes durably, as a runner does: the running marker is
// still written without fsync (doc.go, Caveats), and the test shows that
// this is enough against a SIGKILL, which ends the process but keeps the
// page cache; only a power loss or kernel crash could lose the marker.
// Ablations (run): no Pdeathsig in harness.setGroup leaves the orphaned harness
// holding the lock (the Acquire runs into its deadline); not writing
// current_tick before the harness loses the abandoned line and the failure.
func TestKilledRunnerLeavesTheLockFreeAndTheTickAbandoned(t *testing.T) {
	const rounds = 3
	durable := func(dir string) *Root { return mustRoot(NewRoot(filepath.Join(dir, "root"))) }
	if c := testkit.Child(t); c != nil {
		l := mustOpen(t, durable(c.Dir), "t8")
		c.Barrier()
		l.Tick(ctx0, TriggerManual, testHarness(t, "block", c.Dir))
		t.Fatalf("the runner survived its tick")
		return
	}
	for round := range rounds {
		dir := t.TempDir()
		l := mustCreate(t, durable(dir), "t8", Template{})
		runner := testkit.Start(t, 1, dir)
		runner.Release()
		waitTight(t, filepath.Join(dir, "harness-running-1"))
		harness, err := strconv.Atoi(string(readFile(t, filepath.Join(dir, "harness-pid-1"))))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lock.TryAcquire(l.lock); !errors.Is(err, lock.ErrWouldBlock) {
			t.Fatalf("round %d: TryAcquire during the tick = %v, want ErrWouldBlock", round, err)
		}
		runner.Kill(0)
		actx, cancel := context.WithTimeout(ctx0, 30*time.Second)
		h, err := lock.Acquire(actx, l.lock)
		cancel()
		if err != nil {
			t.Fatalf("round %d: the lock after the runner was killed: %v (harness pid %d gone: %v)", round, err, harness, processGone(harness))
		}
		h.Release()
		// The harness let the lock go as it exited; it is gone (or a
		// zombie) a moment later.
		if !waitGone(harness, 30*time.Second) {
			t.Fatalf("round %d: harness pid %d outlived its runner", round, harness)
		}
		d := mustView(t, l)
		if d.Status != Running || d.current == nil || d.current.N != 1 || d.current.PID != runner.Pid(0) {
			t.Fatalf("round %d: state after the kill: %s, current_tick %+v", round, d.Status, d.current)
		}
		if err := l.Pause(ctx0, "ops", "after the crash"); err != nil {
			t.Fatalf("round %d: pause after the kill = %v", round, err)
		}
		if err := l.Resume(ctx0); err != nil {
			t.Fatal(err)
		}
		if rec, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{})); err != nil || rec.Outcome != OK {
			t.Fatalf("round %d: tick after the crash = %+v, %v", round, rec, err)
		}
		recs := mustTicks(t, l)
		d = mustView(t, l)
		if len(recs) != 2 || recs[0].Outcome != Abandoned || recs[0].N != 1 || recs[0].PID != runner.Pid(0) || recs[1].Outcome != OK || recs[1].N != 2 {
			t.Fatalf("round %d: tick log = %+v, want abandoned 1 (pid %d) then ok 2", round, recs, runner.Pid(0))
		}
		if d.TickCount != 2 || d.FailuresTotal != 1 || d.current != nil {
			t.Fatalf("round %d: state = %s", round, d.canonical())
		}
	}
}

// TestHungHarnessBusyThenTimeout is T9: a harness hangs (ignoring SIGTERM,
// with a child of its own). A pause from another process with a 200ms lock
// timeout gets a *lock.BusyError naming the runner's pid and purpose (exit 75);
// once the tick's wall timeout (gates.tick_timeout_s 2) has killed the
// harness's whole process group (SIGTERM, then SIGKILL after the grace), a
// pause that waits succeeds. The tick is logged as timeout and counted as a
// failure; both the harness and its child are gone.
// Ablation (run): harness.signalGroup signalling only the harness (p.Signal), not
// its group: the harness's child survives.
func TestHungHarnessBusyThenTimeout(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		l := mustOpen(t, rootIn(c.Dir), "t9")
		c.Barrier()
		rec, err := l.Tick(ctx0, TriggerManual, testHarness(t, "hang", c.Dir))
		if err != nil || rec.Outcome != Timeout {
			t.Fatalf("tick with a hung harness = %+v, %v, want timeout", rec, err)
		}
		return
	}
	dir := t.TempDir()
	l := mustCreate(t, rootIn(dir), "t9", Template{Gates: Gates{TickTimeout: f64(2)}})
	runner := testkit.Start(t, 1, dir)
	runner.Release()
	waitTight(t, filepath.Join(dir, "harness-running-1"))
	short, cancel := context.WithTimeout(ctx0, 200*time.Millisecond)
	err := l.Pause(short, "ops", "")
	cancel()
	var be *lock.BusyError
	if !errors.As(err, &be) || exitCode(err) != exitBusy || be.Holder == nil || be.Holder.PID != runner.Pid(0) ||
		be.Holder.Purpose != "tick t9" || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", runner.Pid(0))) {
		t.Fatalf("pause during a hung tick = %v, want a *lock.BusyError (exit 75) naming pid %d, tick t9", err, runner.Pid(0))
	}
	long, cancel := context.WithTimeout(ctx0, 60*time.Second)
	defer cancel()
	if err := l.Pause(long, "ops", ""); err != nil {
		t.Fatalf("pause once the tick has timed out = %v", err)
	}
	runner.Wait()
	var hpid, leaf int
	fmt.Sscan(string(readFile(t, filepath.Join(dir, "harness-pids"))), &hpid, &leaf)
	if !waitGone(hpid, 30*time.Second) || !waitGone(leaf, 30*time.Second) {
		t.Fatalf("after the timeout: harness %d gone %v, its child %d gone %v", hpid, processGone(hpid), leaf, processGone(leaf))
	}
	d := mustView(t, l)
	recs := mustTicks(t, l)
	if d.Status != Paused || d.TickCount != 1 || d.ConsecutiveFailures != 1 || len(recs) != 1 || recs[0].Outcome != Timeout || recs[0].ExitCode != nil {
		t.Fatalf("after the timeout: %s tick_count %d failures %d, log %+v", d.Status, d.TickCount, d.ConsecutiveFailures, recs)
	}
}

// TestOverlappingScheduledTicksSkipBusy is T10: while a scheduled tick's
// harness (in another process) blocks, a second scheduled tick here returns
// at once with skipped/busy and exit 0, without waiting: the first harness
// is let go only after the second tick has returned.
// Ablation (run): scheduled ticks acquiring with a blocking wait makes the
// second tick wait for the first, whose harness waits for this test, until
// the harness gives up after its bound: the test fails.
func TestOverlappingScheduledTicksSkipBusy(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		l := mustOpen(t, rootIn(c.Dir), "t10")
		c.Barrier()
		if rec, err := l.Tick(ctx0, TriggerSchedule, testHarness(t, "block", c.Dir)); err != nil || rec.Outcome != OK {
			t.Fatalf("first tick = %+v, %v", rec, err)
		}
		return
	}
	dir := t.TempDir()
	l := mustCreate(t, rootIn(dir), "t10", Template{Schedule: Schedule{Enabled: true}})
	first := testkit.Start(t, 1, dir)
	first.Release()
	waitTight(t, filepath.Join(dir, "harness-running-1"))
	rec, err := l.Tick(ctx0, TriggerSchedule, okHarness(Cost{}))
	if err != nil || rec.Outcome != Skipped || rec.SkipReason != skipBusy || exitCode(err) != exitOK || rec.N != 0 {
		t.Fatalf("overlapping scheduled tick = %+v, %v, want skipped/busy, exit 0", rec, err)
	}
	os.WriteFile(filepath.Join(dir, "harness-release-1"), nil, 0o644)
	first.Wait()
	recs := mustTicks(t, l)
	if len(recs) != 2 || recs[0].SkipReason != skipBusy || recs[0].PID != os.Getpid() ||
		!strings.Contains(recs[0].Note, fmt.Sprintf("pid %d", first.Pid(0))) || recs[1].Outcome != OK || recs[1].N != 1 {
		t.Fatalf("tick log = %+v, want skipped/busy (naming pid %d) then ok", recs, first.Pid(0))
	}
	if d := mustView(t, l); d.TickCount != 1 {
		t.Fatalf("tick_count = %d, want 1", d.TickCount)
	}
}

// TestTickLockTimeoutBoundsOnlyTheWait: another process holds the loop's
// lock (as an operator command would, with its purpose). A manual tick
// with WithLockTimeout(300ms), and a ctx without a deadline, gives up after
// the bound with a *lock.BusyError carrying the holder record (pid, purpose;
// exit code 75) and has run no harness and recorded nothing. With a bound
// of 0 it gives up at once, the same way. With a generous bound it waits,
// and runs once the holder lets go. On a free lock, a harness that outlasts
// a 1ms lock timeout still finds its context alive and the tick is ok.
// Ablations (run): passing the lock-wait context to the harness too makes
// the last tick "fail" (runner cancelled); ignoring WithLockTimeout makes
// the first tick wait for the holder until filetxntest's bound fails the test.
func TestTickLockTimeoutBoundsOnlyTheWait(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		l := mustOpen(t, rootIn(c.Dir), "lt")
		h, err := lock.Acquire(ctx0, l.lock, lock.WithPurpose("approve lt"))
		if err != nil {
			t.Fatal(err)
		}
		c.Mark("holding")
		c.Barrier()
		waitTight(t, filepath.Join(c.Dir, "let-go"))
		h.Release()
		return
	}
	dir := t.TempDir()
	waiting := make(chan struct{}, 1)
	report := lock.WithWaitReport(time.Nanosecond, func(*lock.BusyError) {
		select {
		case waiting <- struct{}{}:
		default:
		}
	})
	l := mustCreate(t, rootIn(dir, filetxn.WithLockOptions(report)), "lt", Template{})
	ran := 0
	harness := func(ctx context.Context, run *Run) (Result, error) { ran++; return Result{Cost: &Cost{}}, nil }
	holder := testkit.Start(t, 1, dir)
	holder.WaitMark("holding")
	for _, d := range []time.Duration{300 * time.Millisecond, 0} {
		rec, err := l.Tick(ctx0, TriggerManual, harness, WithLockTimeout(d))
		var be *lock.BusyError
		if !errors.As(err, &be) || exitCode(err) != exitBusy || be.Holder == nil ||
			be.Holder.PID != holder.Pid(0) || be.Holder.Purpose != "approve lt" {
			t.Fatalf("Tick(WithLockTimeout(%v)) on a lock held by pid %d = %+v, %v, want a *lock.BusyError naming it (exit 75)", d, holder.Pid(0), rec, err)
		}
		if d > 0 && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Tick(WithLockTimeout(%v)) = %v, want it to match context.DeadlineExceeded", d, err)
		}
		if rec.Outcome != "" || ran != 0 {
			t.Fatalf("Tick(WithLockTimeout(%v)) gave up with record %+v, harness runs %d, want none", d, rec, ran)
		}
	}
	if st := mustView(t, l); st.TickCount != 0 || st.current != nil || len(mustTicks(t, l)) != 0 {
		t.Fatalf("after ticks that gave up: tick_count %d, current_tick %+v, log %+v", st.TickCount, st.current, mustTicks(t, l))
	}
	select { // a report from the ticks that gave up
	case <-waiting:
	default:
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.Tick(ctx0, TriggerManual, harness, WithLockTimeout(testkit.Timeout))
		done <- err
	}()
	<-waiting
	holder.Release()
	os.WriteFile(filepath.Join(dir, "let-go"), nil, 0o644)
	if err := <-done; err != nil || ran != 1 {
		t.Fatalf("Tick(WithLockTimeout(%v)) behind a holder that lets go = %v, harness runs %d, want ok, 1", testkit.Timeout, err, ran)
	}
	holder.Wait()
	const bound = time.Millisecond
	outlast := func(ctx context.Context, run *Run) (Result, error) {
		time.Sleep(20 * bound)
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("harness context done after the lock was taken: %w", err)
		}
		return Result{Cost: &Cost{}}, nil
	}
	if rec, err := l.Tick(ctx0, TriggerManual, outlast, WithLockTimeout(bound)); err != nil || rec.Outcome != OK {
		t.Fatalf("Tick(WithLockTimeout(%v)) with a harness that outlasts it = %+v, %v, want ok", bound, rec, err)
	}
}

// TestForgedEnvironmentGrantsNothing is T11 and the second half of T14:
// while a runner holds the loop's lock for a tick, processes that are not
// its harness but set NO_LOOP_LOCK=1, LOOPSTATE_NO_LOCK=1, or the lock
// package's hand-over variable naming the lock file (with descriptor 3, or
// a descriptor of the lock file they opened themselves) all wait for the
// lock like anyone else: their pause runs into its 300ms deadline (exit
// 75) and the state is untouched. After the tick, a plain pause succeeds.
// Ablation (run): an env check in locked that skips the lock when
// NO_LOOP_LOCK is set lets the first forger pause the loop mid-tick.
func TestForgedEnvironmentGrantsNothing(t *testing.T) {
	forgeries := []string{"no-loop-lock", "loopstate-no-lock", "handover-fd3", "handover-own-fd"}
	if c := testkit.Child(t); c != nil {
		l := mustOpen(t, rootIn(c.Dir), "t11")
		if c.Args == "runner" {
			c.Barrier()
			if _, err := l.Tick(ctx0, TriggerManual, testHarness(t, "block", c.Dir)); err != nil {
				t.Fatal(err)
			}
			return
		}
		if forgeries[c.Index] == "handover-own-fd" {
			f, err := os.Open(l.lock)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			os.Setenv(handoverEnv, fmt.Sprintf("%d:%s", f.Fd(), devIno(t, l.lock)))
		}
		c.Barrier()
		ctx, cancel := context.WithTimeout(ctx0, 300*time.Millisecond)
		defer cancel()
		writeResult(t, c.Dir, fmt.Sprintf("res-%d", c.Index), l.Pause(ctx, "forger", forgeries[c.Index]))
		return
	}
	dir := t.TempDir()
	l := mustCreate(t, rootIn(dir), "t11", Template{})
	runner := testkit.StartWith(t, 1, dir, testkit.Options{Args: "runner"})
	runner.Release()
	waitTight(t, filepath.Join(dir, "harness-running-1"))
	before := readFile(t, l.state)
	forgers := testkit.StartWith(t, len(forgeries), dir, testkit.Options{
		Args: "forger",
		Env:  []string{"NO_LOOP_LOCK=1", "LOOPSTATE_NO_LOCK=1"},
		Prepare: func(i int, cmd *exec.Cmd) error {
			if forgeries[i] == "handover-fd3" {
				cmd.Env = append(cmd.Env, handoverEnv+"=3:"+devIno(t, l.lock))
			}
			return nil
		},
	})
	forgers.Release()
	forgers.Wait()
	for i, f := range forgeries {
		if rs := readResult(t, dir, fmt.Sprintf("res-%d", i)); rs.code != exitBusy {
			t.Errorf("forger %s: pause during the tick = %+v, want exit 75 (busy)", f, rs)
		}
	}
	if after := readFile(t, l.state); string(after) != string(before) {
		t.Fatalf("a forger changed the state during the tick:\n%s", after)
	}
	os.WriteFile(filepath.Join(dir, "harness-release-1"), nil, 0o644)
	runner.Wait()
	if err := l.Pause(ctx0, "ops", ""); err != nil {
		t.Fatalf("pause after the tick = %v", err)
	}
}

// TestReaderSeesOnlyWholeStates is T12: one process makes 1000 rapid writes
// (pause and resume, alternating) while two others list the loops and read
// the state and tick log without the lock; every read parses and satisfies
// the invariants.
// Ablation (run): writing the state in place (os.WriteFile instead of
// tx.Write's rename) makes readers see empty or partial documents.
func TestReaderSeesOnlyWholeStates(t *testing.T) {
	const writes = 1000
	if c := testkit.Child(t); c != nil {
		r := rootIn(c.Dir)
		l := mustOpen(t, r, "t12")
		c.Barrier()
		if c.Index == 0 {
			for i := range writes {
				var err error
				if i%2 == 0 {
					err = l.Pause(ctx0, "writer", strings.Repeat("x", i%300))
				} else {
					err = l.Resume(ctx0)
				}
				if err != nil {
					t.Fatalf("write %d = %v", i, err)
				}
			}
			c.Mark("writer-done")
			return
		}
		reads := 0
		for {
			_, err := os.Stat(filepath.Join(c.Dir, "writer-done"))
			done := err == nil
			ls, err := r.List(ctx0)
			if err != nil || len(ls) != 1 {
				t.Fatalf("List after %d reads = %+v, %v", reads, ls, err)
			}
			if d, err := ls[0].View(ctx0); err != nil || d.validate() != nil {
				t.Fatalf("listed loop's View after %d reads = %v", reads, err)
			}
			if _, err := l.View(ctx0); err != nil {
				t.Fatalf("View after %d reads = %v", reads, err)
			}
			reads++
			if done {
				break
			}
		}
		c.Mark(fmt.Sprintf("reads-%d-%d", c.Index, reads))
		return
	}
	dir := t.TempDir()
	l := mustCreate(t, rootIn(dir), "t12", Template{})
	g := testkit.Start(t, 3, dir)
	g.Release()
	g.Wait()
	if d := mustView(t, l); d.Status != Running {
		t.Fatalf("after %d alternating writes: %s", writes, d.Status)
	}
	ms, _ := filepath.Glob(filepath.Join(dir, "reads-*"))
	t.Logf("reads during the writes: %v", ms)
}

// TestApproveThenCheckGate is T13 across processes: this process ticks the
// loop until max_ticks (3) halts it; another approves it, and its
// check-gate then exits 0 (new window); its ticks halt the loop again only
// at the third tick after the approve.
// Ablation (run): Approve not resetting the window makes check-gate exit 4.
func TestApproveThenCheckGate(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		l := mustOpen(t, rootIn(c.Dir), "t13")
		c.Barrier()
		writeResult(t, c.Dir, "res-approve", l.Approve(ctx0, "ops", ""))
		writeResult(t, c.Dir, "res-check", l.CheckGate(ctx0))
		for i := 1; i <= 3; i++ {
			rec, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{}))
			if err != nil || (i == 3) != tickHalted(rec) {
				t.Fatalf("tick %d after approve = %+v, %v", i, rec, err)
			}
		}
		return
	}
	dir := t.TempDir()
	l := mustCreate(t, rootIn(dir), "t13", Template{Gates: Gates{MaxTicks: i64(3)}})
	for range 3 {
		l.Tick(ctx0, TriggerManual, okHarness(Cost{}))
	}
	if d := mustView(t, l); d.Status != Halted {
		t.Fatalf("after 3 ticks: %s", d.Status)
	}
	g := testkit.Start(t, 1, dir)
	g.Release()
	g.Wait()
	if rs := readResult(t, dir, "res-approve"); rs.code != exitOK {
		t.Fatalf("approve = %+v", rs)
	}
	if rs := readResult(t, dir, "res-check"); rs.code != exitOK {
		t.Fatalf("check-gate after approve = %+v, want exit 0", rs)
	}
	if d := mustView(t, l); d.Status != Halted || d.TickCount != 6 || d.Halted.Tick != 6 {
		t.Fatalf("after 3 more ticks: %s at %d", d.Status, d.TickCount)
	}
}

// TestHarnessRunsOperatorCommandsOnItsLoop is T14: the harness, a child
// process, runs check-gate and then pause on its own loop while the runner
// holds the lock for the tick. It gets the handed-over lock and finishes
// (check-gate exit 0, pause exit 0) instead of deadlocking on its parent;
// the runner then records the tick on the state as the harness left it, so
// the loop ends paused by the harness with the tick counted. (A process
// that merely sets the hand-over variable gets nothing: see
// TestForgedEnvironmentGrantsNothing.)
// Ablations (run): harness.Command not calling HandOver: the harness's check-gate
// waits for its own parent until its 10s deadline (exit 75). Tick recording
// on the Doc read before the harness: the harness's pause is lost;
// runnerBusy without its exemption for the runner's own lock (the holder
// record it wrote) refuses the harness's check-gate and pause with
// lock.ErrLockLost.
func TestHarnessRunsOperatorCommandsOnItsLoop(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		l := mustOpen(t, rootIn(c.Dir), "t14")
		c.Barrier()
		rec, err := l.Tick(ctx0, TriggerManual, testHarness(t, "ops", c.Dir))
		if err != nil || rec.Outcome != OK || rec.StatusAfter != Paused {
			t.Fatalf("tick whose harness pauses = %+v, %v", rec, err)
		}
		return
	}
	dir := t.TempDir()
	l := mustCreate(t, rootIn(dir), "t14", Template{})
	g := testkit.Start(t, 1, dir)
	g.Release()
	g.Wait()
	ops := strings.SplitN(string(readFile(t, filepath.Join(dir, "harness-ops"))), "\n", 2)
	if ops[0] != "0 0" {
		t.Fatalf("harness's check-gate and pause exit codes = %q (%s), want 0 0", ops[0], ops[1])
	}
	d := mustView(t, l)
	if d.Status != Paused || d.Paused.By != "harness" || d.TickCount != 1 || d.current != nil {
		t.Fatalf("after the tick: %s, pause %+v, tick_count %d", d.Status, d.Paused, d.TickCount)
	}
}

// processGone reports whether pid has exited: it no longer exists, or is a
// zombie nobody has reaped yet.
func processGone(pid int) bool {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
			return s[i+2] == 'Z' || s[i+2] == 'X'
		}
	}
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// waitGone waits (at most bound) until pid has exited.
func waitGone(pid int, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// devIno returns "dev:ino" of the file at path, as handoverEnv spells
// them.
func devIno(t testing.TB, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return fmt.Sprintf("%d:%d", uint64(st.Dev), uint64(st.Ino))
}

// handoverEnv is the variable through which lock.Handle.HandOver names the
// descriptors a child inherits (FILETXN_LOCK_HANDOVER), for the tests that
// forge it.
const handoverEnv = "FILETXN_LOCK_HANDOVER"

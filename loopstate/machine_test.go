package loopstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/filetxn/filetxn"
)

// The state machine drives one loop on disk through random operator
// commands, ticks (ok, failed, crashed), gate changes, clock steps and
// reopens, and checks it against a plain model after every step.

// model is what the loop's state and tick log must be.
type model struct {
	status               Status
	ticks, resumed       int64
	consec, failures     int64
	spent, epochSpent    Cost
	epochTick            int64
	gates                Gates
	schedule             bool
	pausedBy, approvedBy string
	haltGates            []string
	crashed              bool // a tick's runner died: current_tick is set
	log                  []string
	now                  time.Time
}

// trips is the model's own evaluation of the gates.
func (m *model) trips() []string {
	var out []string
	g, window := m.gates, m.ticks-m.epochTick
	if g.MaxTicks != nil && window >= *g.MaxTicks {
		out = append(out, gateMaxTicks)
	}
	if g.MaxConsecutiveFailures != nil && m.consec >= *g.MaxConsecutiveFailures {
		out = append(out, gateMaxConsecutiveFailures)
	}
	if g.MaxFailuresTotal != nil && m.failures >= *g.MaxFailuresTotal {
		out = append(out, gateMaxFailuresTotal)
	}
	if g.BudgetUSD != nil && m.spent.USD-m.epochSpent.USD >= *g.BudgetUSD {
		out = append(out, gateBudgetUSD)
	}
	if g.BudgetTokens != nil && m.spent.Tokens-m.epochSpent.Tokens >= *g.BudgetTokens {
		out = append(out, gateBudgetTokens)
	}
	if g.ExpiresAt != nil && !m.now.Before(*g.ExpiresAt) {
		out = append(out, gateExpiresAt)
	}
	if g.CheckpointEvery != nil && window > 0 && window%*g.CheckpointEvery == 0 {
		out = append(out, gateCheckpointEvery)
	}
	return out
}

type machine struct {
	dir   string
	clock *testClock
	root  *Root
	loop  *Loop
	m     model
}

func newMachine(t *rapid.T, dir string) *machine {
	mc := &machine{dir: dir, clock: newClock()}
	mc.reopen()
	mc.m.now = mc.clock.now()
	g := drawGates(t, mc.m.now, "initial gates")
	sched := rapid.Bool().Draw(t, "schedule enabled")
	if _, err := mc.root.Create(context.Background(), "m", Template{Gates: g, Schedule: Schedule{Enabled: sched}}.apply); err != nil {
		t.Fatalf("Create = %v", err)
	}
	mc.loop = mustOpenRapid(t, mc.root)
	mc.m.status, mc.m.gates, mc.m.schedule = Running, g.clone(), sched
	return mc
}

func mustOpenRapid(t *rapid.T, r *Root) *Loop {
	l, err := r.Open(context.Background(), "m")
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	return l
}

func (mc *machine) reopen() {
	mc.root = mustRoot(NewRoot(mc.dir, filetxn.WithoutSync()))
	mc.root.now = mc.clock.now
	if mc.loop != nil {
		mc.loop, _ = mc.root.Open(context.Background(), "m")
	}
}

func drawGates(t *rapid.T, now time.Time, label string) Gates {
	var g Gates
	opt := func(name string, vals ...int64) *int64 {
		if !rapid.Bool().Draw(t, label+" "+name+" set") {
			return nil
		}
		v := rapid.SampledFrom(vals).Draw(t, label+" "+name)
		return &v
	}
	g.MaxTicks = opt("max_ticks", 1, 2, 4)
	g.MaxConsecutiveFailures = opt("max_consecutive_failures", 1, 2, 3)
	g.MaxFailuresTotal = opt("max_failures_total", 2, 5)
	g.CheckpointEvery = opt("checkpoint_every", 1, 3)
	g.BudgetTokens = opt("budget.tokens", 100, 400)
	if rapid.Bool().Draw(t, label+" budget.usd set") {
		v := rapid.SampledFrom([]float64{0.5, 1, 2}).Draw(t, label+" budget.usd")
		g.BudgetUSD = &v
	}
	if rapid.Bool().Draw(t, label+" expires_at set") {
		v := now.Add(rapid.SampledFrom([]time.Duration{time.Hour, 3 * time.Hour}).Draw(t, label+" expires_at"))
		g.ExpiresAt = &v
	}
	return g
}

var ctxM = context.Background()

// expect checks that err is want (nil, or a sentinel to match).
func expect(t *rapid.T, what string, err, want error) {
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		t.Fatalf("%s = %v, want %v", what, err, want)
	}
}

// expectGuard fails unless err is a *GuardError that gives status.
func expectGuard(t *rapid.T, what string, err error, status Status) {
	var ge *GuardError
	if !errors.As(err, &ge) || ge.Status != status {
		t.Fatalf("%s = %v, want a *GuardError with status %s", what, err, status)
	}
}

// Pause pauses the loop.
func (mc *machine) Pause(t *rapid.T) {
	by := rapid.SampledFrom([]string{"ops", "alice", "ünï \"q\""}).Draw(t, "pause by")
	err := mc.loop.Pause(ctxM, by, "r")
	if mc.m.status != Running {
		expect(t, "Pause", err, ErrStatus)
		return
	}
	expect(t, "Pause", err, nil)
	mc.m.status, mc.m.pausedBy = Paused, by
}

// Resume resumes the loop.
func (mc *machine) Resume(t *rapid.T) {
	err := mc.loop.Resume(ctxM)
	if mc.m.status != Paused {
		expect(t, "Resume", err, ErrStatus)
		return
	}
	expect(t, "Resume", err, nil)
	mc.m.status, mc.m.pausedBy = Running, ""
}

// Approve approves the loop.
func (mc *machine) Approve(t *rapid.T) {
	by := rapid.SampledFrom([]string{"bob", "carol"}).Draw(t, "approve by")
	err := mc.loop.Approve(ctxM, by, "n")
	if mc.m.status != Halted {
		expect(t, "Approve", err, ErrStatus)
		return
	}
	expect(t, "Approve", err, nil)
	mc.m.status, mc.m.haltGates, mc.m.approvedBy = Running, nil, by
	mc.m.resumed++
	mc.m.consec = 0
	mc.m.epochTick, mc.m.epochSpent = mc.m.ticks, mc.m.spent
}

// CheckGate runs check-gate.
func (mc *machine) CheckGate(t *rapid.T) {
	err := mc.loop.CheckGate(ctxM)
	switch mc.m.status {
	case Paused:
		expectGuard(t, "CheckGate", err, Paused)
	case Halted:
		expectGuard(t, "CheckGate", err, Halted)
	default:
		if trips := mc.m.trips(); len(trips) > 0 {
			expectGuard(t, "CheckGate", err, Halted)
			mc.m.status, mc.m.haltGates = Halted, trips
		} else {
			expect(t, "CheckGate", err, nil)
		}
	}
}

// SetGates replaces the thresholds, as a Mutate that sets Gates.
func (mc *machine) SetGates(t *rapid.T) {
	g := drawGates(t, mc.m.now, "new gates")
	_, err := mc.loop.Mutate(ctxM, func(d *Doc) error { d.Gates = g; return nil })
	expect(t, "SetGates", err, nil)
	mc.m.gates = g.clone()
}

// Schedule turns the schedule on or off.
func (mc *machine) Schedule(t *rapid.T) {
	on := rapid.Bool().Draw(t, "schedule on")
	err := mc.loop.SetSchedule(ctxM, on)
	expect(t, "Schedule", err, nil)
	mc.m.schedule = on
}

// Clock moves the time on by 30 minutes.
func (mc *machine) Clock(t *rapid.T) {
	mc.clock.add(30 * time.Minute)
	mc.m.now = mc.clock.now()
}

// Reopen drops every in-memory value and reopens the loop from disk.
func (mc *machine) Reopen(t *rapid.T) {
	mc.reopen()
	data, err := os.ReadFile(mc.loop.state)
	if err != nil {
		t.Fatal(err)
	}
	d, err := codec{}.Decode(data)
	if err != nil {
		t.Fatalf("Decode(state) = %v", err)
	}
	if out, err := (codec{}).Encode(d); err != nil || !bytes.Equal(out, data) {
		t.Fatalf("Encode(Decode(state)) differs from the file")
	}
}

// Tick runs a tick with an in-process harness that succeeds or fails.
func (mc *machine) Tick(t *rapid.T) {
	trigger := rapid.SampledFrom([]Trigger{TriggerManual, TriggerSchedule}).Draw(t, "trigger")
	fail := rapid.Bool().Draw(t, "harness fails")
	cost := Cost{
		USD:     rapid.SampledFrom([]float64{0, 0.25, 0.5}).Draw(t, "usd"),
		Tokens:  rapid.SampledFrom([]int64{0, 100}).Draw(t, "tokens"),
		Seconds: rapid.SampledFrom([]float64{1, 2.5}).Draw(t, "seconds"),
	}
	rec, err := mc.loop.Tick(ctxM, trigger, func(ctx context.Context, run *Run) (Result, error) {
		return Result{Failed: fail, Cost: &cost}, nil
	})
	mc.modelTick(t, trigger, rec, err, func() {
		mc.m.ticks++
		mc.m.spent = mc.m.spent.add(cost)
		outcome := OK
		if fail {
			outcome = Fail
			mc.m.consec++
			mc.m.failures++
		} else {
			mc.m.consec = 0
		}
		if trips := mc.m.trips(); len(trips) > 0 {
			mc.m.status, mc.m.haltGates = Halted, trips
		}
		mc.m.log = append(mc.m.log, fmt.Sprintf("%d:%s", mc.m.ticks, outcome))
	})
}

// Crash runs a tick whose harness panics, as if the runner died: the tick
// stays marked in current_tick.
func (mc *machine) Crash(t *rapid.T) {
	var rec TickRecord
	var err error
	panicked := false
	func() {
		defer func() { panicked = recover() != nil }()
		rec, err = mc.loop.Tick(ctxM, TriggerManual, func(context.Context, *Run) (Result, error) { panic("runner dies") })
	}()
	mc.modelTick(t, TriggerManual, rec, err, func() {
		if !panicked {
			t.Fatalf("the harness ran but did not panic through Tick")
		}
		mc.m.crashed = true
	})
}

// modelTick applies the parts of a tick that do not depend on the harness
// to the model, and run() when the harness runs.
func (mc *machine) modelTick(t *rapid.T, trigger Trigger, rec TickRecord, err error, run func()) {
	m := &mc.m
	if m.crashed {
		m.crashed = false
		m.ticks++
		m.failures++
		m.consec++
		m.log = append(m.log, fmt.Sprintf("%d:abandoned", m.ticks))
	}
	skip := func(reason string) {
		m.log = append(m.log, fmt.Sprintf("%d:skipped/%s", m.ticks, reason))
	}
	switch {
	case m.status == Paused:
		skip(skipPaused)
	case m.status == Halted:
		skip(skipHalted)
	case trigger == TriggerSchedule && !m.schedule:
		skip(skipScheduleDisabled)
	case len(m.trips()) > 0:
		m.status, m.haltGates = Halted, m.trips()
		skip(skipGate)
		expect(t, "Tick over a gate", err, nil)
		if !tickHalted(rec) {
			t.Fatalf("Tick over a gate = %+v, want a record of the halt", rec)
		}
	default:
		before := m.status
		run()
		if m.crashed {
			return
		}
		expect(t, "Tick", err, nil)
		if halts := m.status == Halted && before == Running; halts != tickHalted(rec) {
			t.Fatalf("Tick = %+v, want a record that halts %v", rec, halts)
		}
	}
}

// Check compares the loop with the model:
//  1. the state file parses and keeps every invariant;
//  2. status, counters, spent, window, schedule and records are the model's;
//  3. current_tick is set exactly when a crashed tick is pending;
//  4. the tick log is the model's, line for line.
func (mc *machine) Check(t *rapid.T) {
	d, err := mc.loop.View(ctxM)
	if err != nil {
		t.Fatalf("View = %v", err)
	}
	if err := d.validate(); err != nil {
		t.Fatalf("Validate = %v", err)
	}
	m := &mc.m
	if d.Status != m.status || d.TickCount != m.ticks || d.ResumedCount != m.resumed ||
		d.ConsecutiveFailures != m.consec || d.FailuresTotal != m.failures || d.Spent != m.spent ||
		d.Epoch.Tick != m.epochTick || d.Epoch.Spent != m.epochSpent || d.Schedule.Enabled != m.schedule {
		t.Fatalf("state %+v\nmodel %+v", d, *m)
	}
	if m.status == Paused && d.Paused.By != m.pausedBy {
		t.Fatalf("pause.by = %q, model %q", d.Paused.By, m.pausedBy)
	}
	if m.status == Halted && !slices.Equal(d.Halted.Gates, m.haltGates) {
		t.Fatalf("halt.gates = %v, model %v", d.Halted.Gates, m.haltGates)
	}
	if m.approvedBy != "" && (d.LastApproval == nil || d.LastApproval.By != m.approvedBy) {
		t.Fatalf("last_approval = %+v, model by %q", d.LastApproval, m.approvedBy)
	}
	if (d.current != nil) != m.crashed {
		t.Fatalf("current_tick = %+v, model crashed %v", d.current, m.crashed)
	}
	recs, err := mc.loop.Ticks(ctxM)
	if err != nil {
		t.Fatal(err)
	}
	var log []string
	for _, r := range recs {
		s := fmt.Sprintf("%d:%s", r.N, r.Outcome)
		if r.SkipReason != "" {
			s += "/" + string(r.SkipReason)
		}
		log = append(log, s)
	}
	if !slices.Equal(log, m.log) {
		t.Fatalf("tick log %v\nmodel    %v", log, m.log)
	}
}

func testMachine(t *rapid.T) {
	dir, err := os.MkdirTemp("", "loopstate-machine-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	mc := newMachine(t, dir)
	t.Repeat(rapid.StateMachineActions(mc))
}

// TestStateMachine runs the transitions, ticks and reopens of a loop against
// the model.
func TestStateMachine(t *testing.T) {
	rapid.Check(t, testMachine)
}

// FuzzStateMachine is TestStateMachine as a fuzz target.
func FuzzStateMachine(f *testing.F) {
	f.Fuzz(rapid.MakeFuzz(testMachine))
}

// docMachine drives one Doc in memory through every operation, starting
// from a state that Decode accepts with its counters and sums drawn near
// their largest values, and checks the property that the library never
// produces a state its own decoder refuses: after each operation, either
// the operation failed with one of the package's typed errors and left the
// Doc as it was, or the Doc encodes and the encoding decodes.
type docMachine struct {
	d   *Doc
	now time.Time
}

// drawCount draws a counter: small, huge, or at the very top.
func drawCount(t *rapid.T, label string) int64 {
	return rapid.OneOf(
		rapid.SampledFrom([]int64{0, 1, math.MaxInt64 - 1, math.MaxInt64}),
		rapid.Int64Range(0, 1000),
		rapid.Int64Min(0),
	).Draw(t, label)
}

// drawAmount draws money or seconds: small, or near the largest float64.
func drawAmount(t *rapid.T, label string) float64 {
	return rapid.OneOf(
		rapid.SampledFrom([]float64{0, 0.5, 1e308, math.MaxFloat64}),
		rapid.Float64Range(0, 1e6),
	).Draw(t, label)
}

func drawCost(t *rapid.T, label string) Cost {
	return Cost{USD: drawAmount(t, label+" usd"), Tokens: drawCount(t, label+" tokens"), Seconds: drawAmount(t, label+" seconds")}
}

// pick returns v or 0, as drawn: a window's spent is either all of the
// lifetime's or none of it, which keeps epoch.spent <= spent.
func pick[T int64 | float64](t *rapid.T, label string, v T) T {
	if rapid.Bool().Draw(t, label) {
		return v
	}
	return 0
}

func newDocMachine(t *rapid.T) *docMachine {
	dm := &docMachine{now: epoch0.Add(time.Hour)}
	d, err := New("m", epoch0, Template{Gates: drawGates(t, epoch0, "gates")})
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	d.TickCount = drawCount(t, "tick_count")
	d.ResumedCount = drawCount(t, "resumed_count")
	d.ConsecutiveFailures = drawCount(t, "consecutive_failures")
	d.FailuresTotal = drawCount(t, "failures_total")
	d.Spent = drawCost(t, "spent")
	d.Epoch.Tick = rapid.Int64Range(0, d.TickCount).Draw(t, "epoch.tick")
	d.Epoch.Spent = Cost{
		USD:     pick(t, "epoch.spent.usd", d.Spent.USD),
		Tokens:  pick(t, "epoch.spent.tokens", d.Spent.Tokens),
		Seconds: pick(t, "epoch.spent.seconds", d.Spent.Seconds),
	}
	switch rapid.SampledFrom([]Status{Running, Paused, Halted}).Draw(t, "status") {
	case Paused:
		d.Status, d.Paused = Paused, &Event{At: epoch0, By: "ops", Reason: "r"}
	case Halted:
		d.Status, d.Halted = Halted, &Event{At: epoch0, Gates: []string{gateMaxTicks}, Reason: "r", Tick: d.TickCount}
	}
	if d.TickCount < math.MaxInt64 && rapid.Bool().Draw(t, "tick in progress") {
		d.current = &currentTick{N: d.TickCount + 1, StartedAt: epoch0, PID: 42, pidStart: "linux:boot:7"}
	}
	out, err := codec{}.Encode(d)
	if err != nil {
		t.Fatalf("Encode(the drawn state) = %v", err)
	}
	if dm.d, err = (codec{}).Decode(out); err != nil {
		t.Fatalf("Decode(Encode(the drawn state)) = %v", err)
	}
	return dm
}

// typed reports whether err is one of the package's typed refusals.
func typed(err error) bool {
	var ge *GuardError
	if errors.As(err, &ge) {
		return true
	}
	var fe *filetxn.FormatError
	if errors.As(err, &fe) && fe.Err != nil && strings.HasPrefix(fe.Err.Error(), "overflow: ") {
		return true // a counter the format cannot hold; any other FormatError is a bug of the transition
	}
	for _, s := range []error{ErrStatus, ErrTickInProgress, filetxn.ErrInvalidArgument} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// apply runs op on the Doc and checks the property.
func (dm *docMachine) apply(t *rapid.T, name string, op func(d *Doc) error) {
	before := dm.d.canonical()
	err := op(dm.d)
	if err != nil {
		if !typed(err) {
			t.Fatalf("%s = %v, want a typed error", name, err)
		}
		if after := dm.d.canonical(); after != before {
			t.Fatalf("%s failed (%v) and changed the state:\n%s\nwant\n%s", name, err, after, before)
		}
		return
	}
	out, err := codec{}.Encode(dm.d)
	if err != nil {
		t.Fatalf("Encode(state after %s) = %v, want nil", name, err)
	}
	if dm.d, err = (codec{}).Decode(out); err != nil {
		t.Fatalf("Decode(Encode(state after %s)) = %v, want nil:\n%s", name, err, out)
	}
}

// Pause pauses.
func (dm *docMachine) Pause(t *rapid.T) {
	dm.apply(t, "Pause", func(d *Doc) error { return d.pause(dm.now, "ops", "r") })
}

// Resume resumes.
func (dm *docMachine) Resume(t *rapid.T) {
	dm.apply(t, "Resume", func(d *Doc) error { return d.Resume(dm.now) })
}

// Approve approves.
func (dm *docMachine) Approve(t *rapid.T) {
	dm.apply(t, "Approve", func(d *Doc) error { return d.approve(dm.now, "ops", "n") })
}

// CheckGates runs check-gate.
func (dm *docMachine) CheckGates(t *rapid.T) {
	dm.apply(t, "CheckGates", func(d *Doc) error { _, err := d.checkGates(dm.now); return err })
}

// SetGates replaces the thresholds, as a Mutate that sets Gates.
func (dm *docMachine) SetGates(t *rapid.T) {
	g := drawGates(t, dm.now, "new gates")
	dm.apply(t, "SetGates", func(d *Doc) error { d.Gates = g; return nil })
}

// Schedule turns the schedule on or off.
func (dm *docMachine) Schedule(t *rapid.T) {
	on := rapid.Bool().Draw(t, "schedule on")
	dm.apply(t, "Schedule", func(d *Doc) error { d.setSchedule(dm.now, on); return nil })
}

// BeginTick marks a tick as running.
func (dm *docMachine) BeginTick(t *rapid.T) {
	dm.apply(t, "beginTick", func(d *Doc) error { return d.beginTick(dm.now, 42, "linux:boot:7") })
}

// EndTick records a finished tick with a drawn outcome and cost.
func (dm *docMachine) EndTick(t *rapid.T) {
	outcome := rapid.SampledFrom([]Outcome{OK, Fail, Timeout}).Draw(t, "outcome")
	c := drawCost(t, "cost")
	dm.apply(t, "endTick", func(d *Doc) error { _, err := d.endTick(dm.now, outcome, c); return err })
}

// RecoverTick settles a marked tick as abandoned, and does nothing when
// no tick is marked. It does not t.Skip: under FuzzEveryOperation the fuzz
// input picks the actions, and one that picks only this action while no
// tick runs made rapid fail with "can't find a valid (non-skipped) action".
func (dm *docMachine) RecoverTick(t *rapid.T) {
	if dm.d.current == nil {
		return
	}
	dm.apply(t, "recoverTick", func(d *Doc) error { _, err := d.recoverTick(dm.now, TriggerManual, "gone"); return err })
}

// Clock moves the time on.
func (dm *docMachine) Clock(t *rapid.T) {
	dm.now = dm.now.Add(rapid.SampledFrom([]time.Duration{time.Second, time.Hour, 100 * time.Hour}).Draw(t, "clock step"))
}

// Check: the state keeps every invariant, and its encoding decodes.
func (dm *docMachine) Check(t *rapid.T) {
	if err := dm.d.validate(); err != nil {
		t.Fatalf("Validate = %v", err)
	}
}

// TestEveryOperationLeavesADecodableState: from any state Decode accepts,
// counters and sums at their largest values included, every operation
// gives a typed error that changes nothing or a state Decode accepts.
// Ablation (run): dropping addCost's token check (a sum that wraps
// negative) or checkInc from Approve makes it red, and so does a transition
// that returns a *filetxn.FormatError other than an overflow (pause
// refusing with malformed("pause", ...)), which typed does not take for a
// refusal.
func TestEveryOperationLeavesADecodableState(t *testing.T) {
	rapid.Check(t, testDocMachine)
}

// FuzzEveryOperation is TestEveryOperationLeavesADecodableState as a fuzz
// target.
func FuzzEveryOperation(f *testing.F) {
	f.Fuzz(rapid.MakeFuzz(testDocMachine))
}

func testDocMachine(t *rapid.T) {
	t.Repeat(rapid.StateMachineActions(newDocMachine(t)))
}

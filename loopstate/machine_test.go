package loopstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
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
		out = append(out, GateMaxTicks)
	}
	if g.MaxConsecutiveFailures != nil && m.consec >= *g.MaxConsecutiveFailures {
		out = append(out, GateMaxConsecutiveFailures)
	}
	if g.MaxFailuresTotal != nil && m.failures >= *g.MaxFailuresTotal {
		out = append(out, GateMaxFailuresTotal)
	}
	if g.Budget.USD != nil && m.spent.USD-m.epochSpent.USD >= *g.Budget.USD {
		out = append(out, GateBudgetUSD)
	}
	if g.Budget.Tokens != nil && m.spent.Tokens-m.epochSpent.Tokens >= *g.Budget.Tokens {
		out = append(out, GateBudgetTokens)
	}
	if g.ExpiresAt != nil && !m.now.Before(*g.ExpiresAt) {
		out = append(out, GateExpiresAt)
	}
	if g.CheckpointEvery != nil && window > 0 && window%*g.CheckpointEvery == 0 {
		out = append(out, GateCheckpointEvery)
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
	if _, err := mc.root.Create(context.Background(), "m", Template{Gates: g, Schedule: Schedule{Enabled: sched}}); err != nil {
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
	mc.root = NewRoot(mc.dir, WithoutSync(), WithClock(mc.clock.now))
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
	g.Budget.Tokens = opt("budget.tokens", 100, 400)
	if rapid.Bool().Draw(t, label+" budget.usd set") {
		v := rapid.SampledFrom([]float64{0.5, 1, 2}).Draw(t, label+" budget.usd")
		g.Budget.USD = &v
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

// Pause pauses the loop.
func (mc *machine) Pause(t *rapid.T) {
	by := rapid.SampledFrom([]string{"ops", "alice", "ünï \"q\""}).Draw(t, "pause by")
	err := mc.loop.Pause(ctxM, by, "r")
	if mc.m.status != Running {
		expect(t, "Pause", err, ErrNotRunning)
		return
	}
	expect(t, "Pause", err, nil)
	mc.m.status, mc.m.pausedBy = Paused, by
}

// Resume resumes the loop.
func (mc *machine) Resume(t *rapid.T) {
	err := mc.loop.Resume(ctxM)
	if mc.m.status != Paused {
		expect(t, "Resume", err, ErrNotPaused)
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
		expect(t, "Approve", err, ErrNotHalted)
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
		expect(t, "CheckGate", err, ErrPaused)
	case Halted:
		expect(t, "CheckGate", err, ErrHalted)
	default:
		if trips := mc.m.trips(); len(trips) > 0 {
			expect(t, "CheckGate", err, ErrHalted)
			mc.m.status, mc.m.haltGates = Halted, trips
		} else {
			expect(t, "CheckGate", err, nil)
		}
	}
}

// SetGates replaces the thresholds.
func (mc *machine) SetGates(t *rapid.T) {
	g := drawGates(t, mc.m.now, "new gates")
	expect(t, "SetGates", mc.loop.SetGates(ctxM, g), nil)
	mc.m.gates = g.clone()
}

// Schedule turns the schedule on or off.
func (mc *machine) Schedule(t *rapid.T) {
	on := rapid.Bool().Draw(t, "schedule on")
	var err error
	if on {
		err = mc.loop.EnableSchedule(ctxM)
	} else {
		err = mc.loop.DisableSchedule(ctxM)
	}
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
	data, err := os.ReadFile(mc.loop.StatePath())
	if err != nil {
		t.Fatal(err)
	}
	d, err := Codec{}.Decode(data)
	if err != nil {
		t.Fatalf("Decode(state) = %v", err)
	}
	if out, err := (Codec{}).Encode(d); err != nil || !bytes.Equal(out, data) {
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
		mc.m.spent = mc.m.spent.Add(cost)
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
	skip := func(reason SkipReason) {
		m.log = append(m.log, fmt.Sprintf("%d:skipped/%s", m.ticks, reason))
	}
	switch {
	case m.status == Paused:
		skip(SkipPaused)
	case m.status == Halted:
		skip(SkipHalted)
	case trigger == TriggerSchedule && !m.schedule:
		skip(SkipScheduleDisabled)
	case len(m.trips()) > 0:
		m.status, m.haltGates = Halted, m.trips()
		skip(SkipGate)
		expect(t, "Tick over a gate", err, ErrHalted)
	default:
		before := m.status
		run()
		if m.crashed {
			return
		}
		if m.status == Halted && before == Running {
			expect(t, "Tick that halts", err, ErrHalted)
		} else {
			expect(t, "Tick", err, nil)
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
	if err := d.Validate(); err != nil {
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
	if (d.CurrentTick != nil) != m.crashed {
		t.Fatalf("current_tick = %+v, model crashed %v", d.CurrentTick, m.crashed)
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

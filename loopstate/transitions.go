package loopstate

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/filetxn/filetxn"
)

// The transitions below are pure: they change d in memory and nothing else.
// Each takes the current time, checks its guard on d, and either changes d
// (setting updated_at when anything changed) or returns an error and leaves
// d exactly as it was. The Loop methods of the same names run them under
// the loop's lock; Pause, Resume and Approve are exported for the fn of a
// filetxn.MutateAll, which changes a loop's state (Loop.In) together with
// other files.

// guard returns a *GuardError for op unless d's status is want.
func (d *Doc) guard(op string, want Status) error {
	if d.Status != want {
		return &GuardError{Status: d.Status, loop: d.Name, op: op}
	}
	return nil
}

// checkText refuses, for the operation op, a free-text argument longer than
// maxString, with an error matching filetxn.ErrInvalidArgument.
func checkText(op, what, s string) error {
	if len(s) > maxString {
		return fmt.Errorf("loopstate: %s: %s is %d bytes, at most %d: %w", op, what, len(s), maxString, filetxn.ErrInvalidArgument)
	}
	return nil
}

// Pause moves a running loop to paused, recording who paused it and why,
// as Loop.Pause does, in memory: status paused, pause.at (now, in whole
// seconds, UTC), pause.by and pause.reason, and updated_at; the schedule is
// left alone. It is for the fn of a filetxn.MutateAll (d from Loop.In) or
// of Loop.Mutate. by or reason longer than 4096 bytes is refused with an
// error matching filetxn.ErrInvalidArgument, and a loop that is not running
// with a *GuardError (a pause must not hide a halt); either leaves d as it
// was. It does no I/O and does not block.
func (d *Doc) Pause(now time.Time, by, reason string) error {
	if err := errors.Join(checkText("Pause", "by", by), checkText("Pause", "reason", reason)); err != nil {
		return err
	}
	return d.pause(now, by, reason)
}

// pause is Pause once the lengths of by and reason are checked.
func (d *Doc) pause(now time.Time, by, reason string) error {
	if err := d.guard("pause", Running); err != nil {
		return err
	}
	now = stamp(now)
	d.Status = Paused
	d.Paused = &Event{At: now, By: by, Reason: reason}
	d.UpdatedAt = now
	return nil
}

// Resume moves a paused loop back to running, as Loop.Resume does, in
// memory: pause is cleared, updated_at set to now, resumed_count unchanged
// (only Approve counts). A loop that is not paused is refused with a
// *GuardError and left as it was: only Approve releases a halt. It does no
// I/O and does not block.
func (d *Doc) Resume(now time.Time) error {
	if err := d.guard("resume", Paused); err != nil {
		return err
	}
	now = stamp(now)
	d.Status = Running
	d.Paused = nil
	d.UpdatedAt = now
	return nil
}

// Approve releases a halted loop, as Loop.Approve does, in memory: it runs
// again, resumed_count goes up by one, consecutive_failures is reset,
// last_approval records now, by, note and the tick, and a new gate window
// opens at the current tick_count and spent, so that the gate that halted
// the loop is not still over its threshold. by or note longer than 4096
// bytes is refused with an error matching filetxn.ErrInvalidArgument, a
// loop that is not halted with a *GuardError, and a resumed_count at the
// largest value the format holds with a *filetxn.FormatError naming it;
// each leaves d as it was. It does no I/O and does not block.
func (d *Doc) Approve(now time.Time, by, note string) error {
	if err := errors.Join(checkText("Approve", "by", by), checkText("Approve", "note", note)); err != nil {
		return err
	}
	return d.approve(now, by, note)
}

// approve is Approve once the lengths of by and note are checked.
func (d *Doc) approve(now time.Time, by, note string) error {
	if err := d.guard("approve", Halted); err != nil {
		return err
	}
	if err := checkInc("resumed_count", d.ResumedCount); err != nil {
		return err
	}
	now = stamp(now)
	d.Status = Running
	d.Halted = nil
	d.ResumedCount++
	d.ConsecutiveFailures = 0
	d.LastApproval = &Event{At: now, By: by, Reason: note, Tick: d.TickCount}
	d.Epoch = Epoch{StartedAt: now, Tick: d.TickCount, Spent: d.Spent}
	d.UpdatedAt = now
	return nil
}

// checkGates is check-gate. On a running loop it evaluates every gate at
// now (tick-count and budget gates inside the window; a nil threshold never
// trips); if any trips it halts the loop, with every tripped gate in
// halt.gates (in the fixed order of gateOrder) and their reasons in
// halt.reason, and returns those gates' keys; if none trips it changes
// nothing and returns nil, nil. A halt is a change, not an error, so that
// it is written. On a paused or halted loop it returns a *GuardError (for a
// halted one, with the halt's reasons) and changes nothing.
func (d *Doc) checkGates(now time.Time) ([]string, error) {
	if d.Status != Running {
		e := &GuardError{Status: d.Status, loop: d.Name, op: "check-gate"}
		if d.Halted != nil {
			e.reason = d.Halted.Reason
		}
		return nil, e
	}
	now = stamp(now)
	trips := d.trippedGates(now)
	if len(trips) == 0 {
		return nil, nil
	}
	d.halt(now, trips)
	return gateKeys(trips), nil
}

// setSchedule turns the automatic trigger on or off. It leaves status
// alone, and does nothing if the trigger is so already.
func (d *Doc) setSchedule(now time.Time, on bool) {
	if d.Schedule.Enabled != on {
		d.Schedule.Enabled = on
		d.UpdatedAt = stamp(now)
	}
}

// overflow is the *filetxn.FormatError of a change that would take the
// counter or sum key past the largest value the format holds: the format
// cannot hold the document, which is not written.
func overflow(key, format string, args ...any) error {
	return malformed(key, "overflow: "+format+" is past the largest value the format holds", args...)
}

// checkInc returns an overflow error when the counter key, at v, cannot go
// up by one.
func checkInc(key string, v int64) error {
	if v == math.MaxInt64 {
		return overflow(key, "%d + 1", v)
	}
	return nil
}

// addCost returns a plus b, or an overflow error when a sum would not be a
// finite number (money, seconds) or would pass the largest int64 (tokens).
// Both are valid costs: finite and non-negative.
func addCost(key string, a, b Cost) (Cost, error) {
	sum := a.add(b)
	switch {
	case a.Tokens > math.MaxInt64-b.Tokens:
		return a, overflow(key+".tokens", "%d + %d", a.Tokens, b.Tokens)
	case math.IsInf(sum.USD, 0):
		return a, overflow(key+".usd", "%v + %v", a.USD, b.USD)
	case math.IsInf(sum.Seconds, 0):
		return a, overflow(key+".seconds", "%v + %v", a.Seconds, b.Seconds)
	}
	return sum, nil
}

// checkFailure returns an overflow error when one more failure cannot be
// counted.
func (d *Doc) checkFailure() error {
	return errors.Join(checkInc("failures_total", d.FailuresTotal), checkInc("consecutive_failures", d.ConsecutiveFailures))
}

// recoverTick settles a tick whose runner is gone (why says how it went):
// it counts it as completed and failed and clears current_tick, and returns
// its abandoned log record. It changes nothing and returns an overflow
// error when a failure counter is at its largest value.
func (d *Doc) recoverTick(now time.Time, trigger Trigger, why string) (*TickRecord, error) {
	ct := d.current
	if err := d.checkFailure(); err != nil {
		return nil, err
	}
	now = stamp(now)
	rec := &TickRecord{
		N: ct.N, StartedAt: ct.StartedAt, EndedAt: now, Outcome: Abandoned,
		StatusBefore: d.Status, StatusAfter: d.Status, GatesTripped: []string{},
		Trigger: trigger, PID: ct.PID, Note: why,
	}
	d.redoAbandoned(now)
	return rec, nil
}

// redoAbandoned counts an abandoned tick: the state's half of recoverTick,
// which is all that is left to do when the tick's line is in the log
// already. The caller has checked the counters.
func (d *Doc) redoAbandoned(now time.Time) {
	d.TickCount++
	d.FailuresTotal++
	d.ConsecutiveFailures++
	d.current = nil
	d.UpdatedAt = stamp(now)
}

// beginTick marks tick tick_count+1 as running in process pid, whose start
// token is start. A tick_count at its largest value is refused with an
// overflow error.
func (d *Doc) beginTick(now time.Time, pid int, start string) error {
	if err := d.guard("tick", Running); err != nil {
		return err
	}
	if d.current != nil {
		return fmt.Errorf("%w: tick %d started at %s by pid %d", ErrTickInProgress,
			d.current.N, d.current.StartedAt.Format(timeLayout), d.current.PID)
	}
	if err := checkInc("tick_count", d.TickCount); err != nil {
		return err
	}
	now = stamp(now)
	d.current = &currentTick{N: d.TickCount + 1, StartedAt: now, PID: pid, pidStart: start}
	d.UpdatedAt = now
	return nil
}

// endTick records a finished tick (ok, fail or timeout) that cost c, then
// evaluates the gates if the loop is still running and halts it if any
// trips; it returns the gates that tripped. A counter or a sum of spent
// that would overflow gives an overflow error, and d is left as
// it was.
func (d *Doc) endTick(now time.Time, outcome Outcome, c Cost) ([]trip, error) {
	if err := checkInc("tick_count", d.TickCount); err != nil {
		return nil, err
	}
	if outcome != OK {
		if err := d.checkFailure(); err != nil {
			return nil, err
		}
	}
	spent, err := addCost("spent", d.Spent, c)
	if err != nil {
		return nil, err
	}
	now = stamp(now)
	d.TickCount++
	d.Spent = spent
	d.LastTickAt = now
	if outcome == OK {
		d.ConsecutiveFailures = 0
	} else {
		d.ConsecutiveFailures++
		d.FailuresTotal++
	}
	d.current = nil
	d.UpdatedAt = now
	if d.Status != Running {
		return nil, nil
	}
	trips := d.trippedGates(now)
	if len(trips) > 0 {
		d.halt(now, trips)
	}
	return trips, nil
}

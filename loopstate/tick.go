package loopstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/internal/fsys"
	"github.com/filetxn/filetxn/internal/proc"
	"github.com/filetxn/filetxn/lock"
)

// A Harness does the work of one tick. It runs while the loop's lock is held,
// with ctx bounded by the tick's wall timeout (gates.tick_timeout_s); it must
// return when ctx is done. An error means the harness could not do its work
// (the tick counts as failed, with the error as its note); a Result with
// Failed set is a tick that ran and failed. Package harness's Command is a
// harness that runs a child process.
type Harness func(ctx context.Context, run *Run) (Result, error)

// Run is what a harness is told about its tick.
type Run struct {
	Loop *Loop // the loop ticked
	N    int64 // this tick's number: tick_count + 1
	// Lock is the loop's lock, held by the runner for the whole tick. It is
	// valid only until the harness returns. Hand it to a child process with
	// Lock.HandOver so that the child can run operator commands on the loop
	// (check-gate, pause) without deadlocking on its own parent. It is nil
	// for a loop kept on a backend, whose lock is no file to hand over.
	Lock *lock.Handle
	// Remaining is what is left of each budget in the current window, so
	// that the harness can bound its own spending: the gates only stop the
	// next tick. A budget without a limit leaves the largest value
	// (math.Inf(1) for USD and Seconds, math.MaxInt64 for Tokens).
	Remaining Cost
}

// Result is what a harness reports.
type Result struct {
	Failed   bool   // the tick failed; false (with a nil error) is ok
	ExitCode *int   // the harness process's exit code, if it had one
	Cost     *Cost  // what the tick cost; nil means unknown: zero, with the wall time as seconds
	Note     string // a short summary; the log keeps its first 500 bytes
}

// Tick runs one tick of the loop under its lock, held from before the state
// is read until after the tick's line is logged (see WithCommit); trigger
// says how it waits (see TriggerSchedule, TriggerManual). It settles a tick left marked in
// current_tick (a runner gone, or in this process and no longer running it:
// counted failed and logged abandoned, or as its logged line says; a runner
// still running: see ErrTickInProgress); logs a skipped line if the loop is
// not running, a scheduled tick finds the schedule off, or a gate trips and
// halts it; if the log cannot take the line, fails with an error matching
// atomicfile.ErrNotRegular or fs.ErrPermission, writing nothing; marks
// current_tick (see Caveats); runs fn, ctx bounded by gates.tick_timeout_s
// (then timeout) and on a backend cancelled when the client sees its lease
// end (between the server's end and that, it may overlap a harness of
// another's); counts the tick; appends the line, writes the state. With a
// nil error the record is the tick's line, a halt included; with an error
// it is zero and nothing recorded (but see WithCommit): an overflow
// (a *filetxn.FormatError in an *fs.PathError), a Tick inside a harness of
// the same loop (ErrTickInProgress), a lock lost before the harness
// (lock.ErrLockLost). A lock lost after it is taken again (up to 30 s,
// whatever ctx) to log the tick, noted "lock lost during the tick", else
// the tick is left marked, as by a panic in fn (released, propagated).
func (l *Loop) Tick(ctx context.Context, trigger Trigger, fn Harness, opts ...TickOption) (TickRecord, error) {
	if trigger != TriggerSchedule && trigger != TriggerManual {
		return TickRecord{}, fmt.Errorf("loopstate: Tick: trigger %q: want %q or %q: %w", trigger, TriggerSchedule, TriggerManual, filetxn.ErrInvalidArgument)
	}
	if fn == nil {
		return TickRecord{}, fmt.Errorf("loopstate: Tick: nil harness: %w", filetxn.ErrInvalidArgument)
	}
	var o tickOptions
	for _, opt := range opts {
		opt(&o)
	}
	var rec TickRecord
	noWait := trigger == TriggerSchedule
	// The wait for the lock gets its own context; the harness, and on a
	// backend every request once the lock is held, gets ctx. A bound of 0
	// or less leaves it done at once: one try, on files as on a backend.
	wctx := ctx
	if o.lockTimeout != nil && !noWait {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, *o.lockTimeout)
		defer cancel()
	}
	if o.commit != nil {
		if err := l.checkCommit(o.commit); err != nil {
			return TickRecord{}, err
		}
	}
	var lost *endedTick  // a tick that ran and found its lock lost: recorded once the lock is held again
	var ended *endedTick // a tick that ran, to record in its commit (WithCommit) once the lock is let go
	forget := func() {}  // forgets that this process runs the tick it marked
	ran := false         // the harness ran: a busy lock after it is not the loop's, to skip on
	harness := func(ctx context.Context, run *Run) (Result, error) {
		ran = true
		return fn(ctx, run)
	}
	err := l.locked(wctx, "tick", noWait, func(tx *filetxn.Tx) error {
		defer func() {
			if lost == nil && ended == nil {
				forget() // before the lock is let go: the next holder may look
			}
		}()
		var err error
		rec, err = l.tick(ctx, tx, trigger, harness, o.commit, &lost, &ended, &forget)
		return err
	})
	switch {
	case lost != nil:
		defer forget() // after the record, even one that panics
		rec, err = l.recordLost(ctx, lost, err)
	case ended != nil:
		defer forget()
		rec, err = l.recordCommit(ctx, ended, o.commit)
	}
	var busy *lock.BusyError
	if noWait && !ran && errors.As(err, &busy) && errors.Is(err, lock.ErrWouldBlock) {
		return l.skipBusy(ctx, busy)
	}
	return rec, l.pathError("Encode", err)
}

// A TickOption configures one Tick.
type TickOption func(*tickOptions)

type tickOptions struct {
	lockTimeout *time.Duration // nil: the wait is bounded by ctx alone
	commit      *tickCommit    // WithCommit's
}

// WithLockTimeout bounds a TriggerManual tick's wait for the loop's lock to
// d, apart from the ctx given to Tick, which still bounds the wait too and
// goes on bounding the harness. When d passes first, Tick returns a
// *lock.BusyError naming the holder, matching context.DeadlineExceeded,
// and runs and records nothing; a d of 0 or less tries the lock once and
// fails so at once if it is busy, on files as on a backend. Once the lock
// is taken, d no longer
// matters: a harness may run for as long as its own timeout allows. A
// TriggerSchedule tick never waits, whatever d. (It is looprunner's
// -lock-timeout.)
func WithLockTimeout(d time.Duration) TickOption {
	return func(o *tickOptions) { o.lockTimeout = &d }
}

// tick is Tick's work under the lock. Once it has marked its tick it sets
// *forget to forget that this process runs it, and when the tick's record
// finds the lock lost it sets *lost to what the tick is owed.
func (l *Loop) tick(ctx context.Context, tx *filetxn.Tx, trigger Trigger, fn Harness, commit *tickCommit, lost, ended **endedTick, forget *func()) (TickRecord, error) {
	d, data, err := l.readIn(ctx, tx)
	if err != nil {
		return TickRecord{}, err
	}
	now, pid, self := l.now(), os.Getpid(), proc.Self()
	var pending []*TickRecord // log lines owed for the ticks this one settles
	if ct := d.current; ct != nil {
		if h := tx.Lock(); h != nil && h.Borrowed() {
			return TickRecord{}, fmt.Errorf("%w: tick %d (runner pid %d)", ErrTickInProgress, ct.N, ct.PID)
		}
		why, gone := l.runnerGone(ct)
		if !gone {
			return l.runnerAlive(ctx, tx, d, trigger, now, pid)
		}
		rec, err := l.settleAbandoned(tx, d, now, trigger, why)
		if err != nil {
			return TickRecord{}, err
		}
		if rec != nil {
			pending = append(pending, rec)
		}
	}
	before := d.Status

	skip := func(reason string, trips []trip) (TickRecord, error) {
		rec := TickRecord{
			N: d.TickCount, StartedAt: now, EndedAt: now, Outcome: Skipped, SkipReason: reason,
			StatusBefore: before, StatusAfter: d.Status, GatesTripped: gateKeys(trips),
			Trigger: trigger, PID: pid,
		}
		if err := l.commit(ctx, tx, d, data, append(pending, &rec)); err != nil {
			return TickRecord{}, err
		}
		return rec, nil
	}
	switch {
	case d.Status == Paused:
		return skip(skipPaused, nil)
	case d.Status == Halted:
		return skip(skipHalted, nil)
	case trigger == TriggerSchedule && !d.Schedule.Enabled:
		return skip(skipScheduleDisabled, nil)
	}
	if trips := d.trippedGates(now); len(trips) > 0 {
		d.halt(now, trips)
		return skip(skipGate, trips)
	}

	// The tick's line is appended after the harness: a log that cannot take
	// it (not a regular file, read-only) fails the tick now, before the
	// marker is written and the harness does work that could not be
	// recorded.
	if l.root.b == nil {
		if err := fsys.Check("Tick", l.log); err != nil {
			return TickRecord{}, err
		}
	}
	if err := d.beginTick(now, pid, self); err != nil {
		// A tick settled above is owed its line and its count all the same.
		return TickRecord{}, errors.Join(err, l.commit(ctx, tx, d, data, pending))
	}
	// The running marker is written WithoutDirSync: its bytes are fsynced before
	// the rename, so the state file is never torn or empty, but the
	// directory is not, so a power loss may undo it. It guards against the
	// death of the runner's process during the harness, which cannot undo it
	// (T8 kills the runner and finds the marker); after a power loss that
	// tick is not counted as abandoned, and its cost was never recorded in
	// any case. A write that carries a recovered tick's counts stays
	// durable.
	var mark []atomicfile.Option
	if len(pending) == 0 {
		mark = append(mark, atomicfile.WithoutDirSync())
	}
	if err := l.commit(ctx, tx, d, data, pending, mark...); err != nil {
		return TickRecord{}, err
	}
	marker := *d.current
	*forget = l.markRunning(&marker, tx.Lock())
	n, timeout := d.current.N, d.Gates.timeout()

	run := &Run{Loop: l, N: n, Lock: tx.Lock(), Remaining: d.remaining()}
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel() // a harness that panics: the watch ends too
	stop := cancelOnEnd(hctx, cancel, tx.Held())
	start := time.Now()
	res, herr := fn(hctx, run)
	wall := time.Since(start)
	timedOut := errors.Is(hctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	cancel()
	stop()
	outcome, note, cost := settle(res, herr, timedOut, ctx.Err(), timeout, wall)
	e := &endedTick{marker: marker, trigger: trigger, before: before, outcome: outcome, note: note, cost: cost, exitCode: res.ExitCode}
	if commit != nil && l.root.b != nil {
		// The lock is kept: it is the runner's liveness there. One lost
		// before even the tick alone could be recorded is taken again to
		// record it (counted failed), as any tick's.
		rec, err := l.recordCommitHeld(ctx, tx, e, commit)
		if err != nil && rec.Outcome == "" && errors.Is(err, lock.ErrLockLost) {
			f, why := failed(e, err)
			f.note = joinNote(why, f.note)
			*lost = f
		}
		return rec, err
	}
	if commit != nil {
		*ended = e // recorded by recordCommit, with every lock of its commit
		return TickRecord{}, nil
	}
	rec, err := l.record(ctx, tx, e, "")
	if errors.Is(err, lock.ErrLockLost) {
		*lost = e
	}
	return rec, err
}

// cancelOnEnd calls cancel when the hold h ends, if h tells (a Held with
// Done: a backend's lock whose lease lapsed), so that a harness stops once
// another session may take the lock and count the tick abandoned. The
// returned stop, called once ctx is done, ends the watch.
func cancelOnEnd(ctx context.Context, cancel context.CancelFunc, h filetxn.Held) (stop func()) {
	e, ok := h.(interface{ Done() <-chan struct{} })
	if !ok {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-e.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	return func() { <-done }
}

// An endedTick is a tick whose harness has run: what its record needs.
type endedTick struct {
	marker   currentTick // the current_tick it wrote
	trigger  Trigger
	before   Status // the status before it
	outcome  Outcome
	note     string
	cost     Cost
	exitCode *int
}

// lostNote starts the note of a tick recorded after its lock was lost.
const lostNote = "lock lost during the tick (its lock file was removed or replaced, or its lease expired); recorded once the lock was held again"

// relockTimeout bounds recordLost's wait for the lock. Every other holder
// of the lock taken on the new lock file refuses at once while the
// runner's tick is marked, so the wait is short unless the lock is held
// by hand.
const relockTimeout = 30 * time.Second

// record counts the tick e and logs it, under the lock: step 7 to 9 of
// Tick. The harness may have changed the state through the handed-over
// lock, so it records on what the file says now, never on the copy from
// before the harness ran. again, when not "", is a record made after the
// lock was let go (recordLost, recordCommit), and the note it starts: the
// state must still carry e's marker (every other change was refused while
// the runner ran), and a line for the tick that is in the log already
// (appended before the lock was found lost at the state's write) is
// counted as it says, not logged twice.
func (l *Loop) record(ctx context.Context, tx *filetxn.Tx, e *endedTick, again string) (TickRecord, error) {
	// The harness has run: its record is not dropped because the runner
	// was cancelled (a backend's requests take a context).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), relockTimeout)
	defer cancel()
	d, data, err := l.readIn(ctx, tx)
	if err != nil {
		return TickRecord{}, err
	}
	note := e.note
	if again != "" {
		if !e.marker.same(d.current) {
			return TickRecord{}, fmt.Errorf("loopstate: tick %s: tick %d, whose lock was lost, is no longer marked in %s: not recorded (%w)", l.name, e.marker.N, l.state, lock.ErrLockLost)
		}
		logged, err := l.loggedTick(tx, d.current)
		if err != nil {
			return TickRecord{}, err
		}
		if logged != nil {
			if _, err := d.endTick(logged.EndedAt, logged.Outcome, logged.Cost); err != nil {
				return TickRecord{}, err
			}
			return *logged, l.commit(ctx, tx, d, data, nil)
		}
		note = joinNote(again, note)
	}
	rec, err := l.count(d, e, note)
	if err != nil {
		return TickRecord{}, err
	}
	if err := l.commit(ctx, tx, d, data, []*TickRecord{&rec}); err != nil {
		return TickRecord{}, err
	}
	return rec, nil
}

// count counts the ended tick e in d, now, and returns its line, with note.
func (l *Loop) count(d *Doc, e *endedTick, note string) (TickRecord, error) {
	end := l.now()
	trips, err := d.endTick(end, e.outcome, e.cost)
	if err != nil {
		return TickRecord{}, err
	}
	return TickRecord{
		N: d.TickCount, StartedAt: e.marker.StartedAt, EndedAt: end, Outcome: e.outcome,
		StatusBefore: e.before, StatusAfter: d.Status, ExitCode: e.exitCode, Cost: e.cost,
		GatesTripped: gateKeys(trips), Trigger: e.trigger, PID: e.marker.PID, Note: note,
	}, nil
}

// recordLost records the tick e, whose record found the loop's lock lost
// (lostErr), once it holds the lock again: it takes the lock on the lock
// file now at the path (bringing back one that was removed), waiting up to
// relockTimeout whatever ctx says (the harness has run: its record must
// not be dropped because the runner was cancelled), and records the tick
// with lostNote in its note. Meanwhile every other change of the loop is
// refused (runnerBusy), so the tick is recorded once, and never also
// counted abandoned. If the lock cannot be had, or is lost again, it
// returns lostErr joined with why, recording nothing: the tick stays
// marked, to be counted abandoned once this process has exited.
func (l *Loop) recordLost(ctx context.Context, e *endedTick, lostErr error) (TickRecord, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), relockTimeout)
	defer cancel()
	rec, err := l.recordLocked(rctx, e, lostNote)
	if err != nil {
		return TickRecord{}, errors.Join(lostErr, err)
	}
	return rec, nil
}

// recordLocked takes the loop's lock (waiting as ctx lets it) and records
// the tick e under it, again, with the note again.
func (l *Loop) recordLocked(ctx context.Context, e *endedTick, again string) (TickRecord, error) {
	var rec TickRecord
	err := l.locked(ctx, "tick", false, func(tx *filetxn.Tx) error {
		var err error
		rec, err = l.record(ctx, tx, e, again)
		return err
	})
	return rec, err
}

// commit publishes what a step of a tick decided: it encodes d (a Doc the
// codec refuses publishes nothing), appends recs to the tick log, then
// replaces the state unless d encodes to old. The lines go first so that
// no tick is ever counted without its line: a runner that dies between the
// two leaves its line and its current_tick, and the next tick finds the
// line and counts what it says (settleAbandoned) instead of logging the
// tick again. Both writes go through the engine, which publishes nothing
// once the loop's lock file is no longer the one held (lock.ErrLockLost).
func (l *Loop) commit(ctx context.Context, tx *filetxn.Tx, d *Doc, old []byte, recs []*TickRecord, opts ...atomicfile.Option) error {
	out, err := l.codec().Encode(d)
	if err != nil {
		return &fs.PathError{Op: "Encode", Path: l.state, Err: err}
	}
	if l.root.b != nil {
		return l.remoteCommit(ctx, tx, out, old, recs)
	}
	if err := l.appendLog(ctx, tx, recs...); err != nil {
		return err
	}
	if bytes.Equal(out, old) {
		return nil
	}
	_, err = tx.Write(l.state, out, opts...)
	return err
}

// runnerGone reports whether the runner of the tick that ct marks is gone,
// and how. A runner that is this process is gone when this process no
// longer runs that tick (markRunning): it ended without settling (its
// harness panicked, or a write failed). One that it still runs has lost
// its lock file, as a live runner in another process has.
func (l *Loop) runnerGone(ct *currentTick) (string, bool) {
	if ct.self() {
		if _, ok := l.runningHere(ct); ok {
			return "", false
		}
		return fmt.Sprintf("runner pid %d (this process) left tick %d unfinished", ct.PID, ct.N), true
	}
	if l.root.b != nil {
		// The lock is the runner's liveness there: this tick holds it, so
		// the runner lost it (its lease expired) and is fenced.
		return fmt.Sprintf("runner pid %d lost the loop's lock during tick %d", ct.PID, ct.N), true
	}
	if goneSoon(ct.PID, ct.pidStart) {
		return fmt.Sprintf("runner pid %d died during tick %d", ct.PID, ct.N), true
	}
	return "", false
}

// dyingRunner bounds how long goneSoon waits for a runner to finish dying.
const dyingRunner = time.Second

// goneSoon is proc.Gone, asked again for up to dyingRunner while the
// answer is no. A runner killed while it holds the loop's lock lets go of
// the lock when the kernel closes its descriptors, a moment before it
// becomes a zombie, which is when proc.Gone sees it gone; a tick that takes
// the lock in that moment would find a dead runner "still running" and
// refuse (the torture test met it, 1 run in 2). Since this tick holds the
// lock, the marked runner is dying, or has lost its lock file (then the
// wait only delays the refusal).
func goneSoon(pid int, start string) bool {
	deadline := time.Now().Add(dyingRunner)
	for wait := 50 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		if proc.Gone(pid, start) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
	}
}

// runnerAlive answers a tick that holds the loop's lock and yet finds the
// marked tick's runner alive: the runner's lock file was replaced or
// removed while it held it, and it is still running its harness. The tick
// is not counted as abandoned; a scheduled trigger logs skipped/busy, as
// for a busy lock, and a manual one is refused.
func (l *Loop) runnerAlive(ctx context.Context, tx *filetxn.Tx, d *Doc, trigger Trigger, now time.Time, pid int) (TickRecord, error) {
	ct := d.current
	what := fmt.Sprintf("tick %d is still running in pid %d (since %s)", ct.N, ct.PID, ct.StartedAt.Format(timeLayout))
	if trigger == TriggerSchedule {
		rec := TickRecord{
			N: d.TickCount, StartedAt: now, EndedAt: now, Outcome: Skipped, SkipReason: skipBusy,
			StatusBefore: d.Status, StatusAfter: d.Status, GatesTripped: []string{},
			Trigger: trigger, PID: pid, Note: what,
		}
		if err := l.appendLog(ctx, tx, &rec); err != nil {
			return TickRecord{}, err
		}
		return rec, nil
	}
	return TickRecord{}, &liveRunnerError{op: "tick", loop: l.name, lock: l.lock, ct: *ct, wouldBlock: true}
}

// settleAbandoned settles the tick that current_tick marks, whose runner is
// gone. When the tick's line is in the log already (the runner died
// between appending it and writing the state), it counts what the line
// says and owes no line; otherwise it counts the tick as abandoned and
// returns the line owed. Either way it changes nothing on an error
// (an overflow, or a tick log that cannot be read).
func (l *Loop) settleAbandoned(tx *filetxn.Tx, d *Doc, now time.Time, trigger Trigger, why string) (*TickRecord, error) {
	logged, err := l.loggedTick(tx, d.current)
	switch {
	case err != nil:
		return nil, err
	case logged == nil:
		return d.recoverTick(now, trigger, why)
	case logged.Outcome == Abandoned:
		if err := d.checkFailure(); err != nil {
			return nil, err
		}
		d.redoAbandoned(now)
		return nil, nil
	}
	_, err = d.endTick(logged.EndedAt, logged.Outcome, logged.Cost)
	return nil, err
}

// loggedTick returns the tick log's line for the tick ct marks, or nil. It
// is the last counted line (outcome other than skipped), if that one has
// ct's number, runner and start: only skipped lines can follow it, since
// the next tick to be counted settles this one first. It reads the log
// backwards and stops at the first counted line.
func (l *Loop) loggedTick(tx *filetxn.Tx, ct *currentTick) (*TickRecord, error) {
	if l.root.b != nil {
		return nil, nil // a tick's line and its count are one commit there
	}
	data, err := tx.Read(l.log)
	if err != nil {
		return nil, err
	}
	for len(data) > 0 {
		line := data
		if i := bytes.LastIndexByte(bytes.TrimRight(data, "\n"), '\n'); i >= 0 {
			line, data = data[i+1:], data[:i+1]
		} else {
			data = nil
		}
		r, err := parseRecord(bytes.TrimSpace(line))
		if err != nil || r.Outcome == Skipped {
			continue // a torn last line, or a skip, which counts nothing
		}
		if r.N == ct.N && r.PID == ct.PID && r.StartedAt.Equal(ct.StartedAt) {
			return &r, nil
		}
		return nil, nil
	}
	return nil, nil
}

// settle decides a tick's outcome, note and cost from what the harness
// returned.
func settle(res Result, herr error, timedOut bool, cancelled error, timeout, wall time.Duration) (Outcome, string, Cost) {
	outcome, note := OK, res.Note
	switch {
	case timedOut:
		outcome, note = Timeout, joinNote(fmt.Sprintf("timed out after %s", timeout), note)
	case cancelled != nil:
		outcome, note = Fail, joinNote("runner cancelled: "+cancelled.Error(), note)
	case herr != nil:
		outcome, note = Fail, joinNote(herr.Error(), note)
	case res.Failed:
		outcome = Fail
	}
	secs := math.Round(wall.Seconds()*1000) / 1000
	cost := Cost{Seconds: secs}
	if res.Cost != nil {
		if validCost(*res.Cost) {
			cost = *res.Cost
		} else {
			note = joinNote(fmt.Sprintf("invalid cost %+v ignored", *res.Cost), note)
		}
	}
	return outcome, note, cost
}

func joinNote(a, b string) string {
	if b == "" {
		return a
	}
	return a + ": " + b
}

func gateKeys(trips []trip) []string {
	keys := make([]string, len(trips))
	for i, t := range trips {
		keys[i] = t.gate
	}
	return keys
}

// remaining returns what is left of each budget in the window, the largest
// value for a budget without a limit.
func (d *Doc) remaining() Cost {
	b := Cost{USD: math.Inf(1), Tokens: math.MaxInt64, Seconds: math.Inf(1)}
	if l := d.Gates.BudgetUSD; l != nil {
		b.USD = max(0, *l-(d.Spent.USD-d.Epoch.Spent.USD))
	}
	if l := d.Gates.BudgetTokens; l != nil {
		b.Tokens = max(0, *l-(d.Spent.Tokens-d.Epoch.Spent.Tokens))
	}
	if l := d.Gates.BudgetSeconds; l != nil {
		b.Seconds = max(0, *l-(d.Spent.Seconds-d.Epoch.Spent.Seconds))
	}
	return b
}

// appendLog appends recs to the tick log in one write, under the lock,
// without fsync. commit appends them before it writes the state that counts
// them, so that a crash never leaves a counted tick without its line; a
// power loss may still cost the log its last lines (see the package's
// Caveats).
func (l *Loop) appendLog(ctx context.Context, tx *filetxn.Tx, recs ...*TickRecord) error {
	if len(recs) == 0 {
		return nil
	}
	if l.root.b != nil {
		return l.remoteCommit(ctx, tx, nil, nil, recs)
	}
	var b []byte
	for _, r := range recs {
		b = appendRecord(b, r)
	}
	return tx.Append(l.log, b, atomicfile.WithoutSync())
}

// skipBusy logs a scheduled tick that found the lock busy. It holds no lock:
// the line is appended in one O_APPEND write, which the kernel does not
// interleave with the holder's own append, and a reader skips a line that
// does not parse anyway. n and the status come from a lock-free snapshot.
func (l *Loop) skipBusy(ctx context.Context, busy *lock.BusyError) (TickRecord, error) {
	now := l.now()
	rec := TickRecord{
		StartedAt: now, EndedAt: now, Outcome: Skipped, SkipReason: skipBusy,
		GatesTripped: []string{}, Trigger: TriggerSchedule, PID: os.Getpid(),
		Note: "lock held by another runner",
	}
	if busy != nil {
		rec.Note = "lock held by " + busy.Holder.String()
	}
	d, err := l.View(ctx)
	if err == nil {
		rec.N, rec.StatusBefore, rec.StatusAfter = d.TickCount, d.Status, d.Status
	}
	if l.root.b != nil {
		// The lock exists whether or not the loop does: a loop that is not
		// there gets no line. One deleted after this View may still get
		// one, which Ticks leaves out (it is older than any new state).
		if err != nil {
			return TickRecord{}, err
		}
		rec.Note = "lock held by another session"
		return rec, l.createTick(ctx, &rec)
	}
	// The one write this package makes without the lock: the engine appends
	// only under it, and a scheduled tick that finds the lock busy must log
	// that it skipped without waiting. One O_APPEND write cannot tear a
	// record that the lock holder appends at the same time. Like every
	// tick-log line, it is not fsynced.
	if err := atomicfile.AppendFile(l.log, appendRecord(nil, &rec), 0o644, atomicfile.WithoutSync()); err != nil {
		return TickRecord{}, err
	}
	return rec, nil
}

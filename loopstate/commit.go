package loopstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/multix"
	"github.com/filetxn/filetxn/lock"
)

// WithCommit records a tick whose harness ran in one commit with members
// (filetxn.MutateAll): fn gets the tick's record as it will be logged and
// changes the members' documents through m (a ledger's or a board's In);
// the tick's count, its line and fn's changes are published together or
// not at all, through any crash, full disk or lost lock (WithoutSync gives
// that up at a power loss), as for "close DW-3, advance the story, count
// the tick". On files the loop's lock is let go after the harness and all
// the locks taken in one order, waiting up to 30 s whatever ctx says (not
// for a WithNoWait member; the loop's other changes are refused
// meanwhile); on a backend, where the lock is the runner's liveness, it
// is kept and the others tried again until free, for up to 30 s. It costs
// a multi-file commit's fsyncs.
//
// If fn fails or the commit publishes nothing, the tick is recorded alone,
// counted failed, its note saying why, and Tick returns that record with
// the error. An error after the commit point (the commit stands) comes
// with the tick's record; one matching filetxn.ErrUndecided with none (the
// next transaction decides). A skipped tick runs no fn. Members that
// cannot join the commit (the loop itself, another backend's) are refused
// before the harness runs (ErrInvalidArgument).
func WithCommit(members []filetxn.Member, fn func(m *filetxn.Multi, rec TickRecord) error) TickOption {
	return func(o *tickOptions) { o.commit = &tickCommit{members: members, fn: fn} }
}

// A tickCommit is WithCommit's: the members and fn.
type tickCommit struct {
	members []filetxn.Member
	fn      func(*filetxn.Multi, TickRecord) error
}

// commitFailedNote starts the note of a tick whose commit could not be
// made: it is recorded alone.
const commitFailedNote = "the tick's commit was not published, so the tick is counted failed"

// checkCommit refuses a WithCommit that cannot be made, before the tick
// runs anything: no fn, or members that MutateAll would refuse beside the
// loop's state (the loop itself, a nil member, another backend's).
func (l *Loop) checkCommit(c *tickCommit) error {
	if c.fn == nil {
		return fmt.Errorf("loopstate: Tick %s: WithCommit: nil fn: %w", l.name, filetxn.ErrInvalidArgument)
	}
	self := filetxn.Join(l.engine("tick", false), nil, nil)
	members := []any{&self}
	for _, m := range c.members {
		members = append(members, m)
	}
	if err := multix.Check(members); err != nil {
		return fmt.Errorf("loopstate: Tick %s: WithCommit (member 0 is the loop's state, member i+1 is members[i]): %w", l.name, err)
	}
	return nil
}

// recordCommit records the tick e, whose harness has run, in one
// MutateAll with c's members, once the loop's lock is let go: the loop's
// state, still marked with e (else the tick was settled by another and
// nothing is published), counts it; c.fn changes the members; and the
// tick's line goes with them. If that commit publishes nothing, the tick
// is recorded alone, counted failed.
func (l *Loop) recordCommit(ctx context.Context, e *endedTick, c *tickCommit) (TickRecord, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), relockTimeout)
	defer cancel()
	self, body, rec := l.commitBody(e, c)
	commits, err := filetxn.MutateAll(rctx, append([]filetxn.Member{self}, c.members...), body)
	if err == nil {
		return *rec, nil
	}
	if len(commits) > 0 && commits[0].Written {
		return *rec, err // the commit stands; the rest is the next transaction's
	}
	if errors.Is(err, filetxn.ErrUndecided) {
		return TickRecord{}, err // the next transaction completes it, or undoes it
	}
	return l.recordFailed(e, err, func(f *endedTick, why string) (TickRecord, error) {
		// A wait of its own: the commit's may have used up rctx, and a
		// done context tries the lock once.
		actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), relockTimeout)
		defer acancel()
		return l.recordLocked(actx, f, why)
	})
}

// recordCommitHeld is recordCommit on a backend, under the loop's lock
// that tx holds, which it keeps: there the lock is the runner's liveness,
// and a session that took it in between would count the tick abandoned.
// The members' locks are taken without waiting while it is held
// (multix.MutateAllHeld). The Commit is all or nothing: with an error,
// nothing of it was published, and the tick is recorded alone, failed.
func (l *Loop) recordCommitHeld(ctx context.Context, tx *filetxn.Tx, e *endedTick, c *tickCommit) (TickRecord, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), relockTimeout)
	defer cancel()
	self, body, rec := l.commitBody(e, c)
	members := []any{self}
	for _, m := range c.members {
		members = append(members, m)
	}
	err := multix.MutateAllHeld(rctx, members, tx.Held(), func(m any) error { return body(m.(*filetxn.Multi)) })
	if err == nil {
		return *rec, nil
	}
	return l.recordFailed(e, err, func(f *endedTick, why string) (TickRecord, error) {
		return l.record(rctx, tx, f, why)
	})
}

// commitBody returns the loop's member of a tick's commit (its state,
// refused unless still marked with e), the commit's fn and where that fn
// leaves the tick's record: it counts the tick, runs c.fn and logs the
// line with the commit.
func (l *Loop) commitBody(e *endedTick, c *tickCommit) (filetxn.Member, func(*filetxn.Multi) error, *TickRecord) {
	st := l.engine("tick", false)
	self := filetxn.Join(st, func(d *Doc) error {
		if !e.marker.same(d.current) {
			return fmt.Errorf("loopstate: tick %s: tick %d is no longer marked in %s: not recorded (%w)", l.name, e.marker.N, l.state, lock.ErrLockLost)
		}
		return nil
	}, nil)
	rec := new(TickRecord)
	body := func(m *filetxn.Multi) error {
		// The note as the line will hold it: fn and Tick's caller get the
		// record that is logged.
		r, err := l.count(filetxn.In(m, st), e, truncNote(e.note))
		if err != nil {
			return err
		}
		*rec = r
		if err := c.fn(m, r); err != nil {
			return err
		}
		return multix.Append(m, st, l.log, l.tickNames(1)[0], appendRecord(nil, rec))
	}
	return &self, body, rec
}

// recordFailed records the tick e alone, through record, after its commit
// failed with err (see failed), and returns that record with err, or
// nothing and both errors.
func (l *Loop) recordFailed(e *endedTick, err error, record func(*endedTick, string) (TickRecord, error)) (TickRecord, error) {
	alone, rerr := record(failed(e, err))
	if rerr != nil {
		return TickRecord{}, errors.Join(err, rerr)
	}
	return alone, fmt.Errorf("loopstate: tick %s: tick %d recorded failed, alone: %w", l.name, alone.N, err)
}

// failed returns the tick e to record alone after its commit failed with
// err: counted failed (a timeout stays one), and the note that says why.
func failed(e *endedTick, err error) (*endedTick, string) {
	f := *e
	if f.outcome == OK {
		f.outcome = Fail
	}
	return &f, joinNote(commitFailedNote, err.Error())
}

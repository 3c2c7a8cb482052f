package filetxn

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/filetxn/filetxn/internal/proc"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/lock"
)

// Group commit. Mutates of one Store that arrive while another Mutate of it
// leads (waits for the lock, or holds it) queue in the store's group. The
// leader, once it holds the lock, yields to the callers that the batch
// before answered (see yield) and then takes every call queued at that
// moment into its batch, runs its own fn and then hands the one decoded
// document to each queued caller in turn, whose goroutine runs its own fn
// (see follow) and hands it back; it publishes the result with one write,
// releases the lock, fsyncs the directory and answers the batch. Then it
// hands the lead to the first call queued since, which takes the lock in
// its turn. Nobody waits for a batch to fill: a batch is what is queued
// when the lock is taken, so a lone call is a batch of one, and costs what
// a transaction without group commit costs, plus a few uncontended mutex
// sections; it follows no answered caller, so it does not yield.
//
// fn runs once under the lock (a probed call's may also run on probes, see
// MutateProbed), on its caller's goroutine: each fn's changes are
// checkpointed by encoding the document after it, and a fn that fails (or
// panics, or ends its goroutine) is undone by decoding the document again
// from the bytes encoded after the fn before it. docs/design.md ("Group
// commit") gives the reasons.

// A call is one Mutate: waiting in a group's queue, or run in a batch.
type call[D any] struct {
	ctx    context.Context
	fn     func(D) error
	probed bool          // MutateProbed: it probes before it waits for a lock found busy
	done   chan struct{} // the leader's signals to the caller, one at a time (see signal)

	// Set by the leader of the batch that took the call (or that promoted
	// it), before it signals done; read by the caller once it has received.
	lead      bool      // promoted: the caller must lead the next batch itself
	reprobe   bool      // probed, sent back by a leader that found the lock busy: probe, then queue again
	cancelled bool      // ctx was done when a leader took the call: fn never ran
	turn      *batch[D] // the caller's turn in this batch: it runs fn (see follow), then waits for its answer
	changed   bool      // fn succeeded and changed the encoded bytes
	sawChange bool      // fn ran on a document that held an earlier call's change: it decided on the batch's write
	aborted   bool      // fn did not return (it panicked, or called runtime.Goexit): its caller is not answered
	commit    Commit
	err       error
	answered  bool // answered by a batch (see group.waking): the caller counts its waking

	loan proc.Loan // while fn runs in a batch: the caller's goroutine acts for the leader's
}

// signal wakes the caller, which waits for one signal at a time: done has
// room for it, so the leader never blocks on a caller.
func (c *call[D]) signal() { c.done <- struct{}{} }

// group is a store's queue of Mutates waiting for the lock.
type group[D any] struct {
	mu      sync.Mutex
	leading bool       // a call leads: it takes the lock or runs a batch; guarded by mu
	waiting bool       // the leading call found the lock busy (or not to be had) and waits for it; guarded by mu
	queue   []*call[D] // calls waiting for the next batch, in order; guarded by mu
	open    bool       // the leader holds the lock and has not taken the queue yet; guarded by mu

	// waking counts the callers that a batch has answered and whose
	// goroutines have not resumed yet: runnable, but not yet run. The next
	// leader yields while there are some (see yield).
	waking atomic.Int32

	// leader is the goroutine of the leading call while it leads (0 when
	// none): fn of its probe calling Mutate would queue behind itself.
	leader atomic.Int64
}

// wait records that the leader found the lock busy, or not to be had, and
// sends every probed call of the queue back to probe (see mutate): none of
// them may wait for another holder when it changes nothing.
func (g *group[D]) wait() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waiting = true
	g.queue = slices.DeleteFunc(g.queue, func(c *call[D]) bool {
		if c.probed {
			c.reprobe = true
			c.signal()
		}
		return c.probed
	})
}

// held records that the leader holds the lock, and is about to take the
// queue.
func (g *group[D]) held() {
	g.mu.Lock()
	g.waiting, g.open = false, true
	g.mu.Unlock()
}

// tryLead makes the caller the leader if no call leads, and reports whether
// it did.
func (g *group[D]) tryLead() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.leading {
		return false
	}
	g.leading = true
	return true
}

// joined is what enqueue did with a call.
type joined int

const (
	queued joined = iota // c waits in the queue
	leads                // no call led: the caller leads
	probes               // c must probe first: it is probed and the leader waits for a busy lock
	check                // the caller must check that it may wait (see mayQueue), then enqueue again
)

// enqueue queues c behind the leader, or, if the leader has finished
// meanwhile, makes the caller the leader. A call that must probe before it
// may wait (c.probed, and no probe of it found a change since it was last
// sent back) does not queue while the leader waits for a lock it found
// busy: the look at the leader and the queueing are one step under mu, so
// that a call cannot see a leader about to try for the lock and then queue
// behind the wait that follows (wait sends back only the calls queued
// already).
//
// The caller is first sent to check that it may wait (see mayQueue)
// whenever c's ctx is done, and when it has not checked yet, unless the
// leader holds the lock and has yet to take the queue. Then the caller's
// goroutine holds no lock on the file (only the leader's goroutine does,
// and it is not calling, nor does any fn run for it), so it cannot be
// waiting for itself, and c joins
// the batch about to be taken: that is when the callers that the batch
// before answered come back (see yield), and the check (a look at the
// lock table, under the mutex every lock of the process shares) would only
// delay them. (Were the lock file replaced under the leader, and the file
// now at its path locked by the caller's goroutine, c would still join
// this batch and be answered with it, as is every call of a batch whose
// lock was lost (a write is refused): it waits for nobody.)
//
// path is the store's data file, for the seam.Queued point.
func (g *group[D]) enqueue(c *call[D], path string, mustProbe, checked bool) joined {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.ctx.Err() != nil || (!checked && !g.open) {
		return check
	}
	if !g.leading {
		g.leading = true
		return leads
	}
	if mustProbe && g.waiting {
		return probes
	}
	if c.done == nil {
		c.done = make(chan struct{}, 1)
	}
	g.queue = append(g.queue, c)
	_ = seam.At(seam.Queued, path) // under mu: a hook must not block
	return queued
}

// leave takes c out of the queue and reports whether it was still there
// (not taken into a batch, nor promoted).
func (g *group[D]) leave(c *call[D]) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, q := range g.queue {
		if q == c {
			g.queue = slices.Delete(g.queue, i, i+1)
			return true
		}
	}
	return false
}

// take appends the queued calls to batch and empties the queue. A call
// whose ctx is done is answered at once instead: its caller gave up waiting,
// so its fn never runs.
func (g *group[D]) take(batch []*call[D]) []*call[D] {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = false
	for _, c := range g.queue {
		if c.ctx.Err() != nil {
			c.cancelled = true
			c.signal()
			continue
		}
		batch = append(batch, c)
	}
	clear(g.queue)
	g.queue = g.queue[:0]
	return batch
}

// requeue puts calls that a batch took but never ran back at the front of
// the queue, in their order. A call whose ctx is done is answered at once
// instead, as take answers it: its caller may have seen ctx end while the
// call was taken, found it gone from the queue (see leave) and be waiting
// for its answer, no longer for ctx, so that left in the queue it would
// wait for the next leader's lock.
func (g *group[D]) requeue(calls []*call[D]) {
	g.mu.Lock()
	defer g.mu.Unlock()
	live := make([]*call[D], 0, len(calls)+len(g.queue))
	for _, c := range calls {
		if c.ctx.Err() != nil {
			c.cancelled = true
			c.signal()
			continue
		}
		live = append(live, c)
	}
	g.queue = append(live, g.queue...)
}

// handOff ends a lead: the first queued call, if any, is promoted to lead
// the next batch.
func (g *group[D]) handOff() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waiting, g.open = false, false
	if len(g.queue) == 0 {
		g.leading = false
		return
	}
	next := g.queue[0]
	g.queue[0] = nil
	g.queue = g.queue[1:]
	next.lead = true
	next.signal()
}

// yield lets the callers that the batch before answered run before the
// leader takes the queue: those about to call again then join this batch
// rather than the next. It yields the processor while some of them have not
// resumed (see waking), and at most once for each: a bound of a few passes
// of the scheduler, not a wait for calls to arrive, so that a caller whose
// goroutine the operating system has descheduled delays no batch for long.
// A leader that follows no answered caller (a lone call, say) does not
// yield at all.
func (g *group[D]) yield() {
	for n := g.waking.Load(); n > 0 && g.waking.Load() > 0; n-- {
		runtime.Gosched()
	}
}

// mutate is Mutate, and MutateProbed when probed: it leads a batch, or
// joins the queue behind the leader.
func (s *Store[D]) mutate(ctx context.Context, fn func(D) error, probed bool) (Commit, error) {
	if s.o.backend != nil {
		return s.remoteMutate(ctx, fn, probed)
	}
	c := &call[D]{ctx: ctx, fn: fn, probed: probed}
	if s.o.noWait {
		// WithNoWait: a busy lock is an error at once, never a wait, so
		// each call takes the lock itself.
		return s.lead(c)
	}
	if s.g.tryLead() {
		return s.lead(c)
	}
	start := time.Now()
	mustProbe := probed // fn has not been seen to change the document since the call last queued
	checked := false    // mayQueue has found that the caller may wait
	for {
		// A leader holds the lock, or is about to try for it. A probed
		// call queues as it is, its batch near, unless the leader found
		// the lock busy or not to be had (then a call that changes
		// nothing must not wait: enqueue says so), or its ctx rules out
		// waiting: then it decides on a snapshot first.
		if mustProbe && ctx.Err() != nil {
			if s.probe(fn) {
				return Commit{}, nil
			}
			mustProbe = false
		}
		switch s.g.enqueue(c, s.path, mustProbe, checked) {
		case leads:
			return s.lead(c)
		case check:
			if err := s.mayQueue(ctx); err != nil {
				return Commit{}, err
			}
			checked = true
			continue
		case probes:
			if s.probe(fn) {
				return Commit{}, nil
			}
			mustProbe = false // fn changes the document: it may wait for the lock
			continue
		}
		select {
		case <-c.done:
		case <-ctx.Done():
			if s.g.leave(c) {
				return s.giveUp(ctx, c, start)
			}
			_ = seam.At(seam.Taken, s.path)
			<-c.done // a leader took c (or promoted it) meanwhile: its answer is on the way
		}
		if b := c.turn; b != nil {
			c.turn = nil
			b.follow(c)
			<-c.done // the answer: the batch is published
		}
		if c.answered {
			s.g.waking.Add(-1)
		}
		if !c.reprobe {
			break
		}
		c.reprobe, mustProbe = false, true
	}
	switch {
	case c.lead && ctx.Err() != nil:
		// Promoted, but its ctx ended the wait first: fn does not run
		// under the lock, as for a call that leaves the queue; the lead
		// passes on.
		s.g.handOff()
		return s.giveUp(ctx, c, start)
	case c.lead:
		return s.lead(c)
	case c.cancelled:
		return s.giveUp(ctx, c, start)
	}
	return c.commit, c.err
}

// mayQueue returns nil if the caller may wait in the queue: its goroutine
// does not hold the lock, and its ctx is not done. A goroutine that holds
// it (fn of a running batch calling Mutate, a follower's included, whose
// goroutine acts for the leader's, or a Locked callback doing so) would
// wait for itself, as would the leading call's goroutine (fn of its probe,
// which runs before it takes the lock): it gets lock.ErrReentrant, as from
// the lock itself, which judges re-entry by goroutine. The check (lock.Held)
// takes nothing, so that it never makes the lock look busy to the leader's
// own attempt, and asks the kernel for no lock. A done ctx never waits: it gets the
// lock's busy error, since a leader has or is about to take the lock.
func (s *Store[D]) mayQueue(ctx context.Context) error {
	_ = seam.At(seam.MayQueue, s.path)
	lockPath, err := s.LockPath()
	if err != nil {
		return err
	}
	if lock.Held(lockPath) || s.g.leader.Load() == proc.ID() {
		return &fs.PathError{Op: "Acquire", Path: lockPath, Err: lock.ErrReentrant}
	}
	if ctx.Err() != nil {
		return s.gaveUp(ctx, time.Time{})
	}
	return nil
}

// giveUp ends c, whose ctx ended its wait in the queue: with gaveUp's
// error, unless c is probed and a probe shows that its fn changes nothing
// (a MutateProbed that changes nothing succeeds whatever the state of ctx,
// as it would have had it arrived with ctx done).
func (s *Store[D]) giveUp(ctx context.Context, c *call[D], start time.Time) (Commit, error) {
	if c.probed && s.probe(c.fn) {
		return Commit{}, nil
	}
	return Commit{}, s.gaveUp(ctx, start)
}

// gaveUp is the error of a call whose ctx ended its wait in the queue (or
// was done before it began, when start is zero): a *lock.BusyError, as a
// wait for the lock itself gives, carrying the holder record.
func (s *Store[D]) gaveUp(ctx context.Context, start time.Time) error {
	lockPath, err := s.LockPath()
	if err != nil {
		return err
	}
	holder, _ := lock.ReadHolder(lockPath)
	e := &lock.BusyError{Path: lockPath, Holder: holder, Err: ctx.Err()}
	if !start.IsZero() {
		e.Waited = time.Since(start)
	}
	return e
}

// lead takes the lock and runs a batch that begins with c, the caller's own
// call, followed by every call queued when the lock is taken, if grouped
// (unless WithNoWait, under which no call queues). It then hands the lead
// on, whether it succeeded, failed, panicked or its goroutine is ending.
//
// The leader first tries the lock without waiting (a probed call's
// attempt creates no lock file: see below). If it cannot have it at once,
// it says so to the group (so that probed calls probe rather than queue
// behind a wait), probes if its own call is probed (see MutateProbed: a
// probe that shows fn changes nothing ends the call without the lock), and
// only then waits for the lock. Once it holds the
// lock it yields before it takes the queue, while callers that the batch
// before answered have not resumed (see yield): those about to call again
// then join this batch rather than the next. It releases the lock once the
// batch's rename is done, then makes the write durable and answers the
// batch (see answer), and then hands the lead on.
func (s *Store[D]) lead(c *call[D]) (commit Commit, err error) {
	grouped := !s.o.noWait
	var b *batch[D]
	defer func() {
		// The lock is released (holding has returned, or is unwinding a
		// panic or a Goexit): another process may take it while this
		// batch's directory fsync runs. Then the batch is answered, and
		// only then is the lead handed on: the callers just answered, about
		// to call again, join the next batch, as they did when the fsync
		// ran under the lock. Handing the lead on before the fsync lets the
		// next batch of this Store overlap it too, but measured worse:
		// the goroutines split into two cohorts that alternate, each batch
		// half the size and still paying its own two journal commits, which
		// the file system (ext4's jbd2 commits one transaction at a time)
		// does not overlap.
		if b != nil {
			b.answer()
			commit, err = c.commit, c.err
		}
		if grouped {
			s.g.leader.Store(0)
			s.g.handOff()
		}
	}()
	if grouped {
		s.g.leader.Store(proc.ID())
	}
	// The lock path is resolved once for both attempts: with WithStateRoot
	// that follows the data file's symlinks, a stat of each of its elements.
	lockPath, pathErr := s.LockPath()
	h, err := (*lock.Handle)(nil), pathErr
	if err == nil {
		// A probed call does not create a missing lock file (or its
		// directories) before a probe has shown that fn changes the
		// document: a no-op leaves the disk as it found it.
		opts := s.o.lockOpts
		if c.probed {
			opts = s.o.probeLockOpts
		}
		h, err = lock.TryAcquire(lockPath, opts...)
	}
	if err != nil {
		if grouped {
			s.g.wait()
		}
		if c.probed && s.probe(c.fn) {
			return Commit{}, nil
		}
		switch {
		case pathErr != nil:
			return Commit{}, err
		case s.o.noWait && c.probed && errors.Is(err, fs.ErrNotExist):
			// The lock file was missing, and fn changes the document:
			// take it now, creating it.
			if h, err = lock.TryAcquire(lockPath, s.o.lockOpts...); err != nil {
				return Commit{}, err
			}
		case s.o.noWait:
			return Commit{}, err
		default:
			if h, err = lock.Acquire(c.ctx, lockPath, s.o.lockOpts...); err != nil {
				return Commit{}, err
			}
		}
	}
	// An unfinished multi-file commit over this file is completed (or
	// undone) before the batch reads.
	if h, err = settle(c.ctx, h, s.o.lockOpts, s.o.noWait); err != nil {
		return Commit{}, err
	}
	if grouped {
		s.g.held()
	}
	_ = s.holding(h, func(tx *Tx) error {
		b = &batch[D]{s: s, tx: tx, calls: []*call[D]{c}}
		if grouped {
			_ = seam.At(seam.Gather, s.path)
			s.g.yield()
			b.calls = s.g.take(b.calls)
		}
		b.run()
		return nil
	})
	return c.commit, c.err
}

// A batch is the calls that one leader runs under one lock acquisition.
type batch[D any] struct {
	s     *Store[D]
	tx    *Tx
	calls []*call[D] // calls[0] is the leader's own
	next  int        // index of the next call to run
	read  []byte     // the bytes read
	based bool       // doc was decoded from read, and base is its encoding
	base  []byte     // the encoding of the document as decoded: no fn changed what encodes so
	src   []byte     // the bytes doc was decoded from: read, or cur to undo a failed fn
	cur   []byte     // the encoding after the last fn that succeeded (base before any)
	doc   D          // the document; it matches cur when fresh
	fresh bool
	dirty bool         // a call that ran changed the document: the later ones decide on the batch's write
	ran   []*call[D]   // the calls that ran, set by finish
	sync  func() error // the directory fsync that makes the batch's write durable, if any

	holder int64         // the leader's goroutine, for which each follower's acts while its fn runs
	back   chan struct{} // the last follower passes the document back to the leader (see pass)
}

// run reads the file and runs the calls in order, then publishes and
// answers them (finish). The leader's own fn runs on the leader's goroutine;
// each follower's runs on its caller's (see pass), so that its panic or
// Goexit, its stack, its thread and its re-entry are its caller's, as
// without group commit. finish is deferred: if the leader's goroutine is
// ending (its own fn panicked, or called runtime.Goexit), the calls that
// ran are still published and answered, and those that did not go back to
// the queue, so that nobody is left waiting and no fn runs twice.
func (b *batch[D]) run() {
	b.tx.live("Read")
	data, err := b.s.readDoc("Read", true)
	if err != nil {
		for _, c := range b.calls {
			c.err = err
		}
		b.next = len(b.calls)
		b.finish()
		return
	}
	b.read = data
	defer b.finish()
	b.next = 1
	b.step(b.calls[0])
	if len(b.calls) > 1 {
		b.holder, b.back = proc.ID(), make(chan struct{}, 1)
		b.pass()
		<-b.back
	}
}

// pass hands the document on to the next call of the batch, whose caller's
// goroutine runs its fn (see follow) and passes it on in turn, or back to
// the leader once every call has run: each hand-off wakes one goroutine,
// the one whose turn it is. A caller whose turn comes waits in the queue
// for the batch's answer, taken (it cannot leave), so it is there to
// receive.
func (b *batch[D]) pass() {
	if b.next == len(b.calls) {
		b.back <- struct{}{}
		return
	}
	c := b.calls[b.next]
	b.next++
	c.turn = b
	c.signal()
}

// follow is c's turn in b, on c's caller's goroutine: it runs c's fn (step),
// its goroutine acting for the leader's meanwhile (see proc.Loan), so
// that a lock the leader holds (this file's, or another's) is re-entry for
// fn, as it would be on the leader's goroutine, not a wait for a leader
// that waits for fn. It passes the document on whatever fn does: if fn
// panics or calls runtime.Goexit, the pass is deferred, the change is
// undone (step left the document stale) and the caller's goroutine goes on
// unwinding, unanswered.
func (b *batch[D]) follow(c *call[D]) {
	returned := false
	c.loan.Begin(b.holder)
	defer func() {
		c.loan.End()
		c.aborted = !returned
		b.pass()
	}()
	b.step(c)
	returned = true
}

// step runs c's fn on the document and encodes the result, which becomes
// cur if fn succeeded. The document is decoded first when the last fn
// failed (from cur), or none has run (from the bytes read, whose encoding is
// then the baseline that the first change is told from, see Codec).
func (b *batch[D]) step(c *call[D]) {
	c.sawChange = b.dirty
	if !b.fresh {
		var err error
		if b.based {
			b.doc, err = b.s.decodeOnly(b.cur)
			b.src = b.cur
		} else if b.doc, b.base, err = b.s.decode(b.read); err == nil {
			b.based, b.src, b.cur = true, b.read, b.base
		}
		if err != nil {
			c.err = err
			return
		}
		b.fresh = true
	}
	b.fresh = false // until fn and Encode succeed, doc may hold a partial change
	if err := c.fn(b.doc); err != nil {
		c.err = err
		return
	}
	out, err := b.s.encode(b.doc, b.src)
	if err != nil {
		c.err = err
		return
	}
	b.fresh = true
	if !bytes.Equal(out, b.cur) { // lengths first: an append is told from its length alone
		c.changed, b.cur, b.dirty = true, out, true
	}
}

// finish publishes cur if the calls that ran changed it, sets each call's
// result, and requeues the calls that did not run. It runs under the lock,
// and leaves the directory fsync of its write, and the answers, to answer.
//
// The write's outcome is the answer of every call whose change it carries,
// and its error also that of every call that succeeded without a change
// after one of those (sawChange): such a fn decided on a document holding
// the earlier change (it found a key already set, say), so a nil answer
// would tell its caller of a state that the failed write never published.
// Its Commit still reports no write: the bytes are not its own.
func (b *batch[D]) finish() {
	ran := b.calls[:b.next]
	b.ran = ran
	var writers int
	for _, c := range ran {
		if c.changed {
			writers++
		}
	}
	written := false
	if writers > 0 && !bytes.Equal(b.cur, b.base) {
		commit, sync, err := b.tx.write(b.s.path, b.cur, nil)
		if commit.Written {
			b.s.published(b.cur)
			written = true
		}
		commit.shared = writers > 1
		b.sync = sync
		for _, c := range ran {
			switch {
			case c.changed:
				c.commit, c.err = commit, err
			case c.sawChange && c.err == nil:
				c.err = err
			}
		}
	}
	if b.dirty && !written {
		// An encoding that changed may lie in the room after the bytes
		// read (see readDoc), and its codec may keep it: the next batch,
		// which reads the same bytes, must not get that room again.
		b.s.last.Store(nil)
	}
	if rest := b.calls[b.next:]; len(rest) > 0 {
		b.s.g.requeue(rest)
	}
}

// answer makes the batch's write durable and then wakes the followers that
// ran. It runs after the lock is released, so that another process (or a
// Locked call) can read, stage and fsync while this directory fsync runs;
// the file system may then commit both in one journal transaction.
//
// That answers nobody early. A caller is answered only after a directory
// fsync that began after its rename, which makes durable the rename, or a
// later one: a later writer took the lock after this rename, so it read
// this version and publishes its successor, whose temporary file it fsynced
// before its own rename. And that later writer's callers are answered only
// after its own directory fsync, so a crash before then leaves no answered
// caller with a change that is lost. A failed fsync fails every call whose
// change the write carried, or that decided on such a change (see finish),
// with an error that says the file was replaced.
func (b *batch[D]) answer() {
	if b.sync != nil {
		if err := notSynced(b.s.path, b.sync()); err != nil {
			for _, c := range b.ran {
				if (c.changed || c.sawChange) && c.err == nil {
					c.err = err
				}
			}
		}
	}
	// The leader's own call is answered by its return, and a call whose
	// fn did not return has no caller left to answer.
	var n int32
	for _, c := range b.ran[min(1, len(b.ran)):] {
		if !c.aborted {
			n++
		}
	}
	if n > 0 {
		b.s.g.waking.Add(n)
	}
	for _, c := range b.ran[min(1, len(b.ran)):] {
		if !c.aborted {
			c.answered = true
			c.signal()
		}
	}
}

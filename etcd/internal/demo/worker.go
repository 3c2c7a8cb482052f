package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/etcd"
	"github.com/filetxn/filetxn/etcd/internal/cluster"
	"github.com/filetxn/filetxn/etcd/internal/lin"
	"github.com/filetxn/filetxn/ledger"
	"github.com/filetxn/filetxn/lock"
	"github.com/filetxn/filetxn/loopstate"
)

// workerTimeout bounds a worker's whole run, so that a demo that went wrong
// ends instead of hanging.
const workerTimeout = 5 * time.Minute

// attemptTimeout bounds one attempt of an operation: the wait for a lock
// that a frozen worker holds until its lease expires, and the requests.
const attemptTimeout = 30 * time.Second

// The lines a worker reads on its standard input from the demo.
const (
	cmdStart  = "start"  // begin the rounds
	cmdFreeze = "freeze" // in the next ledger append, say so while holding the lock, and wait
	cmdResume = "resume" // the worker was stopped and continued: go on
)

// workerLine is one line a worker prints on stdout: a finished round, the
// news that it holds the ledger's lock and waits to be frozen, or its report.
type workerLine struct {
	Round   int     `json:"round,omitempty"`
	Holding bool    `json:"holding,omitempty"`
	Report  *report `json:"report,omitempty"`
}

// report is what a worker did, as it knows it.
type report struct {
	Worker    int                     `json:"worker"`
	Appended  []string                `json:"appended"`  // the id of each round's entry
	Closed    []string                `json:"closed"`    // the ids its closes asked for, acknowledged
	Requested map[string]board.Status `json:"requested"` // story -> highest status it asked for
	Regressed int                     `json:"regressed"` // advances that answered a status below the one asked for
	Fenced    []string                `json:"fenced"`    // the errors of the writes refused with lock.ErrLockLost
	Unknown   []string                `json:"unknown"`   // the errors of the writes whose outcome was unknown (retried)
	Ledger    []lin.LedgerOp          `json:"ledger"`    // the history of its ledger operations
	Board     []lin.BoardOp           `json:"board"`     // the history of its board operations
	Ticked    []tickSeen              `json:"ticked"`    // the ticks it was told were counted
	Ticks     []lin.TickOp            `json:"ticks"`     // the history of its ticks
}

// tickSeen is a tick its runner was told was counted: the tick log's line
// for it must carry the same number, runner and start.
type tickSeen struct {
	N       int64     `json:"n"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// workerArgs is what a worker is told on its command line.
type workerArgs struct {
	index     int
	endpoints []string
	prefix    string
	ttl       time.Duration
	rounds    int
	freeze    bool   // this worker is the one the demo freezes
	state     string // its own state directory
	parent    int    // the demo's pid: the worker exits when it is gone
}

// worker is one worker process: a host of the demo.
type worker struct {
	workerArgs
	out *json.Encoder
	mu  sync.Mutex // protects out: the report and the holding line may be printed by different goroutines

	freezeAsked chan struct{} // closed when the demo says freeze
	resumed     chan struct{} // closed when the demo says resume
	frozen      bool          // the freeze has happened
	rep         report
}

// runWorker runs worker a: it connects to the cluster, waits for the start
// line, runs its rounds and prints its report. Each round appends a ledger
// entry, closes the one of the round before (in the first, the contended
// seed entry), advances a random story, reads the ledger and ticks the
// loop, each retried until it is acknowledged; every attempt goes into the
// history.
func runWorker(a workerArgs, stdin io.Reader, stdout io.Writer) error {
	go cluster.WatchParent(a.parent)
	ctx, cancel := context.WithTimeout(context.Background(), workerTimeout)
	defer cancel()
	client, err := cluster.NewClient(a.endpoints)
	if err != nil {
		return err
	}
	defer client.Close()
	b, err := etcd.New(client, a.prefix, etcd.WithSessionTTL(a.ttl))
	if err != nil {
		return err
	}
	defer b.Close()
	opts := []filetxn.Option{filetxn.WithBackend(b), filetxn.WithStateRoot(a.state)}
	ls, err := ledger.Open(ledgerName, opts...)
	if err != nil {
		return err
	}
	bs, err := board.Open(boardName, opts...)
	if err != nil {
		return err
	}
	root, err := loopstate.NewRoot(loopRoot, opts...)
	if err != nil {
		return err
	}
	loop, err := root.Open(ctx, loopName)
	if err != nil {
		return err
	}
	w := &worker{
		workerArgs:  a,
		out:         json.NewEncoder(stdout),
		freezeAsked: make(chan struct{}),
		resumed:     make(chan struct{}),
		rep:         report{Worker: a.index, Requested: map[string]board.Status{}},
	}
	started := make(chan struct{})
	go w.listen(stdin, started)
	select {
	case <-started:
	case <-ctx.Done():
		return ctx.Err()
	}
	rng := rand.New(rand.NewPCG(uint64(a.index), 0xe7cd))
	stories := demoStories()
	prev := contended
	for r := range a.rounds {
		if r == a.rounds-1 {
			// The last round waits for the freeze, so that it happens
			// while every worker races.
			select {
			case <-w.freezeAsked:
			case <-ctx.Done():
				return fmt.Errorf("worker %d: no freeze before the last round: %w", a.index, ctx.Err())
			}
		}
		id, err := w.appendEntry(ctx, ls, r)
		if err != nil {
			return err
		}
		w.rep.Appended = append(w.rep.Appended, id)
		if err := w.closeEntry(ctx, ls, prev); err != nil {
			return err
		}
		w.rep.Closed = append(w.rep.Closed, prev)
		prev = id
		key, target := stories[rng.IntN(len(stories))], demoTargets[rng.IntN(len(demoTargets))]
		if err := w.advance(ctx, bs, key, target); err != nil {
			return err
		}
		w.read(ctx, ls)
		if err := w.tick(ctx, loop, r); err != nil {
			return err
		}
		if err := w.print(workerLine{Round: r + 1}); err != nil {
			return err
		}
	}
	return w.print(workerLine{Report: &w.rep})
}

func (w *worker) print(l workerLine) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.Encode(l)
}

// listen reads the demo's lines on stdin.
func (w *worker) listen(stdin io.Reader, started chan struct{}) {
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		switch strings.TrimSpace(sc.Text()) {
		case cmdStart:
			close(started)
		case cmdFreeze:
			close(w.freezeAsked)
		case cmdResume:
			close(w.resumed)
		}
	}
}

// now is the clock of every history: the wall clock, which the workers of
// one machine share (a monotonic reading is private to a process).
func now() int64 { return time.Now().UnixNano() }

// outcome classifies the error of an attempt, and remembers a write's.
func (w *worker) outcome(err error, write bool) lin.Outcome {
	var busy *lock.BusyError
	var pe *fs.PathError
	switch {
	case err == nil:
		return lin.Done
	case errors.Is(err, lock.ErrLockLost):
		if write {
			w.rep.Fenced = append(w.rep.Fenced, err.Error())
		}
		return lin.Failed
	case errors.As(err, &busy), errors.As(err, &pe) && pe.Op == "Acquire":
		return lin.Failed // the lock was never taken: nothing was written
	}
	if write {
		w.rep.Unknown = append(w.rep.Unknown, err.Error())
	}
	return lin.Unknown
}

// retry runs attempt until it succeeds, each attempt with its own timeout,
// and returns the last error when ctx ends first, or at once an error that
// another attempt would meet again (a refused argument, a missing entry, a
// document it does not understand): the demo went wrong.
func retry(ctx context.Context, attempt func(ctx context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := attempt(actx)
		cancel()
		var fe *filetxn.FormatError
		if err == nil || errors.Is(err, filetxn.ErrNotFound) || errors.Is(err, filetxn.ErrInvalidArgument) || errors.As(err, &fe) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last attempt: %w)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// appendEntry appends the entry of round r and returns its id. An attempt
// finds the entry of an earlier one whose outcome was unknown and that took
// effect. The frozen worker's attempt holds the lock, inside the Mutate,
// until the demo has stopped and continued the process.
func (w *worker) appendEntry(ctx context.Context, ls *ledger.Store, r int) (string, error) {
	title := demoTitle(w.index, r)
	var id string
	err := retry(ctx, func(ctx context.Context) error {
		op := lin.LedgerOp{Client: w.index, Kind: lin.Append, Title: title, Call: now()}
		_, err := ls.Mutate(ctx, func(d *ledger.Doc) error {
			w.holdIfAsked()
			op.ID, op.Found = "", false
			ids, err := d.Append(ledger.Spec{
				Title:      title,
				Origin:     fmt.Sprintf("looprunner etcd-race, host %d, round %d", w.index, r),
				SourceSpec: fmt.Sprintf("spec-demo-%d.md", w.index),
				Reason:     "found while the demo raced its hosts",
				Severity:   []string{"low", "medium", "high"}[r%3],
			})
			if err != nil {
				return err
			}
			if op.ID = ids[0]; op.ID == "" {
				op.Found = true
				for _, e := range d.Entries() {
					if e.Title == title && e.Open() {
						op.ID = e.ID
					}
				}
			}
			return nil
		})
		op.Return, op.Outcome = now(), w.outcome(err, true)
		w.rep.Ledger = append(w.rep.Ledger, op)
		id = op.ID
		return err
	})
	return id, err
}

// holdIfAsked is the freeze: asked for it, the worker says it holds the
// lock and waits until the demo has stopped it past its lease and
// continued it.
func (w *worker) holdIfAsked() {
	if !w.freeze || w.frozen {
		return
	}
	select {
	case <-w.freezeAsked:
	default:
		return
	}
	w.frozen = true
	if w.print(workerLine{Holding: true}) == nil {
		<-w.resumed
	}
}

// closeEntry closes the entry id.
func (w *worker) closeEntry(ctx context.Context, ls *ledger.Store, id string) error {
	today := time.Now().Format(time.DateOnly)
	return retry(ctx, func(ctx context.Context) error {
		op := lin.LedgerOp{Client: w.index, Kind: lin.Close, ID: id, Call: now()}
		_, err := ls.Mutate(ctx, func(d *ledger.Doc) error {
			closed, err := d.MarkDone([]string{id}, today, fmt.Sprintf("closed by host %d", w.index))
			op.Closed = len(closed) == 1
			return err
		})
		op.Return, op.Outcome = now(), w.outcome(err, true)
		w.rep.Ledger = append(w.rep.Ledger, op)
		return err
	})
}

// advance moves story key towards target.
func (w *worker) advance(ctx context.Context, bs *board.Store, key string, target board.Status) error {
	if board.Rank(target) > board.Rank(w.rep.Requested[key]) {
		w.rep.Requested[key] = target
	}
	stamp := board.Stamp(time.Now().Format(time.DateTime))
	return retry(ctx, func(ctx context.Context) error {
		op := lin.BoardOp{Client: w.index, Key: key, Target: target, Call: now()}
		got, err := bs.Advance(ctx, key, target, stamp)
		op.Return, op.Outcome = now(), w.outcome(err, true)
		if err == nil {
			op.Got = got
			if board.Rank(got) < board.Rank(target) {
				w.rep.Regressed++
			}
		}
		w.rep.Board = append(w.rep.Board, op)
		return err
	})
}

// read reads the ledger without the lock, once: a read that fails has no
// effect, and is left out of the history.
func (w *worker) read(ctx context.Context, ls *ledger.Store) {
	op := lin.LedgerOp{Client: w.index, Kind: lin.Read, Call: now()}
	rctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	d, err := ls.View(rctx)
	if err != nil {
		return
	}
	op.Return, op.Summary = now(), lin.Summary(d)
	w.rep.Ledger = append(w.rep.Ledger, op)
}

// tick runs one manual tick of the loop, whose harness only notes the host
// and round, retried until one is counted. A tick cut off may still be
// counted, as abandoned, by the next tick of any host.
func (w *worker) tick(ctx context.Context, l *loopstate.Loop, r int) error {
	harness := func(context.Context, *loopstate.Run) (loopstate.Result, error) {
		return loopstate.Result{Note: fmt.Sprintf("host %d, round %d", w.index, r)}, nil
	}
	return retry(ctx, func(ctx context.Context) error {
		op := lin.TickOp{Client: w.index, Call: now()}
		rec, err := l.Tick(ctx, loopstate.TriggerManual, harness)
		op.Return, op.Outcome = now(), w.outcome(err, true)
		if err == nil {
			op.N = rec.N
			w.rep.Ticked = append(w.rep.Ticked, tickSeen{N: rec.N, PID: rec.PID, Started: rec.StartedAt})
		}
		w.rep.Ticks = append(w.rep.Ticks, op)
		return err
	})
}

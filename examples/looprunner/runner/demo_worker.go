package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/ledger"
	"github.com/filetxn/filetxn/lock"
	"github.com/filetxn/filetxn/loopstate"
)

// workerTimeout bounds a worker's whole run, so that a demo that went wrong
// ends instead of hanging.
const workerTimeout = 10 * time.Minute

// waitMeter counts a worker's lock acquisitions and measures the ones that
// found the lock busy: from the call to the moment the lock was taken, as
// the holder record this process wrote into the lock file says.
type waitMeter struct {
	mu   sync.Mutex // protects busy
	busy bool       // the lock package reported a wait for the current acquisition

	acquisitions int
	waits        []time.Duration
	unmeasured   int // busy, but the holder record could not be read
}

// option reports every wait that begins: the lock package calls fn as soon
// as an acquisition finds the lock busy.
func (m *waitMeter) option() lock.Option {
	return lock.WithWaitReport(time.Nanosecond, func(*lock.BusyError) {
		m.mu.Lock()
		m.busy = true
		m.mu.Unlock()
	})
}

// measure runs op, which takes the lock at lockPath once and calls held
// while it holds it.
func (m *waitMeter) measure(lockPath string, op func(held func()) error) error {
	m.mu.Lock()
	m.busy = false
	m.mu.Unlock()
	start := time.Now()
	waited := time.Duration(-1)
	err := op(func() {
		if h, err := lock.ReadHolder(lockPath); err == nil && h != nil && h.PID == os.Getpid() {
			waited = max(h.Acquired.Sub(start), 0)
		}
	})
	m.mu.Lock()
	busy := m.busy
	m.mu.Unlock()
	m.acquisitions++
	switch {
	case !busy:
	case waited >= 0:
		m.waits = append(m.waits, waited)
	default:
		m.unmeasured++
	}
	return err
}

// demoWorker is one worker process of the demo. It waits for the end of its
// standard input (the start signal), then for each round appends a ledger
// entry, closes the one it appended in the round before (in the first
// round, the contended entry every worker tries to close), advances a random
// story to a random status and ticks the loop, each in its own transaction.
// It prints a line per round and its report as the last line. Only an error
// stops it; what the verification checks (an append taken for a duplicate,
// a close that finds its entry gone) is counted, not fatal.
func demoWorker(c *cli, p project, w, rounds int) error {
	if _, err := io.Copy(io.Discard, c.stdin); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), workerTimeout)
	defer cancel()
	m := &waitMeter{}
	purpose := lock.WithPurpose(fmt.Sprintf("demo worker %d", w))

	ls, err := ledger.Open(p.Ledger, filetxn.WithStateRoot(p.State), filetxn.WithLockOptions(purpose, m.option()))
	if err != nil {
		return err
	}
	ledgerLock, err := ls.LockPath()
	if err != nil {
		return err
	}
	bs, err := board.Open(p.Board, filetxn.WithStateRoot(p.State), filetxn.WithLockOptions(purpose, m.option()))
	if err != nil {
		return err
	}
	boardLock, err := bs.LockPath()
	if err != nil {
		return err
	}
	root, err := loopstate.NewRoot(p.Loops, filetxn.WithLockOptions(m.option()))
	if err != nil {
		return err
	}
	l, err := root.Open(ctx, demoLoop)
	if err != nil {
		return err
	}

	rng := rand.New(rand.NewPCG(uint64(w), 0x100b))
	stories := demoStories()
	rep := demoReport{Worker: w, Requested: map[string]board.Status{}}
	out := json.NewEncoder(c.stdout)
	prev := ""
	for r := range rounds {
		now := time.Now()
		today := now.Format(time.DateOnly)

		var id string
		err := m.measure(ledgerLock, func(held func()) error {
			_, err := ls.Mutate(ctx, func(d *ledger.Doc) error {
				held()
				ids, err := d.Append(ledger.Spec{
					Title:      demoTitle(w, r),
					Origin:     fmt.Sprintf("looprunner demo, worker %d, round %d", w, r),
					SourceSpec: fmt.Sprintf("spec-demo-%d.md", w),
					Reason:     "found while the demo raced its workers",
					Severity:   []string{"low", "medium", "high"}[r%3],
				})
				if err == nil {
					id = ids[0]
				}
				return err
			})
			return err
		})
		if err != nil {
			return err
		}
		// Anomalies are not errors here: the worker goes on, and the
		// verification counts them.
		if id != "" {
			rep.Appended = append(rep.Appended, id)
		}

		target := prev
		if r == 0 {
			target = contended
		}
		var closed []string // empty when prev was lost
		err = m.measure(ledgerLock, func(held func()) error {
			_, err := ls.Mutate(ctx, func(d *ledger.Doc) error {
				held()
				var err error
				closed, err = d.MarkDone([]string{target}, today, fmt.Sprintf("closed by demo worker %d", w))
				return err
			})
			return err
		})
		if err != nil {
			return err
		}
		rep.Closed = append(rep.Closed, closed...)
		prev = id

		key, want := stories[rng.IntN(len(stories))], demoTargets[rng.IntN(len(demoTargets))]
		var got board.Status
		err = m.measure(boardLock, func(held func()) error {
			_, err := bs.Mutate(ctx, func(d *board.Doc) error {
				held()
				var err error
				got, err = d.Advance(key, want, board.Stamp(now.Format(time.DateTime)))
				return err
			})
			return err
		})
		if err != nil {
			return err
		}
		if board.Rank(got) < board.Rank(want) {
			rep.Regressed++
		}
		if board.Rank(want) > board.Rank(rep.Requested[key]) {
			rep.Requested[key] = want
		}

		var rec loopstate.TickRecord
		err = m.measure(l.LockPath(), func(held func()) error {
			var err error
			rec, err = l.Tick(ctx, loopstate.TriggerManual, func(context.Context, *loopstate.Run) (loopstate.Result, error) {
				held()
				return loopstate.Result{
					Cost: &loopstate.Cost{Tokens: tickTokens, Seconds: 0.001},
					Note: fmt.Sprintf("demo worker %d, round %d", w, r),
				}, nil
			})
			return err
		})
		if err != nil {
			return err
		}
		if rec.Outcome == loopstate.OK {
			rep.Ticks++
		}
		rep.Rounds = r + 1
		if err := out.Encode(workerLine{Round: r + 1}); err != nil {
			return err
		}
	}
	rep.Acquisitions, rep.Waits, rep.Unmeasured = m.acquisitions, m.waits, m.unmeasured
	return out.Encode(workerLine{Report: &rep})
}

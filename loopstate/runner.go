package loopstate

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/proc"
	"github.com/filetxn/filetxn/lock"
)

// running is the ticks that this process is running: marked in their loop's
// state and not yet settled. It is the package's one global, and holds what
// no file can tell: whether a tick whose current_tick names this process is
// still being run here (by another goroutine, or by a runner that lost its
// lock file and will record the tick once it holds the lock again) or was
// left unfinished (its harness panicked, a write failed).
var running struct {
	mu    sync.Mutex // protects ticks
	ticks []runTick
}

// A runTick is one of this process's ticks in progress.
type runTick struct {
	dir     os.FileInfo     // the loop's directory, for os.SameFile (nil on a backend)
	b       filetxn.Backend // on a backend, the loop's ...
	doc     string          // ... and its state's name there
	n       int64           // current_tick.n
	started time.Time       // current_tick.started_at
	lock    *lock.Handle    // the lock the tick was marked under
}

// markRunning records that this process runs the tick that ct marks in l,
// under the lock h (nil on a backend), and returns the function that
// forgets it, which may be called more than once. A loop whose directory
// cannot be found is not recorded.
func (l *Loop) markRunning(ct *currentTick, h *lock.Handle) func() {
	t := runTick{n: ct.N, started: ct.StartedAt, lock: h}
	if l.root.b != nil {
		t.b, t.doc = l.root.b, docName(l.state)
	} else if t.dir = statDir(l.dir); t.dir == nil {
		return func() {}
	}
	running.mu.Lock()
	running.ticks = append(running.ticks, t)
	running.mu.Unlock()
	return sync.OnceFunc(func() {
		running.mu.Lock()
		defer running.mu.Unlock()
		for i, r := range running.ticks {
			if r == t {
				running.ticks = append(running.ticks[:i], running.ticks[i+1:]...)
				return
			}
		}
	})
}

// runningHere reports whether this process runs the tick that ct marks in
// l (see markRunning), and returns the lock the tick was marked under.
func (l *Loop) runningHere(ct *currentTick) (*lock.Handle, bool) {
	running.mu.Lock()
	defer running.mu.Unlock()
	if len(running.ticks) == 0 {
		return nil, false
	}
	if b := l.root.b; b != nil {
		for _, r := range running.ticks {
			if r.n == ct.N && r.started.Equal(ct.StartedAt) && r.b == b && r.doc == docName(l.state) {
				return nil, true
			}
		}
		return nil, false
	}
	dir := statDir(l.dir)
	if dir == nil {
		return nil, false
	}
	for _, r := range running.ticks {
		if r.n == ct.N && r.started.Equal(ct.StartedAt) && os.SameFile(r.dir, dir) {
			return r.lock, true
		}
	}
	return nil, false
}

// self reports whether ct names this process as its runner.
func (ct *currentTick) self() bool {
	return ct.PID == os.Getpid() && (ct.pidStart == "" || ct.pidStart == proc.Self())
}

// same reports whether ct and o mark the same tick of the same runner.
func (ct *currentTick) same(o *currentTick) bool {
	return o != nil && ct.N == o.N && ct.StartedAt.Equal(o.StartedAt) && ct.PID == o.PID && ct.pidStart == o.pidStart
}

// A liveRunnerError refuses a change of a loop whose current_tick names a
// runner that still runs and whose lock the caller does not share: the
// runner's lock file was removed or replaced while it held it, and the
// caller holds a lock on the file now at the path. It matches
// lock.ErrLockLost and ErrTickInProgress, and for a manual Tick
// lock.ErrWouldBlock too.
type liveRunnerError struct {
	op, loop, lock string
	ct             currentTick
	wouldBlock     bool
	remote         bool // on a backend: the lock is a lease, not a file
}

func (e *liveRunnerError) Error() string {
	if e.remote {
		return fmt.Sprintf("loopstate: %s: tick %d is still running in this process (since %s), but it lost its lock %s (its session's lease ended) (%v): %s refused until that tick has ended",
			e.loop, e.ct.N, e.ct.StartedAt.Format(timeLayout), e.lock, lock.ErrLockLost, e.op)
	}
	return fmt.Sprintf("loopstate: %s: tick %d is still running in pid %d (since %s), but its lock file %s was removed or replaced while it held it (%v): %s refused until that tick has ended",
		e.loop, e.ct.N, e.ct.PID, e.ct.StartedAt.Format(timeLayout), e.lock, lock.ErrLockLost, e.op)
}

func (e *liveRunnerError) Unwrap() []error {
	if e.wouldBlock {
		return []error{lock.ErrLockLost, ErrTickInProgress, lock.ErrWouldBlock}
	}
	return []error{lock.ErrLockLost, ErrTickInProgress}
}

// runnerBusy returns the *liveRunnerError that refuses op when ct (the
// state's current_tick, nil for none) marks a tick whose runner still runs
// and whose lock the caller does not share; nil when no tick is marked,
// when its runner is gone, and for a caller that shares the runner's lock
// (its harness, to which the lock was handed over). It asks the system
// without waiting: a runner that is dying (see goneSoon) counts as
// running, and the caller asks again with waitDying.
//
// A caller that runs it holds a lock on the loop's lock file, or is a
// probe that holds none. For a runner in another process, either shares
// the runner's lock exactly when the holder record of the file now at the
// path is the runner's: a lock file that the runner lost holds, if
// anyone's, the record of whoever took it since, and a harness borrows
// only the lock whose record the runner wrote. A probe that finds no
// record is not refused either: the runner may be one that writes none
// (bmad-loop, a lock taken WithoutHolder) and hold its lock, and a probe
// that would change the state decides again under the lock. For a runner in this
// process, whose lock is still the file at the path, the caller is a probe
// (nobody else can hold that lock); once the runner has lost it, the
// caller is refused.
func (l *Loop) runnerBusy(op string, ct *currentTick) error {
	if ct == nil {
		return nil
	}
	if l.root.b != nil {
		return l.remoteBusy(op, ct)
	}
	if ct.self() {
		h, ok := l.runningHere(ct)
		if !ok {
			return nil // left unfinished by this process
		}
		if current, _ := h.Current(); current {
			return nil // a probe while the runner holds the lock
		}
	} else {
		if proc.Gone(ct.PID, ct.pidStart) {
			return nil
		}
		h, err := lock.ReadHolder(l.lock)
		if err == nil && h != nil && h.PID == ct.PID {
			return nil // the runner's own lock, handed over to its harness
		}
		if err == nil && h == nil && !lock.Held(l.lock) {
			return nil // a probe, while a runner that writes no record (bmad-loop) may hold its lock
		}
	}
	return &liveRunnerError{op: op, loop: l.name, lock: l.lock, ct: *ct}
}

// waitDying reports whether err is a *liveRunnerError whose runner, in
// another process, turns out to be dying: it is gone within dyingRunner
// (see goneSoon). The refused call may then be made again.
func waitDying(err error) bool {
	var e *liveRunnerError
	if !errors.As(err, &e) {
		return false
	}
	return !e.ct.self() && goneSoon(e.ct.PID, e.ct.pidStart)
}

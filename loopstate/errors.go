package loopstate

import (
	"errors"
	"fmt"
)

// Errors returned by this package, matched with errors.Is. A refused
// transition is a [*GuardError], a halt found by CheckGate an error
// matching ErrHalted that gives the halt's reasons, and a state file this package will not use a [*StateError]; each unwraps
// to one sentinel below. A lock that stays busy past the caller's context
// is the lock package's *lock.BusyError, naming the lock file and its
// holder.
var (
	// ErrNotRunning is returned when an operation needs a running loop (pause,
	// the start of a tick) and the loop is paused or halted. Pausing a
	// halted loop is refused so that a pause never hides a halt.
	ErrNotRunning = errors.New("loopstate: not running")

	// ErrNotPaused is returned by Resume when the loop is not paused. A
	// halted loop is refused too: only Approve releases a halt.
	ErrNotPaused = errors.New("loopstate: not paused")

	// ErrNotHalted is returned by Approve when the loop is not halted.
	ErrNotHalted = errors.New("loopstate: not halted")

	// ErrExists is returned by Root.Create when the name is taken.
	ErrExists = errors.New("loopstate: exists")

	// ErrTickInProgress is returned by Tick when it runs inside the harness of
	// a tick of the same loop (it holds a lock borrowed from the runner):
	// running it would take the outer tick for an abandoned one. It is
	// returned too, together with lock.ErrWouldBlock, when a manual tick
	// gets the loop's lock while the marked tick's runner still runs: the
	// runner's lock file was replaced or removed under it, and the runner's
	// tick is not abandoned; try again once it has ended.
	ErrTickInProgress = errors.New("loopstate: a tick of this loop is in progress")

	// ErrInvalidName is returned when a loop name does not match
	// ^[a-z0-9][a-z0-9-]{0,62}$. Nothing is read or created.
	ErrInvalidName = errors.New("loopstate: invalid loop name")

	// ErrInvalid is returned when an argument is invalid: a negative or
	// non-finite threshold, an unknown trigger. Nothing is read or
	// written, and no lock is taken.
	ErrInvalid = errors.New("loopstate: invalid argument")

	// ErrNoLoop is returned when no loop has the name: its directory has
	// no state file. (A loop whose lock file alone is missing gets it back.)
	ErrNoLoop = errors.New("loopstate: no such loop")

	// ErrDeleted is returned when the loop was deleted while the caller
	// waited for its lock: the loop's directory is gone, or is another
	// one (a loop of the same name created since), so the lock it got
	// guards nothing it asked for.
	ErrDeleted = errors.New("loopstate: loop deleted")

	// ErrHalted is returned by CheckGate when it finds the loop halted or
	// halts it. (A tick that halts the loop returns no error: its
	// TickRecord says so.)
	ErrHalted = errors.New("loopstate: halted")

	// ErrPaused is returned by CheckGate when the loop is paused.
	ErrPaused = errors.New("loopstate: paused")

	// ErrSchema is returned when a state file has a schema major this
	// package does not know. The file is never rewritten.
	ErrSchema = errors.New("loopstate: unknown schema major")

	// ErrMalformed is returned when a state file is not the format: not
	// UTF-8 JSON, a key missing, unknown or repeated, a value of the wrong
	// type. The file is never rewritten.
	ErrMalformed = errors.New("loopstate: malformed state")

	// ErrOverflow is returned when an operation would take a counter
	// (tick_count, failures_total, consecutive_failures, resumed_count) or a
	// sum in spent past the largest value the format holds. Nothing is
	// written: the state stays as it was, and readable.
	ErrOverflow = errors.New("loopstate: counter overflow")

	// ErrInvariant is returned when a state breaks an invariant of the format,
	// on reading (the file is never rewritten) or on writing (nothing is
	// written).
	ErrInvariant = errors.New("loopstate: invariant broken")
)

// A GuardError reports a transition refused by its guard: the loop's status
// does not allow it. Nothing was written. It unwraps to ErrNotRunning,
// ErrNotPaused, ErrNotHalted or (from check-gate) ErrPaused.
type GuardError struct {
	Loop   string // the loop's name
	Op     string // the transition: "pause", "resume", "approve", "check-gate", "tick"
	Status Status // the status that refused it
	Err    error  // the sentinel
}

// Error returns "<loop>: not halted (status running)", the line a command
// prints when it refuses.
func (e *GuardError) Error() string {
	r := reason(e.Err)
	if r == string(e.Status) {
		return e.Loop + ": " + r
	}
	return fmt.Sprintf("%s: %s (status %s)", e.Loop, r, e.Status)
}

// Unwrap returns e.Err.
func (e *GuardError) Unwrap() error { return e.Err }

// reason is a sentinel's message without the package prefix.
func reason(err error) string {
	s := err.Error()
	if len(s) > len("loopstate: ") && s[:len("loopstate: ")] == "loopstate: " {
		return s[len("loopstate: "):]
	}
	return s
}

// haltedError reports a halted loop, with the reasons of its halt. It
// unwraps to ErrHalted.
type haltedError struct {
	loop   string
	reason string // halt.reason
}

// Error returns "<loop>: halted (max_ticks: 20 ticks in window >= 20)".
func (e *haltedError) Error() string {
	return fmt.Sprintf("%s: halted (%s)", e.loop, e.reason)
}

func (e *haltedError) Unwrap() error { return ErrHalted }

// A StateError reports a state file (or state bytes) that this package refuses
// to use: an unknown schema major, a malformed document, or a broken
// invariant. It names the file and the key or invariant at fault. It unwraps
// to ErrSchema, ErrMalformed or ErrInvariant.
type StateError struct {
	Path      string // the state file; "" for bytes that came from elsewhere
	Key       string // the JSON key at fault, dotted ("gates.budget.usd"); "" for the document
	Invariant string // the invariant broken, as the format words it; "" unless Err is ErrInvariant
	Detail    string // what was found
	Err       error  // the sentinel
}

// Error returns "loopstate: <path>: invariant <invariant> broken: <detail>"
// or "loopstate: <path>: <key>: <detail>".
func (e *StateError) Error() string {
	s := "loopstate: "
	if e.Path != "" {
		s += e.Path + ": "
	}
	switch {
	case e.Invariant != "":
		s += "invariant " + e.Invariant + " broken"
	case e.Key != "":
		s += e.Key
	default:
		s += reason(e.Err)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns e.Err.
func (e *StateError) Unwrap() error { return e.Err }

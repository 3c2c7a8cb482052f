package loopstate

import (
	"errors"
	"fmt"
)

// Errors returned by this package, matched with errors.Is. An operation
// refused because of the loop's status is a [*GuardError] and a state this
// package will not read or write a [*StateError]; each unwraps to one
// sentinel below. A lock that stays busy past the caller's context is the
// lock package's *lock.BusyError, naming the lock file and its holder.
var (
	// ErrExists is returned by Root.Create when the name is taken.
	ErrExists = errors.New("loopstate: exists")

	// ErrInvalid is returned when an argument is invalid: a loop name that
	// does not match ^[a-z0-9][a-z0-9-]{0,62}$, a negative or non-finite
	// threshold, a text field longer than 4096 bytes, an unknown trigger, a
	// nil harness. Nothing is read or written, and no lock is taken.
	ErrInvalid = errors.New("loopstate: invalid argument")

	// ErrNoLoop is returned when no loop has the name: its directory has no
	// state file, or the loop was deleted (and perhaps created again) while
	// the caller waited for its lock. (A loop whose lock file alone is
	// missing gets it back.)
	ErrNoLoop = errors.New("loopstate: no such loop")

	// ErrTickInProgress is returned by Tick when it runs inside the harness of
	// a tick of the same loop (it holds a lock borrowed from the runner):
	// running it would take the outer tick for an abandoned one. It is
	// returned too, together with lock.ErrWouldBlock, when a manual tick
	// gets the loop's lock while the marked tick's runner still runs: the
	// runner's lock file was replaced or removed under it, and the runner's
	// tick is not abandoned; try again once it has ended.
	ErrTickInProgress = errors.New("loopstate: a tick of this loop is in progress")

	// ErrStatus is returned, as a *GuardError that gives the status, when
	// the loop's status does not allow an operation: pause of a loop that is
	// not running (a pause must not hide a halt), resume of one that is not
	// paused (only approve releases a halt), approve of one that is not
	// halted, check-gate of one that is paused or halted.
	ErrStatus = errors.New("loopstate: wrong status")

	// ErrMalformed is returned, as a *StateError, when a state is not one
	// this package reads or writes: not UTF-8 JSON, a key missing, unknown or
	// repeated, a value of the wrong type, an unknown schema major, or a
	// broken invariant of the format. A file is then never rewritten; a Doc
	// that a change left so is not written.
	ErrMalformed = errors.New("loopstate: malformed state")

	// ErrOverflow is returned when an operation would take a counter
	// (tick_count, failures_total, consecutive_failures, resumed_count) or a
	// sum in spent past the largest value the format holds. Nothing is
	// written: the state stays as it was, and readable.
	ErrOverflow = errors.New("loopstate: counter overflow")
)

// A GuardError reports an operation refused because of the loop's status.
// Nothing was written. It unwraps to ErrStatus.
type GuardError struct {
	Status Status // the status that refused it

	loop   string // the loop's name
	op     string // "pause", "resume", "approve", "check-gate", "tick"
	reason string // halt.reason, for check-gate on a halted loop
}

// Error returns the line a command prints when it refuses, for example
// "nightly: not halted (status running)", or for check-gate "nightly:
// paused" and "nightly: halted (max_ticks: 20 ticks in window >= 20)".
func (e *GuardError) Error() string {
	switch {
	case e.op == "check-gate" && e.reason != "":
		return fmt.Sprintf("%s: %s (%s)", e.loop, e.Status, e.reason)
	case e.op == "check-gate":
		return e.loop + ": " + string(e.Status)
	}
	want := Running
	switch e.op {
	case "resume":
		want = Paused
	case "approve":
		want = Halted
	}
	return fmt.Sprintf("%s: not %s (status %s)", e.loop, want, e.Status)
}

// Unwrap returns ErrStatus.
func (e *GuardError) Unwrap() error { return ErrStatus }

// A StateError reports a state file (or state bytes) that this package refuses
// to read, or a Doc that it refuses to write: it names the file and the key
// at fault. It unwraps to ErrMalformed.
type StateError struct {
	Path string // the state file; "" for bytes that came from elsewhere
	Key  string // the JSON key at fault, dotted ("gates.budget.usd"); "" for the whole document

	invariant string // the invariant broken, as the format words it; "" for none
	detail    string // what was found
}

// Error returns "loopstate: <path>: invariant <invariant> broken: <detail>"
// or "loopstate: <path>: <key>: <detail>".
func (e *StateError) Error() string {
	s := "loopstate: "
	if e.Path != "" {
		s += e.Path + ": "
	}
	switch {
	case e.invariant != "":
		s += "invariant " + e.invariant + " broken"
	case e.Key != "":
		s += e.Key
	default:
		s += "malformed state"
	}
	if e.detail != "" {
		s += ": " + e.detail
	}
	return s
}

// Unwrap returns ErrMalformed.
func (e *StateError) Unwrap() error { return ErrMalformed }

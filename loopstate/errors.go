package loopstate

import (
	"errors"
	"fmt"

	"github.com/filetxn/filetxn/lock"
)

// Errors returned by this package, matched with errors.Is. A refused
// transition is a [*GuardError], a busy lock a [*BusyError], a halt a
// [*HaltedError] and a state file this package will not use a [*StateError];
// each unwraps to one sentinel below. [ExitCode] maps them to the exit codes
// of the format's section 6, given in brackets.
var (
	// ErrNotRunning is returned when an operation needs a running loop (pause,
	// the start of a tick) and the loop is paused or halted [1]. Pausing a
	// halted loop is refused so that a pause never hides a halt.
	ErrNotRunning = errors.New("loopstate: not running")

	// ErrNotPaused is returned by Resume when the loop is not paused [1]. A
	// halted loop is refused too: only Approve releases a halt.
	ErrNotPaused = errors.New("loopstate: not paused")

	// ErrNotHalted is returned by Approve when the loop is not halted [1].
	ErrNotHalted = errors.New("loopstate: not halted")

	// ErrExists is returned by Root.Create when the name is taken [1].
	ErrExists = errors.New("loopstate: exists")

	// ErrTickInProgress is returned by Tick when it runs inside the harness of
	// a tick of the same loop (it holds a lock borrowed from the runner) [1]:
	// running it would take the outer tick for an abandoned one. It is
	// returned too, together with ErrBusy [75], when a tick gets the loop's
	// lock while the marked tick's runner still runs: the runner's lock file
	// was replaced or removed under it, and the runner's tick is not
	// abandoned; try again once it has ended.
	ErrTickInProgress = errors.New("loopstate: a tick of this loop is in progress")

	// ErrInvalidName is returned when a loop name does not match
	// ^[a-z0-9][a-z0-9-]{0,62}$ [2]. Nothing is read or created.
	ErrInvalidName = errors.New("loopstate: invalid loop name")

	// ErrInvalid is returned when an argument is invalid: a negative or
	// non-finite threshold, an unknown trigger [2]. Nothing is read or
	// written, and no lock is taken.
	ErrInvalid = errors.New("loopstate: invalid argument")

	// ErrNoLoop is returned when no loop has the name [3]: its directory has
	// no state file. (A loop whose lock file alone is missing gets it back.)
	ErrNoLoop = errors.New("loopstate: no such loop")

	// ErrDeleted is returned when the loop was deleted while the caller
	// waited for its lock [3]: the loop's directory is gone, or is another
	// one (a loop of the same name created since), so the lock it got
	// guards nothing it asked for.
	ErrDeleted = errors.New("loopstate: loop deleted")

	// ErrHalted is returned when the loop is halted: by CheckGate, finding it
	// halted or halting it, and by Tick when a gate halted it [4].
	ErrHalted = errors.New("loopstate: halted")

	// ErrPaused is returned by CheckGate when the loop is paused [5].
	ErrPaused = errors.New("loopstate: paused")

	// ErrBusy is returned when the loop's lock could not be taken in time
	// [75]: the context ended the wait, or the call does not wait.
	ErrBusy = errors.New("loopstate: busy")

	// ErrSchema is returned when a state file has a schema major this
	// package does not know [1]. The file is never rewritten.
	ErrSchema = errors.New("loopstate: unknown schema major")

	// ErrMalformed is returned when a state file is not the format: not
	// UTF-8 JSON, a key missing or unknown, a value of the wrong type [1].
	// The file is never rewritten.
	ErrMalformed = errors.New("loopstate: malformed state")

	// ErrOverflow is returned when an operation would take a counter
	// (tick_count, failures_total, consecutive_failures, resumed_count) or a
	// sum in spent past the largest value the format holds [1]. Nothing is
	// written: the state stays as it was, and readable.
	ErrOverflow = errors.New("loopstate: counter overflow")

	// ErrInvariant is returned when a state breaks an invariant of the format,
	// on reading (the file is never rewritten) or on writing (nothing is
	// written) [1].
	ErrInvariant = errors.New("loopstate: invariant broken")
)

// Exit codes of the format's section 6, returned by [ExitCode].
const (
	ExitOK      = 0  // done
	ExitRefused = 1  // guard refused (and any other failure)
	ExitUsage   = 2  // usage error
	ExitNoLoop  = 3  // no such loop
	ExitHalted  = 4  // halted by a gate, or check-gate finds the loop halted
	ExitPaused  = 5  // check-gate finds the loop paused
	ExitBusy    = 75 // lock busy (EX_TEMPFAIL)
)

// ExitCode returns the exit code of the format's section 6 for an error
// returned by this package: 0 for nil, 75 for a busy lock, 3 for a missing or
// deleted loop, 4 for a halt, 5 for check-gate on a paused loop, 2 for an
// invalid argument or name, and 1 for a refused guard and everything else.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrBusy):
		return ExitBusy
	case errors.Is(err, ErrNoLoop), errors.Is(err, ErrDeleted):
		return ExitNoLoop
	case errors.Is(err, ErrHalted):
		return ExitHalted
	case errors.Is(err, ErrPaused):
		return ExitPaused
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrInvalidName):
		return ExitUsage
	}
	return ExitRefused
}

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

// A HaltedError reports a halted loop: halted now by the gates listed in
// Halt.Gates, or found halted. It unwraps to ErrHalted.
type HaltedError struct {
	Loop string
	Halt Halt // the halt record of the state
	New  bool // the call halted the loop (false: it was halted before)
}

// Error returns "<loop>: halted (max_ticks: 20 ticks in window >= 20)".
func (e *HaltedError) Error() string {
	return fmt.Sprintf("%s: halted (%s)", e.Loop, e.Halt.Reason)
}

// Unwrap returns ErrHalted.
func (e *HaltedError) Unwrap() error { return ErrHalted }

// A BusyError reports that the loop's lock was held by someone else until the
// caller stopped waiting (its context ended, or it does not wait). Lock holds
// the lock package's error, with the holder record read from the lock file
// (pid, program, purpose, since). It matches ErrBusy, and through Lock
// lock.ErrWouldBlock or the context's error.
type BusyError struct {
	Loop string
	Lock *lock.BusyError
}

// Error returns "<loop>: busy, held by pid 4242 (looprunner: tick
// ci-triage) on host h for 12s".
func (e *BusyError) Error() string {
	return fmt.Sprintf("%s: busy, held by %s", e.Loop, e.Lock.Holder.String())
}

// Unwrap returns ErrBusy and the lock package's error.
func (e *BusyError) Unwrap() []error { return []error{ErrBusy, e.Lock} }

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

// busyError turns the lock package's busy error into a *BusyError for the
// loop, and passes any other error through.
func busyError(name string, err error) error {
	var lb *lock.BusyError
	if errors.As(err, &lb) {
		return &BusyError{Loop: name, Lock: lb}
	}
	return err
}

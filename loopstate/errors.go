package loopstate

import (
	"errors"
	"fmt"
)

// Errors returned by this package, matched with errors.Is. An operation
// refused because of the loop's status is a [*GuardError] that unwraps to
// ErrStatus. The others are the module's own vocabulary:
//
//   - an argument refused before any I/O, taking no lock (a loop name not
//     matching ^[a-z0-9][a-z0-9-]{0,62}$, or for Create a Windows device name
//     such as nul; a negative or non-finite threshold; a text field over 4096
//     bytes; an unknown trigger; a nil harness) matches
//     filetxn.ErrInvalidArgument, naming the operation, argument and value;
//   - a loop that is not there (no state file, or deleted, perhaps created
//     again, while the caller waited) matches filetxn.ErrNotFound, naming the
//     loop and its state file (a lock file missing alone is made again);
//   - Create of a name that is taken matches fs.ErrExist;
//   - a state not to be read or written (not UTF-8 JSON; a key missing,
//     unknown or repeated; a wrong type; an unknown schema major; a broken
//     invariant, also one a change left; a counter or spent sum past the
//     format's largest value) is a *filetxn.FormatError whose Key is the JSON
//     key ("gates.max_ticks"), in an *fs.PathError naming the state file; such
//     a file is never rewritten, and such a change never written;
//   - a lock busy past ctx is a *lock.BusyError naming the file and holder.
var (
	// ErrTickInProgress is returned by Tick when it runs inside the harness of
	// a tick of the same loop (it holds a lock borrowed from the runner):
	// running it would take the outer tick for an abandoned one. It is
	// returned too, together with lock.ErrWouldBlock, when a manual tick
	// gets the loop's lock while the marked tick's runner still runs: the
	// runner's lock file was replaced or removed under it, and the runner's
	// tick is not abandoned; try again once it has ended. (A scheduled tick
	// logs skipped/busy instead.) Every other change
	// of such a loop (Mutate, the transitions, Delete) is refused the same
	// way, with an error matching ErrTickInProgress and lock.ErrLockLost
	// that names the runner's pid and tick.
	ErrTickInProgress = errors.New("loopstate: a tick of this loop is in progress")

	// ErrStatus is returned, as a *GuardError that gives the status, when
	// the loop's status does not allow an operation: pause of a loop that is
	// not running (a pause must not hide a halt), resume of one that is not
	// paused (only approve releases a halt), approve of one that is not
	// halted, check-gate of one that is paused or halted.
	ErrStatus = errors.New("loopstate: wrong status")
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

// brokenInvariant is the Err of a *filetxn.FormatError for a document that
// breaks an invariant of the format.
type brokenInvariant struct {
	name   string // the invariant, as the format words it
	detail string // what was found
}

func (e *brokenInvariant) Error() string {
	return "invariant " + e.name + " broken: " + e.detail
}

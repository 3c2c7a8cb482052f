// Package lin checks histories of operations on a ledger and on a board,
// recorded by several clients at once, for linearizability: whether some
// order of the operations, each taking effect at one instant between its
// call and its return, explains every result that a client saw. It is the
// check of the etcd module's demo and may serve its tests too.
//
// A client records an operation with its call and return times (nanoseconds
// on one clock that every client shares: the wall clock of one machine) and
// its outcome: done, with the result seen; failed, known to have had no
// effect (a fenced commit refused, a lock never taken); or unknown, when it
// may or may not have taken effect (a request cut off by a dying member).
// An unknown operation may take effect at any instant after its call.
//
// # Caveats
//
//   - The check is porcupine's, which is exponential in the worst case: it
//     is meant for the histories of a demo or a test (a few thousand
//     operations, mostly serialized by a lock), and gives up after its
//     timeout with an undecided result.
//   - The ledger model assumes that the text the clients add mentions no
//     id of the form DW-<n>: the next id minted is then one past the
//     highest id the ledger's entries and seed carry.
package lin

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
)

// An Outcome is how an operation ended, as its client knows it.
type Outcome int

const (
	// Done: the operation returned its result.
	Done Outcome = iota
	// Failed: the operation returned an error that says it had no effect.
	Failed
	// Unknown: the operation returned an error that leaves open whether it
	// took effect.
	Unknown
)

// String returns "done", "failed" or "unknown".
func (o Outcome) String() string {
	switch o {
	case Done:
		return "done"
	case Failed:
		return "failed"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// A Result is the verdict of a check.
type Result struct {
	// Ops is the number of operations checked.
	Ops int
	// Decided is false when the check ran out of time before finding an
	// order or proving there is none.
	Decided bool
	// Linearizable is true when some order explains every result; it is
	// false for a history proven not linearizable and for an undecided one.
	Linearizable bool
}

// String describes the result in a few words.
func (r Result) String() string {
	switch {
	case !r.Decided:
		return fmt.Sprintf("%d operations, undecided (the check timed out)", r.Ops)
	case r.Linearizable:
		return fmt.Sprintf("%d operations, linearizable", r.Ops)
	}
	return fmt.Sprintf("%d operations, NOT linearizable", r.Ops)
}

// check runs porcupine on ops with model m, giving up after timeout.
func check(m porcupine.Model, ops []porcupine.Operation, timeout time.Duration) Result {
	res := porcupine.CheckOperationsTimeout(m, ops, timeout)
	return Result{Ops: len(ops), Decided: res != porcupine.Unknown, Linearizable: res == porcupine.Ok}
}

// never is the return time of an operation whose outcome is unknown: it
// may take effect at any instant after its call.
const never = int64(1<<63 - 1)

// span returns the interval of an operation for porcupine.
func span(call, ret int64, o Outcome) (int64, int64) {
	if o == Unknown {
		return call, never
	}
	return call, ret
}

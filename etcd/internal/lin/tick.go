package lin

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
)

// A TickOp is one manual tick of one loop, as its client recorded it: when
// done, the tick was counted as N (the loop's tick_count after it).
type TickOp struct {
	Client  int     `json:"client"`
	N       int64   `json:"n,omitempty"`
	Call    int64   `json:"call"`   // nanoseconds
	Return  int64   `json:"return"` // nanoseconds; ignored when Outcome is Unknown
	Outcome Outcome `json:"outcome"`
}

// TickModel returns the porcupine model of a loop's tick count, starting
// at zero: a tick that is done must be counted after every tick that took
// effect before it, so its N is above the count it found. It may be more
// than one above: a tick that settles one whose runner was cut off counts
// that one as abandoned first. A failed or unknown tick changes nothing
// the model can see, as its count, if any, shows in the next done tick's
// N. So the model catches a tick counted twice (two done ticks with one N)
// and a count that goes back in time (a tick that returns after another
// has returned, and yet is counted below it).
func TickModel() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return int64(0) },
		Step: func(state, input, _ any) (bool, any) {
			op, n := input.(TickOp), state.(int64)
			if op.Outcome != Done {
				return true, n
			}
			return op.N > n, op.N
		},
		DescribeOperation: func(input, _ any) string {
			op := input.(TickOp)
			return fmt.Sprintf("tick -> %d [%s]", op.N, op.Outcome)
		},
	}
}

// CheckTicks checks that ops, the manual ticks of every client on one loop
// created with tick_count 0, are linearizable, giving up after timeout.
func CheckTicks(ops []TickOp, timeout time.Duration) Result {
	hist := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		call, ret := span(op.Call, op.Return, op.Outcome)
		hist[i] = porcupine.Operation{ClientId: op.Client, Input: op, Call: call, Return: ret}
	}
	return check(TickModel(), hist, timeout)
}

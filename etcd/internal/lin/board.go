package lin

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/filetxn/filetxn/board"
)

// A BoardOp is one advance of a story of one board, as its client recorded
// it: Store.Advance(Key, Target) answered Got, the status the story ends at.
type BoardOp struct {
	Client  int          `json:"client"`
	Key     string       `json:"key"`
	Target  board.Status `json:"target"`
	Got     board.Status `json:"got,omitempty"`
	Call    int64        `json:"call"`   // nanoseconds
	Return  int64        `json:"return"` // nanoseconds; ignored when Outcome is Unknown
	Outcome Outcome      `json:"outcome"`
}

// advanced returns the status a story at st ends at when advanced to
// target: the later of the two in the board's order.
func advanced(st, target board.Status) board.Status {
	if board.Rank(target) > board.Rank(st) {
		return target
	}
	return st
}

// BoardModel returns the porcupine model of the stories of a board whose
// statuses start as seed says; the operations are partitioned by story,
// each story an object of its own. A story absent from seed starts at
// backlog.
func BoardModel(seed map[string]board.Status) porcupine.Model {
	start := func(key string) board.Status {
		if st, ok := seed[key]; ok {
			return st
		}
		return board.Backlog
	}
	// A state is a story's status; "" is its status in seed, which only
	// the first operation's key tells.
	nm := porcupine.NondeterministicModel{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			index := map[string]int{}
			var parts [][]porcupine.Operation
			for _, op := range history {
				k := op.Input.(BoardOp).Key
				i, ok := index[k]
				if !ok {
					i = len(parts)
					index[k] = i
					parts = append(parts, nil)
				}
				parts[i] = append(parts[i], op)
			}
			return parts
		},
		Init: func() []any { return []any{board.Status("")} },
		Step: func(state, input, _ any) []any {
			op, st := input.(BoardOp), state.(board.Status)
			if st == "" {
				st = start(op.Key)
			}
			after := advanced(st, op.Target)
			switch op.Outcome {
			case Failed:
				return []any{st}
			case Unknown:
				return []any{st, after}
			}
			if op.Got != after {
				return nil
			}
			return []any{after}
		},
		DescribeOperation: func(input, _ any) string {
			op := input.(BoardOp)
			return fmt.Sprintf("advance(%s, %s) -> %s [%s]", op.Key, op.Target, op.Got, op.Outcome)
		},
	}
	return nm.ToModel()
}

// CheckBoard checks that ops, the advances of every client on one board
// whose stories started as seed says, are linearizable, giving up after
// timeout.
func CheckBoard(seed map[string]board.Status, ops []BoardOp, timeout time.Duration) Result {
	hist := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		call, ret := span(op.Call, op.Return, op.Outcome)
		hist[i] = porcupine.Operation{ClientId: op.Client, Input: op, Call: call, Return: ret}
	}
	return check(BoardModel(seed), hist, timeout)
}

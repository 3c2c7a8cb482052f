package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/etcd/internal/etcdtest"
	"github.com/filetxn/filetxn/ledger"
	"github.com/filetxn/filetxn/lock"
)

// The linearizability tests record the history of operations that several
// processes run at once on one store (when each was called, when it
// returned, what it returned) while the cluster's leader is killed and
// restarted, and check with porcupine that some order of them, each placed
// between its call and its return, explains every result.
//
// An operation whose outcome is unknown (it failed: its commit may have
// been published all the same) is given no return: it may take effect at
// any point after its call, or never (last, past every read). A write
// refused with an error matching lock.ErrLockLost (the fence) or
// lock.ErrWouldBlock published nothing, by the Backend's contract, and is
// left out, as is a failed read.

var _ = func() int {
	etcdtest.Register("lin-counter", childMain("lin-counter", counterClient))
	etcdtest.Register("lin-ledger", childMain("lin-ledger", ledgerClient))
	return 0
}()

// A linRecord is one operation of a history, as a client process emits it.
type linRecord struct {
	Proc    int
	Write   bool   // an increment or an append; else a read
	Arg     string // the append's title
	Call    int64  // wall-clock nanoseconds, shared by the processes of one host
	Return  int64
	OK      bool   // the call succeeded, so its outcome is known
	Refused bool   // the call failed and, by the Backend's contract, published nothing
	Value   string // what it returned: a count, an id, or the titles read
}

// never is the return of an operation whose outcome is unknown.
const never = math.MaxInt64

// operations turns the processes' records into porcupine's history: failed
// reads dropped, failed writes left without a return.
func operations(recs [][]linRecord) []porcupine.Operation {
	var ops []porcupine.Operation
	for _, rs := range recs {
		for _, r := range rs {
			if (!r.Write && !r.OK) || r.Refused {
				continue
			}
			ret := r.Return
			if !r.OK {
				ret = never
			}
			ops = append(ops, porcupine.Operation{ClientId: r.Proc, Input: r, Call: r.Call, Output: r.OK, Return: ret})
		}
	}
	return ops
}

// counterModel is a counter: a write increments it and returns its new
// value; a read returns its value. A write whose outcome is unknown may
// increment it or not.
var counterModel = porcupine.Model{
	Init: func() any { return 0 },
	Step: func(state, input, output any) (bool, any) {
		n, r := state.(int), input.(linRecord)
		switch {
		case r.Write && !r.OK:
			return true, n + 1
		case r.Write:
			return r.Value == fmt.Sprint(n+1), n + 1
		}
		return r.Value == fmt.Sprint(n), n
	},
	DescribeOperation: describe,
}

// ledgerModel is a ledger: an append of a title returns the next id
// (DW-1, DW-2, ...) and adds the title at the end; a read returns every
// title, in order. The state is the titles, joined by newlines.
var ledgerModel = porcupine.Model{
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		s, r := state.(string), input.(linRecord)
		if !r.Write {
			return r.Value == s, s
		}
		next := s + r.Arg + "\n"
		if !r.OK {
			return true, next
		}
		return r.Value == fmt.Sprintf("DW-%d", strings.Count(s, "\n")+1), next
	},
	DescribeOperation: describe,
}

func describe(input, output any) string {
	r := input.(linRecord)
	switch {
	case r.Write && !r.OK:
		return fmt.Sprintf("write %s -> ?", r.Arg)
	case r.Write:
		return fmt.Sprintf("write %s -> %s", r.Arg, r.Value)
	}
	return fmt.Sprintf("read -> %q", r.Value)
}

// A counterDoc is the counter's JSON document.
type counterDoc struct {
	N int `json:"n"`
}

// linOp runs op and emits its record, timed around the call.
func linOp(r linRecord, op func(ctx context.Context) (string, error)) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r.Call = time.Now().UnixNano()
	v, err := op(ctx)
	r.Return = time.Now().UnixNano()
	r.OK, r.Value = err == nil, v
	r.Refused = errors.Is(err, lock.ErrLockLost) || errors.Is(err, lock.ErrWouldBlock)
	return emit(r)
}

// counterClient runs e.count operations on the counter, each an increment
// (Mutate) or a read (View), at random.
func counterClient(e faultEnv) error {
	b, closeAll, err := e.backend()
	if err != nil {
		return err
	}
	defer closeAll()
	s, err := filetxn.NewStore("lin/counter.json", filetxn.JSON[counterDoc](), filetxn.WithBackend(b))
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(e.proc), 1))
	for range e.count {
		r := linRecord{Proc: e.proc, Write: rng.IntN(2) == 0}
		err := linOp(r, func(ctx context.Context) (string, error) {
			if !r.Write {
				d, err := s.View(ctx)
				if err != nil {
					return "", err
				}
				return fmt.Sprint(d.N), nil
			}
			var n int
			_, err := s.Mutate(ctx, func(d *counterDoc) error {
				d.N++
				n = d.N
				return nil
			})
			return fmt.Sprint(n), err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// ledgerClient runs e.count operations on a ledger, each an append of a
// title of its own (ledger.Store.Append) or a read of every title (View),
// at random. A failed append is not retried.
func ledgerClient(e faultEnv) error {
	b, closeAll, err := e.backend()
	if err != nil {
		return err
	}
	defer closeAll()
	s, err := ledger.Open("lin/ledger.md", filetxn.WithBackend(b))
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(e.proc), 2))
	for seq := range e.count {
		sp := spec(e.proc, seq)
		r := linRecord{Proc: e.proc, Write: rng.IntN(2) == 0, Arg: sp.Title}
		err := linOp(r, func(ctx context.Context) (string, error) {
			if !r.Write {
				d, err := s.View(ctx)
				if err != nil {
					return "", err
				}
				var titles strings.Builder
				for _, en := range d.Entries() {
					titles.WriteString(en.Title + "\n")
				}
				return titles.String(), nil
			}
			ids, err := s.Append(ctx, sp)
			if err != nil {
				return "", err
			}
			return ids[0], nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// checkLinearizable fails the test unless history is linearizable under
// model.
func checkLinearizable(t *testing.T, model porcupine.Model, history []porcupine.Operation) {
	t.Helper()
	res := porcupine.CheckOperationsTimeout(model, history, time.Minute)
	switch res {
	case porcupine.Ok:
		unknown := 0
		for _, op := range history {
			if op.Return == never {
				unknown++
			}
		}
		t.Logf("%d operations linearizable (%d with an unknown outcome)", len(history), unknown)
	case porcupine.Illegal:
		t.Errorf("history of %d operations is not linearizable", len(history))
	default:
		t.Errorf("linearizability of %d operations: %v, no answer within the checker's timeout", len(history), res)
	}
}

// runHistory runs procs processes x ops operations of the client named
// name on a 3-member cluster, killing its leader after a third of them and
// restarting it after half, and returns their records.
func runHistory(t *testing.T, name string, procs, ops int) [][]linRecord {
	c := etcdtest.Start(t, 3)
	cs := startChildren(t, name, procs, func(i int) faultEnv {
		return faultEnv{endpoints: c.Endpoints(), prefix: name, proc: i, count: ops, ttl: 5 * time.Second}
	})
	killLeaderMidway(t, c, cs, procs*ops/3, procs*ops/2)
	cs.wait()
	return records[linRecord](t, cs)
}

// TestLinearizableCounter checks the history of 4 processes x 60 Mutates
// (increments) and Views of one JSON counter, under a leader kill.
//
// It can fail: TestLinearizableChecksCatch feeds the model doctored
// histories, and the ablation run (a Backend whose lock key is made per
// process and whose Commit has no fence) turns it red, not linearizable,
// as increments are lost. With the per-process lock and the fence kept it
// stays green: the racing commits are refused and left out.
func TestLinearizableCounter(t *testing.T) {
	checkLinearizable(t, counterModel, operations(runHistory(t, "lin-counter", 4, 60)))
}

// TestLinearizableLedgerAppend checks the history of 4 processes x 60
// ledger appends and Views of one ledger, under a leader kill.
//
// It can fail: see TestLinearizableChecksCatch; the ablation named at
// TestLinearizableCounter turns it red too (appends lost).
func TestLinearizableLedgerAppend(t *testing.T) {
	checkLinearizable(t, ledgerModel, operations(runHistory(t, "lin-ledger", 4, 60)))
}

// TestLinearizableChecksCatch feeds each model a history that no order
// explains, and one that an order does, so that the checks above are seen
// to tell them apart.
func TestLinearizableChecksCatch(t *testing.T) {
	w := func(proc int, call, ret int64, ok bool, arg, v string) linRecord {
		return linRecord{Proc: proc, Write: true, Arg: arg, Call: call, Return: ret, OK: ok, Value: v}
	}
	rd := func(proc int, call, ret int64, v string) linRecord {
		return linRecord{Proc: proc, Call: call, Return: ret, OK: true, Value: v}
	}
	tests := []struct {
		name  string
		model porcupine.Model
		recs  []linRecord
		want  porcupine.CheckResult
	}{
		{"counter: two increments, both 1 (a lost update)", counterModel,
			[]linRecord{w(0, 1, 3, true, "", "1"), w(1, 2, 4, true, "", "1")}, porcupine.Illegal},
		{"counter: a read of 0 after an increment returned (a stale read)", counterModel,
			[]linRecord{w(0, 1, 2, true, "", "1"), rd(1, 3, 4, "0")}, porcupine.Illegal},
		{"counter: overlapping increments and reads", counterModel,
			[]linRecord{w(0, 1, 5, true, "", "2"), w(1, 2, 4, true, "", "1"), rd(2, 3, 6, "1")}, porcupine.Ok},
		{"counter: an unknown increment seen, or not", counterModel,
			[]linRecord{w(0, 1, 2, false, "", ""), rd(1, 3, 4, "0"), rd(1, 5, 6, "1")}, porcupine.Ok},
		{"ledger: an acknowledged append missing from a later read (a lost append)", ledgerModel,
			[]linRecord{w(0, 1, 2, true, "a", "DW-1"), w(1, 3, 4, true, "b", "DW-2"), rd(2, 5, 6, "b\n")}, porcupine.Illegal},
		{"ledger: one id given twice", ledgerModel,
			[]linRecord{w(0, 1, 3, true, "a", "DW-1"), w(1, 2, 4, true, "b", "DW-1")}, porcupine.Illegal},
		{"ledger: appends in the order of their ids, one unknown", ledgerModel,
			[]linRecord{w(0, 1, 5, true, "a", "DW-2"), w(1, 2, 3, true, "b", "DW-1"), w(2, 2, 3, false, "c", ""), rd(1, 6, 7, "b\na\nc\n")}, porcupine.Ok},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs := make([][]linRecord, 3)
			for _, r := range tt.recs {
				recs[r.Proc] = append(recs[r.Proc], r)
			}
			if got := porcupine.CheckOperationsTimeout(tt.model, operations(recs), time.Minute); got != tt.want {
				t.Errorf("CheckOperationsTimeout(%s) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

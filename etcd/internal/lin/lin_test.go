package lin

import (
	"testing"
	"time"

	"github.com/filetxn/filetxn/board"
)

const seed = "# Deferred Work\n\n### DW-1: Old finding\norigin: review\nsource_spec: `s.md`\nstatus: open\n\nSee DW-3 for the rule.\n"

// TestCheckLedger runs the ledger model on small histories, each either
// linearizable or not: a model that accepted every history, or refused
// one with an unknown outcome, turns it red.
func TestCheckLedger(t *testing.T) {
	app := func(c int, title, id string, call, ret int64) LedgerOp {
		return LedgerOp{Client: c, Kind: Append, Title: title, ID: id, Call: call, Return: ret}
	}
	read := func(c int, sum string, call, ret int64) LedgerOp {
		return LedgerOp{Client: c, Kind: Read, Summary: sum, Call: call, Return: ret}
	}
	tests := []struct {
		name string
		ops  []LedgerOp
		want bool
	}{
		{"appends in turn mint ids in turn", []LedgerOp{app(0, "a", "DW-4", 0, 10), app(1, "b", "DW-5", 11, 20)}, true},
		{"concurrent appends in either order", []LedgerOp{app(0, "a", "DW-5", 0, 10), app(1, "b", "DW-4", 1, 9)}, true},
		{"one id minted twice", []LedgerOp{app(0, "a", "DW-4", 0, 10), app(1, "b", "DW-4", 1, 9)}, false},
		{"ids out of real-time order", []LedgerOp{app(0, "a", "DW-5", 0, 10), app(1, "b", "DW-4", 11, 20)}, false},
		{"a read after an append sees it", []LedgerOp{app(0, "a", "DW-4", 0, 10), read(1, "DW-1- DW-4-", 11, 20)}, true},
		{"a stale read", []LedgerOp{app(0, "a", "DW-4", 0, 10), read(1, "DW-1-", 11, 20)}, false},
		{"an unknown append that took effect", []LedgerOp{
			{Kind: Append, Title: "a", Call: 0, Outcome: Unknown},
			{Client: 0, Kind: Append, Title: "a", ID: "DW-4", Found: true, Call: 20, Return: 30},
			app(1, "b", "DW-5", 31, 40),
		}, true},
		{"an unknown append that did not", []LedgerOp{
			{Kind: Append, Title: "a", Call: 0, Outcome: Unknown},
			app(1, "b", "DW-4", 31, 40),
		}, true},
		{"a failed append has no effect", []LedgerOp{
			{Kind: Append, Title: "a", Call: 0, Return: 10, Outcome: Failed},
			read(1, "DW-1-", 11, 20),
		}, true},
		{"one close closes", []LedgerOp{
			{Client: 0, Kind: Close, ID: "DW-1", Closed: true, Call: 0, Return: 10},
			{Client: 1, Kind: Close, ID: "DW-1", Closed: true, Call: 1, Return: 9},
		}, false},
		{"the other finds it closed", []LedgerOp{
			{Client: 0, Kind: Close, ID: "DW-1", Closed: true, Call: 0, Return: 10},
			{Client: 1, Kind: Close, ID: "DW-1", Closed: false, Call: 1, Return: 9},
			read(2, "DW-1+", 11, 12),
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := CheckLedger([]byte(seed), tt.ops, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Decided || res.Linearizable != tt.want {
				t.Errorf("CheckLedger(%v) = %v, want linearizable %v", tt.ops, res, tt.want)
			}
		})
	}
}

// TestCheckBoard runs the board model on small histories: a story never
// moves back, and two stories are objects of their own.
func TestCheckBoard(t *testing.T) {
	seed := map[string]board.Status{"1-1-a": board.Backlog, "1-2-b": board.Review}
	adv := func(c int, key string, target, got board.Status, call, ret int64) BoardOp {
		return BoardOp{Client: c, Key: key, Target: target, Got: got, Call: call, Return: ret}
	}
	tests := []struct {
		name string
		ops  []BoardOp
		want bool
	}{
		{"forward in turn", []BoardOp{adv(0, "1-1-a", board.InProgress, board.InProgress, 0, 10), adv(1, "1-1-a", board.ReadyForDev, board.InProgress, 11, 20)}, true},
		{"a move lost", []BoardOp{adv(0, "1-1-a", board.InProgress, board.InProgress, 0, 10), adv(1, "1-1-a", board.ReadyForDev, board.ReadyForDev, 11, 20)}, false},
		{"concurrent moves", []BoardOp{adv(0, "1-1-a", board.InProgress, board.Review, 0, 10), adv(1, "1-1-a", board.Review, board.Review, 1, 9)}, true},
		{"the seed counts", []BoardOp{adv(0, "1-2-b", board.InProgress, board.InProgress, 0, 10)}, false},
		{"stories apart", []BoardOp{adv(0, "1-2-b", board.Done, board.Done, 0, 10), adv(1, "1-1-a", board.InProgress, board.InProgress, 11, 20)}, true},
		{"an unknown move", []BoardOp{{Key: "1-1-a", Target: board.Done, Call: 0, Outcome: Unknown}, adv(1, "1-1-a", board.Review, board.Done, 11, 20)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := CheckBoard(seed, tt.ops, 10*time.Second)
			if !res.Decided || res.Linearizable != tt.want {
				t.Errorf("CheckBoard(%v) = %v, want linearizable %v", tt.ops, res, tt.want)
			}
		})
	}
}

func TestCheckTicks(t *testing.T) {
	tick := func(c int, n, call, ret int64) TickOp { return TickOp{Client: c, N: n, Call: call, Return: ret} }
	tests := []struct {
		name string
		ops  []TickOp
		want bool
	}{
		{"in turn", []TickOp{tick(0, 1, 0, 10), tick(1, 2, 11, 20)}, true},
		{"counted twice", []TickOp{tick(0, 1, 0, 10), tick(1, 1, 11, 20)}, false},
		{"counted twice, concurrently", []TickOp{tick(0, 1, 0, 10), tick(1, 1, 1, 9)}, false},
		{"back in time", []TickOp{tick(0, 2, 0, 10), tick(1, 1, 11, 20)}, false},
		{"concurrent, either order", []TickOp{tick(0, 2, 0, 10), tick(1, 1, 1, 9)}, true},
		{"one abandoned between", []TickOp{tick(0, 1, 0, 10), {Client: 1, Call: 11, Return: 12, Outcome: Failed}, tick(0, 3, 13, 20)}, true},
		{"an unknown tick", []TickOp{{Client: 1, Call: 0, Outcome: Unknown}, tick(0, 1, 1, 10)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := CheckTicks(tt.ops, 10*time.Second)
			if !res.Decided || res.Linearizable != tt.want {
				t.Errorf("CheckTicks(%v) = %v, want linearizable %v", tt.ops, res, tt.want)
			}
		})
	}
}

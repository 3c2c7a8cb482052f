package lin

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/filetxn/filetxn/ledger"
)

// A LedgerKind is the kind of a ledger operation.
type LedgerKind string

// The ledger operations.
const (
	// Append appends an entry titled Title, unless an open entry has that
	// title already (a retry of an append whose outcome was unknown): the
	// result is the id minted, or, with Found, the id of that entry.
	Append LedgerKind = "append"
	// Close closes the entry ID: the result Closed says whether this call
	// closed it (false: it was closed already).
	Close LedgerKind = "close"
	// Read reads the ledger without the lock: the result is Summary of the
	// entries read.
	Read LedgerKind = "read"
)

// A LedgerOp is one operation on one ledger, as its client recorded it.
// Titles identify entries: each append must give a title of its own.
type LedgerOp struct {
	Client  int        `json:"client"`
	Kind    LedgerKind `json:"kind"`
	Title   string     `json:"title,omitempty"`   // Append
	ID      string     `json:"id,omitempty"`      // Append: the result; Close: the entry
	Found   bool       `json:"found,omitempty"`   // Append: the entry was there already
	Closed  bool       `json:"closed,omitempty"`  // Close: the result
	Summary string     `json:"summary,omitempty"` // Read: the result
	Call    int64      `json:"call"`              // nanoseconds
	Return  int64      `json:"return"`            // nanoseconds; ignored when Outcome is Unknown
	Outcome Outcome    `json:"outcome"`
}

// Summary describes the entries of d as a read of the model sees them:
// each id in order, with "+" for an entry done and "-" for one that is not.
func Summary(d *ledger.Doc) string {
	var b strings.Builder
	for _, e := range d.Entries() {
		summarize(&b, e.ID, e.Done())
	}
	return b.String()
}

func summarize(b *strings.Builder, id string, done bool) {
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	b.WriteString(id)
	if done {
		b.WriteByte('+')
	} else {
		b.WriteByte('-')
	}
}

// ledgerState is the model's ledger: its entries in order and the number
// of the next id minted. Steps never change a state; they make new ones.
type ledgerState struct {
	next    int
	entries []ledgerEntry
}

type ledgerEntry struct {
	id, title string
	done      bool
}

func (s ledgerState) find(match func(ledgerEntry) bool) int {
	for i, e := range s.entries {
		if match(e) {
			return i
		}
	}
	return -1
}

// openTitled returns the index of the open entry titled title, or -1.
func (s ledgerState) openTitled(title string) int {
	return s.find(func(e ledgerEntry) bool { return !e.done && e.title == title })
}

func (s ledgerState) appended(title string) ledgerState {
	es := make([]ledgerEntry, len(s.entries), len(s.entries)+1)
	copy(es, s.entries)
	es = append(es, ledgerEntry{id: "DW-" + strconv.Itoa(s.next), title: title})
	return ledgerState{next: s.next + 1, entries: es}
}

func (s ledgerState) closed(i int) ledgerState {
	es := make([]ledgerEntry, len(s.entries))
	copy(es, s.entries)
	es[i].done = true
	return ledgerState{next: s.next, entries: es}
}

func (s ledgerState) summary() string {
	var b strings.Builder
	for _, e := range s.entries {
		summarize(&b, e.id, e.done)
	}
	return b.String()
}

func equalLedgers(a, b ledgerState) bool {
	if a.next != b.next || len(a.entries) != len(b.entries) {
		return false
	}
	for i := range a.entries {
		if a.entries[i] != b.entries[i] {
			return false
		}
	}
	return true
}

// step returns the states that op can lead s to, none if its result is
// impossible in s.
func (op LedgerOp) step(s ledgerState) []ledgerState {
	var effect func() (ledgerState, bool) // the state after op takes effect, and whether its result fits
	switch op.Kind {
	case Append:
		effect = func() (ledgerState, bool) {
			if i := s.openTitled(op.Title); i >= 0 {
				return s, op.Found && s.entries[i].id == op.ID
			}
			return s.appended(op.Title), !op.Found && op.ID == "DW-"+strconv.Itoa(s.next)
		}
	case Close:
		effect = func() (ledgerState, bool) {
			i := s.find(func(e ledgerEntry) bool { return e.id == op.ID })
			if i < 0 {
				return s, false // a close of an id no entry has fails, and is not recorded done
			}
			if s.entries[i].done {
				return s, !op.Closed
			}
			return s.closed(i), op.Closed
		}
	case Read:
		effect = func() (ledgerState, bool) { return s, op.Summary == s.summary() }
	default:
		return nil
	}
	switch op.Outcome {
	case Failed:
		return []ledgerState{s}
	case Unknown:
		after, _ := effect() // the result is unknown: any fits
		return []ledgerState{s, after}
	}
	if after, ok := effect(); ok {
		return []ledgerState{after}
	}
	return nil
}

// idNumber finds the numbers of DW-<n> ids.
var idNumber = regexp.MustCompile(`DW-([0-9]+)`)

// initialLedger returns the model of the ledger seed.
func initialLedger(seed []byte) (ledgerState, error) {
	d, err := ledger.Parse(seed)
	if err != nil {
		return ledgerState{}, fmt.Errorf("lin: the seed ledger: %w", err)
	}
	s := ledgerState{next: 1}
	for _, m := range idNumber.FindAllSubmatch(seed, -1) {
		if n, err := strconv.Atoi(string(m[1])); err == nil && n >= s.next {
			s.next = n + 1
		}
	}
	for _, e := range d.Entries() {
		s.entries = append(s.entries, ledgerEntry{id: e.ID, title: e.Title, done: e.Done()})
	}
	return s, nil
}

// LedgerModel returns the porcupine model of a ledger that starts as the
// bytes seed.
func LedgerModel(seed []byte) (porcupine.Model, error) {
	init, err := initialLedger(seed)
	if err != nil {
		return porcupine.Model{}, err
	}
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{init} },
		Step: func(state, input, _ any) []any {
			var out []any
			for _, s := range input.(LedgerOp).step(state.(ledgerState)) {
				out = append(out, s)
			}
			return out
		},
		Equal: func(a, b any) bool { return equalLedgers(a.(ledgerState), b.(ledgerState)) },
		DescribeOperation: func(input, _ any) string {
			op := input.(LedgerOp)
			switch op.Kind {
			case Append:
				return fmt.Sprintf("append(%q) -> %s found=%v [%s]", op.Title, op.ID, op.Found, op.Outcome)
			case Close:
				return fmt.Sprintf("close(%s) -> %v [%s]", op.ID, op.Closed, op.Outcome)
			}
			return fmt.Sprintf("read() -> %s [%s]", op.Summary, op.Outcome)
		},
		DescribeState: func(state any) string {
			s := state.(ledgerState)
			return fmt.Sprintf("next DW-%d; %s", s.next, s.summary())
		},
	}
	return nm.ToModel(), nil
}

// CheckLedger checks that ops, the operations of every client on one
// ledger that started as the bytes seed, are linearizable, giving up after
// timeout. Only a seed that does not parse is an error.
func CheckLedger(seed []byte, ops []LedgerOp, timeout time.Duration) (Result, error) {
	m, err := LedgerModel(seed)
	if err != nil {
		return Result{}, err
	}
	hist := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		call, ret := span(op.Call, op.Return, op.Outcome)
		hist[i] = porcupine.Operation{ClientId: op.Client, Input: op, Call: call, Return: ret}
	}
	return check(m, hist, timeout), nil
}

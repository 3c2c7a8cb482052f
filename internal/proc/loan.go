package proc

import (
	"sync"
	"sync/atomic"
)

// loans is the process's record of the loans in force.
var loans struct {
	mu sync.Mutex      // protects to
	to map[int64]*Loan // borrower's id -> its latest loan, which links to its earlier ones
	n  atomic.Int32    // loans in force: Any takes no mutex while there are none
}

// A Loan makes the goroutine that calls Begin count as another goroutine,
// the holder, as well as itself, until it calls End: every lock the holder
// holds is judged held by the borrower too. It is for a goroutine that runs
// work its holder waits for: a lock it asked for that the holder holds would
// otherwise wait for the holder, which waits for it.
//
// Loans nest (a borrower may borrow again, and a holder may itself be a
// borrower), and End must be called by the borrower, in the reverse order of
// its Begins. The zero Loan is ready to Begin; a Loan is begun once at a
// time. It lives in the record while it is in force, so the caller keeps it
// where it already allocates (a loan begun is no allocation of its own).
type Loan struct {
	holder, borrower int64
	prev             *Loan // the borrower's loan begun before this one, if in force
}

// Begin makes the calling goroutine act for holder until End.
func (l *Loan) Begin(holder int64) {
	l.holder, l.borrower = holder, ID()
	loans.mu.Lock()
	if loans.to == nil {
		loans.to = make(map[int64]*Loan)
	}
	l.prev = loans.to[l.borrower]
	loans.to[l.borrower] = l
	loans.n.Add(1)
	loans.mu.Unlock()
}

// End ends the loan that the calling goroutine began last, which must be l.
func (l *Loan) End() {
	loans.mu.Lock()
	defer loans.mu.Unlock()
	if loans.to[l.borrower] != l {
		panic("goroutine: Loan.End of a loan that is not its borrower's latest")
	}
	if l.prev != nil {
		loans.to[l.borrower] = l.prev
	} else {
		delete(loans.to, l.borrower)
	}
	l.prev = nil
	loans.n.Add(-1)
}

// maxActing bounds how many goroutines Any visits for one: loans form a
// chain as short as the nesting of group commits, and the bound only
// guards against a record that is not the forest it must be.
const maxActing = 64

// Any reports whether holds reports true for goroutine id or for a goroutine
// that id acts for, through its loans and those of the holders it borrowed
// from. While no loan is in force it costs one call of holds and one atomic
// load. holds is called under the record's mutex, so it must not begin or
// end a loan.
func Any(id int64, holds func(int64) bool) bool {
	if holds(id) {
		return true
	}
	if loans.n.Load() == 0 {
		return false
	}
	loans.mu.Lock()
	defer loans.mu.Unlock()
	var buf [8]int64
	todo := append(buf[:0], id)
	for visited := 0; len(todo) > 0 && visited < maxActing; visited++ {
		g := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for l := loans.to[g]; l != nil; l = l.prev {
			if holds(l.holder) {
				return true
			}
			todo = append(todo, l.holder)
		}
	}
	return false
}

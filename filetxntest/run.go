package filetxntest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/filetxn/filetxn/internal/testkit"
)

// Timeout bounds every wait of the harness: a child that runs longer, or
// that the others wait for at the barrier longer, fails the test rather than
// hang it.
const Timeout = testkit.Timeout

// C is a child process's view of its run, given to the fn of [Run].
type C struct {
	T     testing.TB // the child's own test: fail it to fail the run
	Index int        // 0..n-1, distinct among the children of one Run
	Dir   string     // the directory the parent gave to Run, shared by all
}

// Run runs fn in n child processes of the test binary, each a re-run of the
// calling test, and returns their results in child order. The children share
// dir (the parent's, such as its t.TempDir(); C.Dir in a child), start fn
// together (on a barrier), and each returns a result that travels to the
// parent as JSON: R must survive encoding/json. In the parent, Run blocks
// until every child has exited (at most [Timeout]); if a child fails its test
// (through c.T, a panic or an exit), Run fails t, logging every child's
// output, and does not return. In a child Run does not return either: after
// fn it ends the child's test as t.SkipNow does, so the rest of the test runs
// in the parent alone. Call Run once, first in the test whose t it is given:
// a child runs the first Run of its test (child mode is keyed by the test's
// name), so a second set of children needs a subtest. See the Caveats.
//
//	func TestCounterLosesNothing(t *testing.T) {
//		dir := t.TempDir() // the parent's; children get it as c.Dir
//		counts := filetxntest.Run(t, 4, dir, func(c *filetxntest.C) int {
//			return 100 // after 100 increments of the counter in c.Dir
//		})
//		... the counter must be the sum of counts ...
//	}
func Run[R any](t testing.TB, n int, dir string, fn func(c *C) R) []R {
	t.Helper()
	if pc := testkit.Child(t); pc != nil {
		pc.Barrier()
		c := &C{T: pc.T, Index: pc.Index, Dir: pc.Dir}
		r := fn(c)
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("filetxntest: child %d: result %T: %v", c.Index, r, err)
		}
		if err := os.WriteFile(resultPath(c.Dir, c.Index), data, 0o644); err != nil {
			t.Fatalf("filetxntest: child %d: %v", c.Index, err)
		}
		t.SkipNow()
	}
	g := testkit.Start(t, n, dir)
	g.Release()
	g.Wait()
	results := make([]R, n)
	for i := range results {
		data, err := os.ReadFile(resultPath(dir, i))
		if err == nil {
			err = json.Unmarshal(data, &results[i])
		}
		if err != nil {
			for j := range n {
				t.Logf("child %d (pid %d) output:\n%s", j, g.Pid(j), g.Output(j))
			}
			t.Fatalf("filetxntest: result of child %d: %v", i, err)
		}
	}
	return results
}

// resultPath is where child i leaves its result.
func resultPath(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf(".filetxntest-result-%d", i))
}

// A Race is a race check for [CheckRace]: Procs processes, all starting
// together, each run Step Txns times on files in a shared directory, and
// Invariant then checks what they left.
type Race struct {
	Procs int // the number of processes; 0 means 4
	Txns  int // transactions per process; 0 means 50

	// Setup, when set, prepares the shared directory in the parent before
	// any child starts (for example, writes the initial file). Its error
	// fails the check.
	Setup func(dir string) error

	// Step runs transaction txn (0..Txns-1) of process proc (0..Procs-1) on
	// the store in dir. It runs in a child process, under a context that
	// ends after Timeout. An error fails the check and ends that process's
	// run.
	Step func(ctx context.Context, dir string, proc, txn int) error

	// Invariant checks dir after every process has finished all its
	// transactions, and returns an error saying what is wrong (for example
	// "counter = 143, want 200"). Its error fails the check.
	Invariant func(dir string, procs, txns int) error
}

// CheckRace runs r: Procs child processes of the test binary, lined up so
// that they start together, each run Step Txns times, and then, in the
// parent, Invariant checks the result. A store that loses an update under
// concurrency (a lock that guards only its own process, a read outside the
// transaction, a write that is not atomic) fails an invariant that counts
// effects, such as "N*M increments make N*M". Two processes on two cores
// interleave in practice, but a loss is a matter of scheduling: an
// invariant that holds once proves less than one that fails when the lock
// is removed, so try that once.
//
// CheckRace blocks until the children are done and reports every failure
// through t. As with [Run], the children run the calling test again and
// CheckRace does not return in them; call it first in the test, and once.
func CheckRace(t testing.TB, r Race) {
	t.Helper()
	procs, txns := r.Procs, r.Txns
	if procs <= 0 {
		procs = 4
	}
	if txns <= 0 {
		txns = 50
	}
	if r.Step == nil || r.Invariant == nil {
		t.Fatalf("filetxntest: CheckRace needs a Step and an Invariant")
	}
	var dir string
	if testkit.Child(t) == nil {
		dir = t.TempDir()
		if r.Setup != nil {
			if err := r.Setup(dir); err != nil {
				t.Fatalf("filetxntest: CheckRace: Setup(%s) = %v, want nil", dir, err)
			}
		}
	}
	done := Run(t, procs, dir, func(c *C) int {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		for i := range txns {
			if err := r.Step(ctx, c.Dir, c.Index, i); err != nil {
				c.T.Errorf("filetxntest: CheckRace: Step(proc %d, txn %d) = %v, want nil", c.Index, i, err)
				return i
			}
		}
		return txns
	})
	for i, n := range done {
		if n != txns {
			t.Errorf("filetxntest: CheckRace: process %d ran %d transactions, want %d", i, n, txns)
		}
	}
	if err := r.Invariant(dir, procs, txns); err != nil {
		t.Errorf("filetxntest: CheckRace: after %d processes x %d transactions: %v", procs, txns, err)
	}
}

//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package loopstate

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit"
)

// TestARunnerKilledInItsTicksCommitLeavesItAllOrNothing: a runner (a child
// process, on durable files) ticks WithCommit over two stores and is
// SIGKILLed at each point of the commit that follows its harness: while it
// writes the first copy of the intent record, at the commit point, after
// each of its three renames (the loop's state, then the stores), before
// the log's append, before its fsync and before the records are removed.
// The next transaction, from this process, is a Mutate of one store or
// the loop's next tick; then every file has one. The stores and the tick
// are never split: both counters 1 and tick 1's ok line logged once, or
// both 0 and tick 1 counted abandoned (before the commit point); the log
// has one counted line per counted tick, and nothing is left behind.
//
// Ablations seen red: settle without applyAppends (a kill from the commit
// point to the append leaves the loop counting tick 1 with no line for
// it); recovery's apply appending without looking (a kill after the append
// logs tick 1 twice).
func TestARunnerKilledInItsTicksCommitLeavesItAllOrNothing(t *testing.T) {
	for _, at := range []struct {
		point seam.Point
		n     int
		all   bool // the commit point was passed: the next transaction completes it
	}{
		{seam.Intent, 1, false},
		{seam.Committed, 1, true},
		{seam.Published, 1, true},
		{seam.Published, 2, true},
		{seam.Published, 3, true},
		{seam.Append, 1, true},
		{seam.Append, 2, true},
		{seam.Retire, 1, true},
	} {
		for _, next := range []string{"a store", "the next tick"} {
			t.Run(fmt.Sprintf("%s-%d/%s", at.point, at.n, next), func(t *testing.T) {
				if c := testkit.Child(t); c != nil {
					f := openCommitFixture(t, c.Dir, mustRoot(NewRoot(filepath.Join(c.Dir, "root"))))
					c.Barrier()
					hits := 0
					seam.Set(t, func(p seam.Point, _ string) error {
						if p == at.point {
							if hits++; hits == at.n {
								c.Mark("dying")
								syscall.Kill(os.Getpid(), syscall.SIGKILL)
								select {} // the signal is on its way
							}
						}
						return nil
					})
					_, _ = f.l.Tick(ctx0, TriggerManual, okHarness(Cost{Tokens: 5}), f.bump())
					t.Fatalf("the runner survived its tick")
					return
				}
				f := newCommitFixture(t, nil)
				runner := testkit.Start(t, 1, f.dir)
				runner.Release()
				runner.WaitMark("dying")
				runner.Kill(0)

				var err error
				if next == "a store" {
					_, err = f.a.Mutate(ctx0, func(*counter) error { return nil })
				} else {
					_, err = f.l.Tick(ctx0, TriggerManual, okHarness(Cost{}))
				}
				require.NoError(t, err, "the next transaction")
				if next == "a store" {
					_, err = f.l.Tick(ctx0, TriggerManual, okHarness(Cost{}))
					require.NoError(t, err, "the next tick")
				}
				want, first := [2]int{0, 0}, Abandoned
				if at.all {
					want, first = [2]int{1, 1}, OK
				}
				require.Equal(t, want, f.values(t), "the stores")
				d := mustView(t, f.l)
				lines := counted(t, f.l)
				require.Len(t, lines, int(d.TickCount), "counted lines %+v, want one per counted tick (tick_count %d)", lines, d.TickCount)
				require.Equal(t, int64(2), d.TickCount)
				require.Equal(t, int64(1), lines[0].N)
				require.Equal(t, first, lines[0].Outcome, "tick 1's line")
				if at.all {
					require.Equal(t, int64(5), d.Spent.Tokens, "spent: tick 1's cost")
				}
				require.Empty(t, f.leftovers(t))
			})
		}
	}
}

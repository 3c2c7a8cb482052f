//go:build unix

package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/etcd"
	"github.com/filetxn/filetxn/etcd/internal/etcdtest"
	"github.com/filetxn/filetxn/lock"
	"github.com/filetxn/filetxn/loopstate"
)

var _ = func() int {
	etcdtest.Register("loop-ticker", childMain("loop-ticker", loopTicker))
	etcdtest.Register("loop-stopped", childMain("loop-stopped", loopStopped))
	etcdtest.Register("loop-committer", childMain("loop-committer", loopCommitter))
	return 0
}()

// loopName is the loop the tests tick, in the root "proj".
const loopName = "race"

// withLoop runs fn, a child's body, with the test's loop opened on a
// Backend of the child's own, under a context bounded by faultWait.
func withLoop(e faultEnv, fn func(ctx context.Context, l *loopstate.Loop) error) error {
	b, closeAll, err := e.backend()
	if err != nil {
		return err
	}
	defer closeAll()
	ctx, cancel := context.WithTimeout(context.Background(), faultWait)
	defer cancel()
	l, err := openLoop(ctx, b)
	if err != nil {
		return err
	}
	return fn(ctx, l)
}

func openLoop(ctx context.Context, b *etcd.Backend) (*loopstate.Loop, error) {
	r, err := loopstate.NewRoot("proj", filetxn.WithBackend(b))
	if err != nil {
		return nil, err
	}
	return r.Open(ctx, loopName)
}

// loopTicker ticks the loop e.count times, each a manual tick that waits
// for the lock and costs one token.
func loopTicker(e faultEnv) error {
	return withLoop(e, func(ctx context.Context, l *loopstate.Loop) error {
		return tickTimes(ctx, l, e.count)
	})
}

// tickTimes ticks l n times, each a manual tick that costs one token.
func tickTimes(ctx context.Context, l *loopstate.Loop, n int, opts ...loopstate.TickOption) error {
	for i := range n {
		rec, err := l.Tick(ctx, loopstate.TriggerManual, func(ctx context.Context, run *loopstate.Run) (loopstate.Result, error) {
			return loopstate.Result{Cost: &loopstate.Cost{Tokens: 1}}, nil
		}, opts...)
		if err != nil {
			return fmt.Errorf("tick %d: %w", i, err)
		}
		if rec.Outcome != loopstate.OK {
			return fmt.Errorf("tick %d: outcome %s, want ok", i, rec.Outcome)
		}
	}
	return nil
}

// tally is the document of the store that the committing ticks count in.
type tally struct {
	Ticks int   `json:"ticks"`
	Last  int64 `json:"last"` // the last tick counted, to see no tick counted twice
}

// tallyStore is the store "proj/tally.json" on b.
func tallyStore(b filetxn.Backend) (*filetxn.Store[*tally], error) {
	return filetxn.NewStore[*tally]("proj/tally.json", filetxn.JSON[tally](), filetxn.WithBackend(b))
}

// loopCommitter ticks the loop e.count times as loopTicker does, each tick
// recorded WithCommit with the tally, which it counts in.
func loopCommitter(e faultEnv) error {
	return withLoop(e, func(ctx context.Context, l *loopstate.Loop) error {
		s, err := tallyStore(l.Backend())
		if err != nil {
			return err
		}
		return tickTimes(ctx, l, e.count, loopstate.WithCommit([]filetxn.Member{s}, func(m *filetxn.Multi, rec loopstate.TickRecord) error {
			d := filetxn.In(m, s)
			if rec.N <= d.Last {
				return fmt.Errorf("tick %d after tick %d was counted", rec.N, d.Last)
			}
			d.Ticks++
			d.Last = rec.N
			return nil
		}))
	})
}

// TestLoopTicksAcrossProcesses: three processes, each with a Backend of
// its own, tick one loop on etcd; every tick is counted once, its cost
// once, and logged once, with the numbers 1 to n. With a commit, each tick
// is recorded WithCommit with a store of the same etcd that counts it,
// which then counts every tick once, in the order of the ticks.
// Ablations: tick-line names without their random part (the second alone)
// let the ticks of one second overwrite each other's lines (1 line of 12);
// remoteRun without the appends' puts (with a commit, the lines of the
// ticks are never created: 0 lines of 12); the tick letting its loop's lock
// go before its commit, as on files (a session waiting for the lock takes
// it and counts the tick abandoned: 6 lines of 12, two abandoned).
func TestLoopTicksAcrossProcesses(t *testing.T) {
	for _, child := range []string{"loop-ticker", "loop-committer"} {
		t.Run(child, func(t *testing.T) {
			c := startCluster(t)
			ctx := testCtx(t)
			b := parentBackend(t, c, "loops")
			r, err := loopstate.NewRoot("proj", filetxn.WithBackend(b))
			require.NoError(t, err)
			_, err = r.Create(ctx, loopName, nil)
			require.NoError(t, err)
			const procs, each = 3, 4
			startChildren(t, child, procs, func(i int) faultEnv {
				return faultEnv{endpoints: c.Endpoints(), prefix: "loops", proc: i, count: each, ttl: 10 * time.Second}
			}).wait()
			l, err := r.Open(ctx, loopName)
			require.NoError(t, err)
			d, err := l.View(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(procs*each), d.TickCount, "tick_count")
			assert.Equal(t, int64(procs*each), d.Spent.Tokens, "spent.tokens")
			ticks, err := l.Ticks(ctx)
			require.NoError(t, err)
			require.Len(t, ticks, procs*each, "tick lines")
			for i, rec := range ticks {
				assert.Equal(t, int64(i+1), rec.N, "line %d's tick", i)
			}
			if child == "loop-committer" {
				s, err := tallyStore(b)
				require.NoError(t, err)
				got, err := s.View(ctx)
				require.NoError(t, err)
				assert.Equal(t, tally{Ticks: procs * each, Last: procs * each}, *got, "the tally")
			}
		})
	}
}

// loopStopped ticks the loop with a harness that says so (a file
// "holding" in e.dir) and waits for a file "go"; the test stops it in
// between for longer than its session's TTL. Its exit status is 0 only if
// its Tick fails with an error matching lock.ErrLockLost.
func loopStopped(e faultEnv) error {
	return withLoop(e, func(ctx context.Context, l *loopstate.Loop) error {
		return tickStopped(ctx, l, e.dir)
	})
}

// tickStopped is loopStopped's tick, its harness holding in dir.
func tickStopped(ctx context.Context, l *loopstate.Loop, dir string) error {
	_, err := l.Tick(ctx, loopstate.TriggerManual, func(ctx context.Context, run *loopstate.Run) (loopstate.Result, error) {
		return loopstate.Result{}, holdUntilGo(ctx, dir)
	})
	switch {
	case err == nil:
		return errors.New("tick recorded after its lock was lost and its tick settled: want an error matching lock.ErrLockLost")
	case !errors.Is(err, lock.ErrLockLost):
		return fmt.Errorf("tick after its lock was lost: %w, want an error matching lock.ErrLockLost", err)
	}
	fmt.Fprintf(os.Stderr, "loop-stopped: refused as it should be: %v\n", err)
	return nil
}

// TestLoopStoppedRunnerIsFenced stops (SIGSTOP) a process inside its
// tick's harness for longer than its session's TTL; this process then
// ticks the loop, taking the lock when the lease expires: it counts the
// stopped runner's tick as abandoned and runs its own. The runner,
// continued (SIGCONT), must have its record refused (lock.ErrLockLost):
// two ticks counted, two lines, none twice. Ablation: recording a lost
// tick again without checking that current_tick still marks it
// (loopstate's record, marker.same) counts it a third time.
func TestLoopStoppedRunnerIsFenced(t *testing.T) {
	c := startCluster(t)
	ctx := testCtx(t)
	dir := t.TempDir()
	r, err := loopstate.NewRoot("proj", filetxn.WithBackend(parentBackend(t, c, "stopped")))
	require.NoError(t, err)
	l, err := r.Create(ctx, loopName, nil)
	require.NoError(t, err)
	env := faultEnv{endpoints: c.Endpoints(), prefix: "stopped", dir: dir, ttl: 2 * time.Second}
	h := startChildren(t, "loop-stopped", 1, func(int) faultEnv { return env })
	waitUntil(t, "the runner to run its harness", func() bool {
		_, err := os.Stat(filepath.Join(dir, "holding"))
		return err == nil
	})
	pid := h.cmds[0].Process.Pid
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	rec, err := l.Tick(ctx, loopstate.TriggerManual, func(ctx context.Context, run *loopstate.Run) (loopstate.Result, error) {
		return loopstate.Result{}, nil
	})
	require.NoError(t, err, "the tick after the runner's lease expired")
	assert.Equal(t, int64(2), rec.N)
	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o644))
	h.wait()
	d, err := l.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), d.TickCount, "tick_count")
	ticks, err := l.Ticks(ctx)
	require.NoError(t, err)
	require.Len(t, ticks, 2, "tick lines")
	assert.Equal(t, []loopstate.Outcome{loopstate.Abandoned, loopstate.OK}, []loopstate.Outcome{ticks[0].Outcome, ticks[1].Outcome})
	assert.Equal(t, pid, ticks[0].PID, "the abandoned tick's runner")
}

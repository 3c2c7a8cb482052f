package filetxntest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/filetxntest"
	"github.com/filetxn/filetxn/internal/fsys"
	"github.com/filetxn/filetxn/internal/testkit"
)

// TestRunCollectsEveryChildsResult checks that Run runs fn in n distinct
// processes, none of them the parent, and returns their results in child
// order.
func TestRunCollectsEveryChildsResult(t *testing.T) {
	type result struct {
		Index, Pid int
	}
	got := filetxntest.Run(t, 3, t.TempDir(), func(c *filetxntest.C) result {
		return result{c.Index, os.Getpid()}
	})
	require.Len(t, got, 3, "Run(3 children) = %v, want 3 results", got)
	pids := map[int]bool{os.Getpid(): true}
	for i, r := range got {
		require.Equal(t, i, r.Index, "Run(3 children)[%d].Index = %d, want %d", i, r.Index, i)
		require.False(t, pids[r.Pid], "Run(3 children)[%d] ran in pid %d, want a process of its own", i, r.Pid)
		pids[r.Pid] = true
	}
}

// TestRunStartsNoChildBeforeAllAreReady checks the barrier: when any child's
// fn starts, every child has been started and reached the barrier. Each
// child counts the others' "up" files, written just before Run's barrier
// (in a child, Run's first act). Ablation: releasing the children as soon as
// they are started, without waiting for their ready files
// (testkit.Group.Release touching the go file first), makes it red.
func TestRunStartsNoChildBeforeAllAreReady(t *testing.T) {
	const n = 4
	dir := t.TempDir()
	if c := testkit.Child(t); c != nil {
		c.Mark(fmt.Sprintf("up-%d", c.Index))
	}
	seen := filetxntest.Run(t, n, dir, func(c *filetxntest.C) int {
		ups, err := filepath.Glob(filepath.Join(c.Dir, "up-*"))
		require.NoError(c.T, err)
		return len(ups)
	})
	for i, got := range seen {
		require.Equal(t, n, got, "child %d saw %d children up when its fn started, want %d", i, got, n)
	}
}

// TestRunFailsWhenAChildFails checks that a failure inside a child fails the
// parent's test, with the child's output logged. Ablation:
// testkit.Group.Wait ignoring a child's exit status makes it red.
func TestRunFailsWhenAChildFails(t *testing.T) {
	msg := failures(t, func(tb testing.TB) {
		filetxntest.Run(tb, 2, t.TempDir(), func(c *filetxntest.C) int {
			if c.Index == 1 {
				c.T.Errorf("child 1 fails on purpose")
			}
			return 0
		})
	})
	if testkit.Child(t) != nil {
		return
	}
	require.Contains(t, msg, "child 1", "Run with a failing child 1 reported %q, want a failure naming child 1", msg)
}

// counterCodec stores one integer as decimal text and a newline; a missing
// file is 0 and writes nothing while it stays 0.
type counterCodec struct{}

func (counterCodec) Decode(data []byte) (*int, error) {
	n := 0
	if len(data) > 0 {
		s, ok := strings.CutSuffix(string(data), "\n")
		var err error
		if n, err = strconv.Atoi(s); err != nil || !ok {
			return nil, fmt.Errorf("counter: %q is not a number and a newline", data)
		}
	}
	return &n, nil
}

func (counterCodec) Encode(n *int) ([]byte, error) {
	if *n == 0 {
		return nil, nil
	}
	return []byte(strconv.Itoa(*n) + "\n"), nil
}

// countIs is the invariant of the counter races: every transaction of every
// process added one.
func countIs(dir string, procs, txns int) error {
	data, err := os.ReadFile(filepath.Join(dir, "count"))
	if err != nil {
		return err
	}
	n, err := counterCodec{}.Decode(data)
	if err != nil {
		return err
	}
	if *n != procs*txns {
		return fmt.Errorf("count = %d, want %d: %d updates lost", *n, procs*txns, procs*txns-*n)
	}
	return nil
}

// TestCheckRacePassesALockedStore checks that a filetxn.Store, whose lock
// holds across processes, keeps every increment.
func TestCheckRacePassesALockedStore(t *testing.T) {
	filetxntest.CheckRace(t, filetxntest.Race{
		Procs: 4,
		Txns:  20,
		Step: func(ctx context.Context, dir string, proc, txn int) error {
			s, err := filetxn.NewStore(filepath.Join(dir, "count"), counterCodec{})
			if err != nil {
				return err
			}
			_, err = s.Mutate(ctx, func(n *int) error { *n++; return nil })
			return err
		},
		Invariant: countIs,
	})
}

// perProcessCounter is a deliberately broken store: its lock is a
// sync.Mutex, which serialises the goroutines of one process and nothing
// else, so two processes can read the same count and both write count+1.
type perProcessCounter struct {
	mu   sync.Mutex // the broken lock
	path string
}

// add increments the counter, calling between after reading it. It reads
// as the engine's lock-free read does (internal/fsys), which on Windows waits out another
// process's replace of the file (os.ReadFile fails there with a sharing
// violation), so that the only fault is the broken lock.
func (s *perProcessCounter) add(between func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := fsys.ReadState(s.path, "Read", nil, 1)
	if err != nil {
		return err
	}
	n, err := counterCodec{}.Decode(data)
	if err != nil {
		return err
	}
	if err := between(); err != nil {
		return err
	}
	*n++
	out, _ := counterCodec{}.Encode(n)
	return atomicfile.WriteFile(s.path, out, 0o644, atomicfile.WithoutSync())
}

// TestCheckRaceCatchesLostUpdates checks that CheckRace fails a store that
// locks per process. The loss is made certain rather than likely: in its
// first transaction every process reads the counter and then waits until all
// of them have read it, so all of them write the same count+1. Ablation:
// CheckRace not calling the Invariant makes it red (the broken store
// passes).
func TestCheckRaceCatchesLostUpdates(t *testing.T) {
	const procs = 4
	var s *perProcessCounter
	msg := failures(t, func(tb testing.TB) {
		filetxntest.CheckRace(tb, filetxntest.Race{
			Procs: procs,
			Txns:  10,
			Step: func(ctx context.Context, dir string, proc, txn int) error {
				if s == nil {
					s = &perProcessCounter{path: filepath.Join(dir, "count")}
				}
				return s.add(func() error {
					if txn > 0 {
						return nil
					}
					if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("read-%d", proc)), nil, 0o644); err != nil {
						return err
					}
					for i := range procs {
						testkit.WaitFor(tb, filepath.Join(dir, fmt.Sprintf("read-%d", i)))
					}
					return nil
				})
			},
			Invariant: countIs,
		})
	})
	if testkit.Child(t) != nil {
		return
	}
	require.Contains(t, msg, "updates lost", "CheckRace(a store that locks per process) reported %q, want lost updates", msg)
}

// TestCheckRaceRunsSetupBeforeTheChildren checks that Setup prepares the
// shared directory before any child's first step: every step then finds
// the counter Setup wrote. Ablation: CheckRace skipping Setup makes it red.
func TestCheckRaceRunsSetupBeforeTheChildren(t *testing.T) {
	const start = 1000
	filetxntest.CheckRace(t, filetxntest.Race{
		Procs: 2,
		Txns:  3,
		Setup: func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "count"), []byte(fmt.Sprintf("%d\n", start)), 0o644)
		},
		Step: func(ctx context.Context, dir string, proc, txn int) error {
			s, err := filetxn.NewStore(filepath.Join(dir, "count"), counterCodec{})
			if err != nil {
				return err
			}
			_, err = s.Mutate(ctx, func(n *int) error {
				if *n < start {
					return fmt.Errorf("step found count %d, want at least %d: Setup had not run", *n, start)
				}
				*n++
				return nil
			})
			return err
		},
		Invariant: func(dir string, procs, txns int) error {
			data, err := os.ReadFile(filepath.Join(dir, "count"))
			if err != nil {
				return err
			}
			if want := fmt.Sprintf("%d\n", start+procs*txns); string(data) != want {
				return fmt.Errorf("count = %q, want %q", data, want)
			}
			return nil
		},
	})
}

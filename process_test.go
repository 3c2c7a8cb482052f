package filetxn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

const (
	procs  = 8
	rounds = 100
)

// incrementAll runs rounds increments of the counter in dir through s. With
// tolerate, a failed increment is skipped rather than fatal: without a
// shared lock, a rival may remove a temporary file it takes for a dead
// writer's, and the failed write is one more lost update.
func incrementAll(c *testkit.C, s *Store[*counter], tolerate bool) {
	c.Barrier()
	for i := range rounds {
		if _, err := s.Mutate(context.Background(), func(d *counter) error { d.n++; return nil }); err != nil && !tolerate {
			c.T.Fatalf("Mutate #%d: %v", i, err)
		}
	}
}

// TestMutateCountsAcrossProcesses: 8 processes x 100 Mutate increments of one
// counter file end at exactly 800. Ablations that turn it red: reading the
// file before taking the lock, or not taking the lock at all (see
// TestMutateWithoutSharedLockLosesUpdates, which runs exactly that).
func TestMutateCountsAcrossProcesses(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		incrementAll(c, must(NewStore[*counter](filepath.Join(c.Dir, "count.txt"), counterCodec{})), false)
		return
	}
	dir := t.TempDir()
	g := testkit.Start(t, procs, dir)
	g.Release()
	g.Wait()
	if got, want := readCount(t, filepath.Join(dir, "count.txt")), fmt.Sprintf("%d\n", procs*rounds); got != want {
		t.Fatalf("counter after %d processes x %d increments = %q, want %q", procs, rounds, got, want)
	}
}

// TestMutateWithoutSharedLockLosesUpdates is the ablation of the test above,
// run every time: each process locks a lock file of its own, so the locks
// exclude nothing, and the same workload must lose updates. It proves the
// counting test can see a race on this machine.
func TestMutateWithoutSharedLockLosesUpdates(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		own := filepath.Join(c.Dir, fmt.Sprintf("own-%d.lock", c.Index))
		incrementAll(c, must(NewStore[*counter](filepath.Join(c.Dir, "count.txt"), counterCodec{}, WithLockPath(own), WithoutSync())), true)
		return
	}
	dir := t.TempDir()
	g := testkit.Start(t, procs, dir)
	g.Release()
	g.Wait()
	got, err := strconv.Atoi(strings.TrimSpace(readCount(t, filepath.Join(dir, "count.txt"))))
	if err != nil {
		t.Fatal(err)
	}
	if got >= procs*rounds {
		t.Fatalf("counter without a shared lock = %d, want fewer than %d (lost updates)", got, procs*rounds)
	}
	t.Logf("without a shared lock: %d of %d increments survived", got, procs*rounds)
}

// TestKilledWriterLeavesOldOrNewFile: a writer SIGKILLed at each point of a
// transaction leaves the old file or the new one, never a torn one, and the
// lock free at once. Ablations: writing the data file in place (no rename)
// tears it at the "temp written" point; a lock that outlived its process
// would fail the TryAcquire after the kill.
func TestKilledWriterLeavesOldOrNewFile(t *testing.T) {
	points := []struct {
		name string
		want string // the file after the kill
	}{
		{"in-fn", "41\n"},
		{"temp-written", "41\n"},
		{"replaced", "42\n"},
	}
	for _, p := range points {
		t.Run(p.name, func(t *testing.T) {
			if c := testkit.Child(t); c != nil {
				stop := func() { c.Mark("reached"); time.Sleep(time.Hour) }
				at := map[string]seam.Point{"temp-written": seam.TempWritten, "replaced": seam.Replaced}[p.name]
				seam.Set(c.T, func(sp seam.Point, _ string) error {
					if at != "" && sp == at {
						stop()
					}
					return nil
				})
				s := must(NewStore[*counter](filepath.Join(c.Dir, "count.txt"), counterCodec{}))
				s.Mutate(context.Background(), func(d *counter) error {
					d.n++
					if p.name == "in-fn" {
						stop()
					}
					return nil
				})
				c.T.Fatalf("child survived its transaction at %s", p.name)
				return
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "count.txt")
			if err := os.WriteFile(path, []byte("41\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			g := testkit.Start(t, 1, dir)
			g.WaitMark("reached")
			lp := path + ".lock"
			if _, err := lock.TryAcquire(lp); !errors.Is(err, lock.ErrWouldBlock) {
				t.Fatalf("TryAcquire while the writer is inside its transaction = %v, want ErrWouldBlock", err)
			}
			g.Kill(0)
			h, err := lock.TryAcquire(lp)
			if err != nil {
				t.Fatalf("TryAcquire right after SIGKILL = %v, want the lock free", err)
			}
			h.Release()
			if got := readCount(t, path); got != p.want {
				t.Fatalf("file after a kill at %s = %q, want %q", p.name, got, p.want)
			}
			s := must(NewStore[*counter](path, counterCodec{}))
			if _, err := s.Mutate(context.Background(), func(d *counter) error { d.n++; return nil }); err != nil {
				t.Fatalf("Mutate after the kill = %v", err)
			}
		})
	}
}

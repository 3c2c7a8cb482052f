package lock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// The tests in this file check the lock across real processes: the test
// binary re-executes itself (filetxntest), each child runs the branch of
// the test that testkit.Child selects, and the parent checks the result.

// waitToBeKilled blocks a child until the parent kills it, and fails the
// child if that never happens within the harness's bound.
func waitToBeKilled(c *testkit.C) {
	c.T.Helper()
	time.Sleep(testkit.Timeout)
	c.T.Fatalf("child %d: not killed within %v", c.Index, testkit.Timeout)
}

// childAcquire is Acquire in a child process, failing the child on error.
func childAcquire(c *testkit.C, path string, opts ...lock.Option) *lock.Handle {
	c.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	h, err := lock.Acquire(ctx, path, opts...)
	if err != nil {
		c.T.Fatalf("child %d: Acquire(%q) = %v, want nil", c.Index, path, err)
	}
	return h
}

// TestAnotherProcessHoldsUntilKilled: while a child process holds the lock,
// TryAcquire here fails at once with ErrWouldBlock and a *BusyError whose
// Holder names the child's pid and purpose; once the child is SIGKILLed the
// lock is free at once (one TryAcquire, no waiting), and the dead child's
// stale holder record is replaced by ours.
//
// Ablations that turn it red: lockFD made a no-op (flock never called):
// TryAcquire succeeds while the child holds. The holder record not written
// in lockOS: BusyError.Holder is nil. TryAcquire treating a present holder
// record as "busy" (a pid-file lock): the TryAcquire right after the kill
// fails on the dead child's stale record.
func TestAnotherProcessHoldsUntilKilled(t *testing.T) {
	const purpose = "child holds until killed"
	if c := testkit.Child(t); c != nil {
		h := childAcquire(c, filepath.Join(c.Dir, "x.lock"), lock.WithPurpose(purpose))
		c.Mark("held")
		waitToBeKilled(c)
		h.Release()
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	g := testkit.Start(t, 1, dir)
	g.WaitMark("held")

	_, err := lock.TryAcquire(path)
	if !errors.Is(err, lock.ErrWouldBlock) {
		t.Fatalf("TryAcquire(%q) while child holds = %v, want ErrWouldBlock", path, err)
	}
	var busy *lock.BusyError
	if !errors.As(err, &busy) {
		t.Fatalf("TryAcquire(%q) while child holds = %T %v, want a *BusyError", path, err, err)
	}
	if busy.Path != path || busy.Holder == nil || busy.Holder.PID != g.Pid(0) || busy.Holder.Purpose != purpose {
		t.Fatalf("TryAcquire(%q) = BusyError{Path: %q, Holder: %+v}, want path %q, holder pid %d purpose %q",
			path, busy.Path, busy.Holder, path, g.Pid(0), purpose)
	}

	g.Kill(0)
	// The kernel drops a flock when the last descriptor of its open file
	// description closes, which exit does before the parent's wait returns.
	// Windows unlocks a dead process's ranges asynchronously, so it gets a
	// bounded wait instead.
	h, err := lock.TryAcquire(path, lock.WithPurpose("after the kill"))
	if err != nil && runtime.GOOS == "windows" {
		waitUntil(t, "lock freed after TerminateProcess", func() bool {
			h, err = lock.TryAcquire(path, lock.WithPurpose("after the kill"))
			return err == nil
		})
	}
	if err != nil {
		t.Fatalf("TryAcquire(%q) right after the holder was killed = %v, want nil", path, err)
	}
	defer h.Release()
	rec, err := lock.ReadHolder(path)
	if err != nil || rec == nil || rec.PID != os.Getpid() || rec.Purpose != "after the kill" {
		t.Fatalf("ReadHolder(%q) after re-acquiring = %+v, %v, want pid %d purpose %q", path, rec, err, os.Getpid(), "after the kill")
	}
}

// TestAcquireDeadlineAcrossProcessesLeaksNothing: an Acquire with a 50ms
// deadline while another process holds the lock returns an error matching
// context.DeadlineExceeded; once the holder is killed, this process's
// descriptor count (Linux) and goroutine count return to their values before
// the wait, and the abandoned kernel-level wait has let the lock go (a fresh
// process can take it).
//
// The baseline is taken after one TryAcquire/Release of the lock file,
// because the package keeps descriptors of released lock files open on
// purpose (doc.go: up to 16); that cache is not a leak.
//
// Ablations that turn it red: the goroutine of an abandoned wait in waitOS
// never exiting (a "select {}" after it lets go): the goroutine count stays
// one higher. waitOS waiting on a unix.Dup of the descriptor that it never
// closes: the descriptor count stays one higher. The abandoned goroutine
// skipping unlockFD once the kernel grants it the lock: the probe process's
// TryAcquire gets ErrWouldBlock.
func TestAcquireDeadlineAcrossProcessesLeaksNothing(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		path := filepath.Join(c.Dir, "x.lock")
		if c.Args == "probe" {
			h, err := lock.TryAcquire(path)
			if err != nil {
				t.Fatalf("probe: TryAcquire(%q) after the holder died = %v, want nil", path, err)
			}
			h.Release()
			return
		}
		childAcquire(c, path, lock.WithPurpose("holder"))
		c.Mark("held")
		waitToBeKilled(c)
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	h, err := lock.TryAcquire(path)
	if err != nil {
		t.Fatalf("TryAcquire(%q) = %v", path, err)
	}
	h.Release()
	fds, goroutines := countFDs(t), runtime.NumGoroutine()

	g := testkit.Start(t, 1, dir)
	g.WaitMark("held")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = lock.Acquire(ctx, path)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire(%q, 50ms deadline) while another process holds = %v, want DeadlineExceeded", path, err)
	}
	var busy *lock.BusyError
	if !errors.As(err, &busy) || busy.Holder == nil || busy.Holder.PID != g.Pid(0) || busy.Waited <= 0 {
		t.Fatalf("Acquire(%q, 50ms deadline) = %#v, want a BusyError naming pid %d with a positive wait", path, err, g.Pid(0))
	}

	g.Kill(0)
	linux := runtime.GOOS == "linux"
	var nfds, ngs int
	deadline := time.Now().Add(bound)
	for {
		nfds, ngs = countFDs(t), runtime.NumGoroutine()
		if (!linux || nfds <= fds) && ngs <= goroutines {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the holder died: %d descriptors (want <= %d), %d goroutines (want <= %d)", nfds, fds, ngs, goroutines)
		}
		time.Sleep(time.Millisecond)
	}

	probe := testkit.StartWith(t, 1, dir, testkit.Options{Args: "probe"})
	probe.Wait()
}

const (
	counterProcs = 6
	counterIters = 200
)

// runCounter starts counterProcs children that each add 1 to a decimal
// counter file counterIters times, reading and writing it with plain
// os.ReadFile and os.WriteFile (truncate, then write: not atomic) under
// lock.Acquire of lockName(child index). It returns the final count.
func runCounter(t *testing.T, lockName func(i int) string) int {
	t.Helper()
	if c := testkit.Child(t); c != nil {
		counter := filepath.Join(c.Dir, "counter")
		lockPath := filepath.Join(c.Dir, lockName(c.Index))
		shared := lockName(0) == lockName(1)
		c.Barrier()
		for range counterIters {
			h, err := lock.Acquire(context.Background(), lockPath)
			if err != nil {
				t.Fatalf("child %d: Acquire(%q) = %v", c.Index, lockPath, err)
			}
			n := readCounter(t, counter, shared)
			runtime.Gosched() // widen the read-modify-write window
			if err := os.WriteFile(counter, []byte(strconv.Itoa(n+1)+"\n"), 0o644); err != nil {
				t.Fatalf("child %d: WriteFile(%q) = %v", c.Index, counter, err)
			}
			if err := h.Release(); err != nil {
				t.Fatalf("child %d: Release() = %v", c.Index, err)
			}
		}
		return -1
	}
	dir := t.TempDir()
	counter := filepath.Join(dir, "counter")
	if err := os.WriteFile(counter, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := testkit.Start(t, counterProcs, dir)
	g.Release()
	g.Wait()
	return readCounter(t, counter, lockName(0) == lockName(1))
}

// readCounter parses the counter file. With strict (one shared lock) the
// file must hold exactly one decimal line: anything else means a writer was
// caught between its truncate and its write, which the lock must prevent.
// Without the lock, a torn read (an empty file, or a shorter number written
// over a longer one) is expected; it is retried and the first line is used.
func readCounter(t *testing.T, path string, strict bool) int {
	t.Helper()
	for try := 0; ; try++ {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("ReadFile(%q) = %v", path, err)
		}
		if strict {
			n, err := strconv.Atoi(string(bytes.TrimSuffix(b, []byte("\n"))))
			if err != nil || !bytes.HasSuffix(b, []byte("\n")) {
				t.Fatalf("counter file = %q under the lock, want one decimal line", b)
			}
			return n
		}
		line, _, _ := bytes.Cut(b, []byte("\n"))
		if n, err := strconv.Atoi(string(line)); err == nil {
			return n
		}
		if try > 1_000_000 {
			t.Fatalf("counter file = %q, unreadable after %d tries", b, try)
		}
		runtime.Gosched()
	}
}

// TestLockExcludesAcrossProcesses: 6 processes x 200 unsynchronised
// read-modify-write increments of one counter file, each under Acquire of
// one shared lock file, end at exactly 1200, and no process ever reads a
// torn counter.
//
// Ablation that turns it red: lockFD made a no-op (no flock): children read
// the counter between another's truncate and write and fail, and the count
// ends short. The sibling test
// TestCounterWithoutSharedLockLosesUpdates is the same run with one lock
// file per process and shows that this workload does lose updates when the
// processes do not exclude each other.
func TestLockExcludesAcrossProcesses(t *testing.T) {
	got := runCounter(t, func(int) string { return "counter.lock" })
	if got == -1 {
		return // a child
	}
	if want := counterProcs * counterIters; got != want {
		t.Fatalf("counter after %d processes x %d locked increments = %d, want %d", counterProcs, counterIters, got, want)
	}
}

// TestCounterWithoutSharedLockLosesUpdates is the ablation of
// TestLockExcludesAcrossProcesses, kept as a test: each process locks a lock
// file of its own, so nothing excludes anything, and the count must end below
// 1200. If it did not, the counter test could not tell a working lock from a
// broken one.
//
// A run on a loaded machine can happen to interleave nothing (the children
// then run one after another), so it takes up to five runs to see one lose
// an update; a working lock would never lose one.
func TestCounterWithoutSharedLockLosesUpdates(t *testing.T) {
	max := counterProcs * counterIters
	for run := 1; run <= 5; run++ {
		got := runCounter(t, func(i int) string { return fmt.Sprintf("counter-%d.lock", i) })
		if got == -1 {
			return // a child
		}
		if got < max {
			t.Logf("without a shared lock: %d of %d increments survived (run %d)", got, max, run)
			return
		}
	}
	t.Fatalf("counter after %d processes x %d increments with a lock each = %d in 5 runs, want < %d (lost updates)", counterProcs, counterIters, max, max)
}

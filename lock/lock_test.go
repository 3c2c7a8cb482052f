package lock_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// quiet is how long a goroutine must stay blocked before a test believes it
// is blocked, and bound how long a test waits for something that must happen.
// Neither is a timing assertion: a slow machine only makes the test slower.
const (
	quiet = 50 * time.Millisecond
	bound = 10 * time.Second
)

// assertBlocked checks that done stays open for the quiet interval.
func assertBlocked(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s returned %v while the lock was held; want it to wait", what, err)
	case <-time.After(quiet):
	}
}

// assertDone waits (at most bound) for done and returns its value.
func assertDone(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(bound):
		t.Fatalf("%s still waiting after %v", what, bound)
		return nil
	}
}

func mustAcquire(t *testing.T, path string, opts ...lock.Option) *lock.Handle {
	t.Helper()
	h, err := lock.Acquire(context.Background(), path, opts...)
	if err != nil {
		t.Fatalf("Acquire(%q) = %v", path, err)
	}
	t.Cleanup(func() { h.Release() })
	return h
}

// TestAcquireReentrantFailsAtOnce: a goroutine asking again for a lock it
// holds gets ErrReentrant instead of deadlocking. Ablation: without the owner
// check in acquire this test hangs until its timeout.
func TestAcquireReentrantFailsAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	h := mustAcquire(t, path)
	for _, try := range []struct {
		name string
		call func() error
	}{
		{"Acquire", func() error { _, err := lock.Acquire(context.Background(), path); return err }},
		{"TryAcquire", func() error { _, err := lock.TryAcquire(path); return err }},
	} {
		// No t.Run: a subtest runs in a goroutine of its own, and the point
		// is that the holding goroutine asks.
		if err := try.call(); !errors.Is(err, lock.ErrReentrant) {
			t.Errorf("%s(%q) while held by this goroutine = %v, want ErrReentrant", try.name, path, err)
		}
	}
	// Another goroutine waits normally, and gets the lock once it is released.
	done := make(chan error, 1)
	go func() {
		h2, err := lock.Acquire(context.Background(), path)
		if err == nil {
			err = h2.Release()
		}
		done <- err
	}()
	assertBlocked(t, done, "Acquire from another goroutine")
	if err := h.Release(); err != nil {
		t.Fatalf("Release() = %v", err)
	}
	if err := assertDone(t, done, "Acquire from another goroutine"); err != nil {
		t.Fatalf("Acquire from another goroutine = %v, want nil", err)
	}
}

// TestSpellingsOfOneFileAreOneLock: the gate is keyed by identity, so a
// dot-dot path, a relative path and a symlink exclude each other. Ablation:
// keying the table by the path string makes TryAcquire succeed here. The
// relative spelling is taken from inside the test's directory, which works
// where the working directory is on another volume (Windows' temporary
// directory and the package's often are).
func TestSpellingsOfOneFileAreOneLock(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "x.lock")
	h := mustAcquire(t, path) // creates the file
	defer h.Release()
	t.Chdir(filepath.Join(dir, "a"))
	excludes := func(p string) {
		t.Helper()
		// No t.Run: the holding goroutine itself must ask.
		if _, err := lock.Acquire(context.Background(), p); !errors.Is(err, lock.ErrReentrant) {
			t.Errorf("Acquire(%q) in the holding goroutine = %v, want ErrReentrant", p, err)
		}
		done := make(chan error, 1)
		go func() { _, err := lock.TryAcquire(p); done <- err }()
		if err := assertDone(t, done, "TryAcquire"); !errors.Is(err, lock.ErrWouldBlock) {
			t.Errorf("TryAcquire(%q) from another goroutine = %v, want ErrWouldBlock", p, err)
		}
	}
	excludes(filepath.Join(dir, "a", "..", "x.lock"))
	excludes(filepath.Join("..", "x.lock"))

	testkit.Skip(t, testkit.NoSymlinks)
	link := filepath.Join(dir, "link.lock")
	if err := os.Symlink(path, link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	excludes(link)
}

// TestAcquireHonoursDeadline: an in-process waiter with a 50ms deadline
// returns an error matching context.DeadlineExceeded and carrying the
// holder, and leaves no goroutine or descriptor behind.
func TestAcquireHonoursDeadline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	h := mustAcquire(t, path, lock.WithPurpose("deadline test"))
	fds, goroutines := countFDs(t), runtime.NumGoroutine()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := lock.Acquire(ctx, path); done <- err }()
	err := assertDone(t, done, "Acquire with deadline")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire(50ms deadline) = %v, want DeadlineExceeded", err)
	}
	var busy *lock.BusyError
	if !errors.As(err, &busy) || busy.Holder == nil || busy.Holder.Purpose != "deadline test" || busy.Holder.PID != os.Getpid() {
		t.Fatalf("Acquire(50ms deadline) error = %#v, want a BusyError naming this process and its purpose", err)
	}
	h.Release()
	waitUntil(t, "descriptors and goroutines back to their count", func() bool {
		return countFDs(t) <= fds && runtime.NumGoroutine() <= goroutines
	})
}

// TestTryAcquireInProcess: TryAcquire never waits for another goroutine.
func TestTryAcquireInProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	h := mustAcquire(t, path)
	done := make(chan error, 1)
	go func() { _, err := lock.TryAcquire(path); done <- err }()
	if err := assertDone(t, done, "TryAcquire"); !errors.Is(err, lock.ErrWouldBlock) {
		t.Fatalf("TryAcquire(held) = %v, want ErrWouldBlock", err)
	}
	h.Release()
	go func() {
		h, err := lock.TryAcquire(path)
		if err == nil {
			h.Release()
		}
		done <- err
	}()
	if err := assertDone(t, done, "TryAcquire"); err != nil {
		t.Fatalf("TryAcquire(free) = %v, want nil", err)
	}
}

// TestReleaseIsIdempotent: a second Release does nothing and returns nil.
func TestReleaseIsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	h := mustAcquire(t, path)
	for i := range 3 {
		if err := h.Release(); err != nil {
			t.Fatalf("Release() #%d = %v, want nil", i+1, err)
		}
	}
	h2, err := lock.TryAcquire(path)
	if err != nil {
		t.Fatalf("TryAcquire after Release = %v", err)
	}
	h2.Release()
}

// TestHolderRecord: the holder record names this process and purpose while
// held and is gone once released; on Unix the lock file and its directory
// have no group or other bits.
func TestHolderRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks", "x.lock")
	h := mustAcquire(t, path, lock.WithPurpose("tick ci-triage"))
	rec, err := lock.ReadHolder(path)
	if err != nil || rec == nil {
		t.Fatalf("ReadHolder(held) = %v, %v", rec, err)
	}
	if rec.PID != os.Getpid() || rec.Purpose != "tick ci-triage" || rec.Acquired.IsZero() {
		t.Errorf("ReadHolder(held) = %+v, want pid %d, purpose %q, a time", rec, os.Getpid(), "tick ci-triage")
	}
	h.Release()
	if rec, err := lock.ReadHolder(path); rec != nil || err != nil {
		t.Errorf("ReadHolder(released) = %+v, %v, want nil, nil", rec, err)
	}
	if runtime.GOOS == "windows" {
		return // no mode bits: Go reports 0666 for any writable file, and the directory's ACL governs access
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		t.Errorf("lock file mode = %v, want no group or other bits", perm)
	}
	di, _ := os.Stat(filepath.Dir(path))
	if perm := di.Mode().Perm(); perm&0o077 != 0 {
		t.Errorf("lock directory mode = %v, want no group or other bits", perm)
	}
}

// TestWaitReportIsTheBusyErrorOfTheWait: a wait longer than the threshold is
// reported once, with the *BusyError the wait would return if it gave up
// then: the lock file, the holder record, the time waited so far, and
// ErrWouldBlock. Ablation: building the report without Err (nil) or with
// Waited zero makes it red.
func TestWaitReportIsTheBusyErrorOfTheWait(t *testing.T) {
	const after = time.Millisecond
	path := filepath.Join(t.TempDir(), "x.lock")
	h := mustAcquire(t, path, lock.WithPurpose("slow work"))
	var calls atomic.Int32
	reported := make(chan *lock.BusyError, 4)
	done := make(chan error, 1)
	go func() {
		h2, err := lock.Acquire(context.Background(), path, lock.WithWaitReport(after, func(e *lock.BusyError) {
			calls.Add(1)
			reported <- e
		}))
		if err == nil {
			h2.Release()
		}
		done <- err
	}()
	var e *lock.BusyError
	select {
	case e = <-reported:
	case <-time.After(bound):
		t.Fatal("no wait report")
	}
	require.Equal(t, path, e.Path, "WithWaitReport(%v) reported Path %q, want %q", after, e.Path, path)
	require.NotNil(t, e.Holder, "WithWaitReport(%v) reported Holder nil, want the holder record", after)
	require.Equal(t, "slow work", e.Holder.Purpose, "WithWaitReport(%v) reported Holder.Purpose %q, want %q", after, e.Holder.Purpose, "slow work")
	require.GreaterOrEqual(t, e.Waited, after, "WithWaitReport(%v) reported Waited %v, want at least %v", after, e.Waited, after)
	require.ErrorIs(t, e, lock.ErrWouldBlock, "WithWaitReport(%v) reported Err %v, want ErrWouldBlock", after, e.Err)
	require.Contains(t, e.Error(), path, "WithWaitReport(%v) reported %q, want it to name the lock file", after, e.Error())
	require.Contains(t, e.Error(), "slow work", "WithWaitReport(%v) reported %q, want it to name the holder's purpose", after, e.Error())
	assertBlocked(t, done, "reported waiter")
	h.Release()
	if err := assertDone(t, done, "reported waiter"); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("wait reported %d times, want 1", n)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, bound)
		}
		time.Sleep(time.Millisecond)
	}
}

// countFDs counts this process's open descriptors (Linux); elsewhere 0.
func countFDs(t *testing.T) int {
	t.Helper()
	if testkit.Detected() {
		return 0 // /proc/self/fd is the Linux side of Wine, not this program's handles
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents)
}

// TestCurrentAfterRename: a handle whose lock file was renamed away is no
// longer current; a new file at the path is a different lock.
func TestCurrentAfterRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "loop", "x.lock")
	h := mustAcquire(t, path)
	if ok, err := h.Current(); !ok || err != nil {
		t.Fatalf("Current() = %v, %v, want true", ok, err)
	}
	if err := os.Rename(filepath.Join(dir, "loop"), filepath.Join(dir, "tomb")); err != nil {
		t.Fatal(err)
	}
	if ok, err := h.Current(); ok || err != nil {
		t.Fatalf("Current() after rename = %v, %v, want false", ok, err)
	}
	h2 := mustAcquire(t, path) // a fresh file: a different lock, free
	if ok, _ := h2.Current(); !ok {
		t.Fatal("Current() of the new lock = false")
	}
}

// TestCurrentIsFalseOnceReleased: a handle released by another goroutine
// (as Handle allows) is no longer current, although the same file is at the
// path, so that a writer that checks Current before it publishes publishes
// nothing without the lock; Current says so at once even while that
// Release's I/O stalls (the hook blocks it). Ablation: Current comparing
// identities alone answers true after the Release, and this test goes red.
func TestCurrentIsFalseOnceReleased(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	h := mustAcquire(t, path)
	entered, resume := make(chan struct{}), make(chan struct{})
	var once, resumeOnce sync.Once
	goOn := func() { resumeOnce.Do(func() { close(resume) }) }
	onPoint(t, seam.Unlock, func(p string) {
		if p == path {
			once.Do(func() { close(entered); <-resume })
		}
	})
	t.Cleanup(goOn) // before mustAcquire's Release, which would wait for the stalled one
	ok, err := h.Current()
	require.True(t, ok && err == nil, "Current() while held = %v, %v, want true, nil", ok, err)
	released := make(chan error, 1)
	go func() { released <- h.Release() }()
	<-entered
	current := make(chan error, 1)
	go func() {
		ok, err := h.Current()
		if ok || err != nil {
			err = fmt.Errorf("Current() during another goroutine's Release = %v, %v, want false, nil", ok, err)
		}
		current <- err
	}()
	require.NoError(t, assertDone(t, current, "Current during a stalled Release"))
	goOn()
	require.NoError(t, assertDone(t, released, "the Release"))
	ok, err = h.Current()
	require.True(t, !ok && err == nil, "Current() after Release = %v, %v, want false, nil", ok, err)
}

// TestHolderRecordEncoding: the hand-made record decodes to what it says,
// whatever the purpose holds.
func TestHolderRecordEncoding(t *testing.T) {
	for _, purpose := range []string{"", "tick ci-triage", `quote " and \ backslash`, "ünïcode ✓", "line\nbreak"} {
		path := filepath.Join(t.TempDir(), "x.lock")
		done := make(chan struct{})
		go func() { // its own goroutine: a fresh holder each round
			defer close(done)
			h, err := lock.Acquire(context.Background(), path, lock.WithPurpose(purpose))
			if err != nil {
				t.Error(err)
				return
			}
			defer h.Release()
			rec, err := lock.ReadHolder(path)
			if err != nil || rec == nil || rec.Purpose != purpose || rec.PID != os.Getpid() {
				t.Errorf("ReadHolder with purpose %q = %+v, %v", purpose, rec, err)
			}
		}()
		<-done
	}
}

// TestHolderString: the host is named only when it is another one; a nil
// holder says it left no record.
func TestHolderString(t *testing.T) {
	own, _ := os.Hostname()
	here := (&lock.Holder{PID: 7, Host: own, Program: "looprunner", Purpose: "tick"}).String()
	if here != "pid 7 (looprunner: tick)" {
		t.Errorf("String() on this host = %q, want %q", here, "pid 7 (looprunner: tick)")
	}
	there := (&lock.Holder{PID: 7, Host: own + "-elsewhere"}).String()
	if there != "pid 7 on "+own+"-elsewhere" {
		t.Errorf("String() on another host = %q", there)
	}
	var none *lock.Holder
	if s := none.String(); !strings.Contains(s, "no record") {
		t.Errorf("(*Holder)(nil).String() = %q, want it to say no record was left", s)
	}
}

// TestWaitReported: WithWaitReport reports a long wait once, naming the lock
// and its holder. Ablation: dropping the onWait call in waitClock leaves no
// report.
func TestWaitReported(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	h := mustAcquire(t, path, lock.WithPurpose("reported work"))
	logs := make(chan *lock.BusyError, 4)
	done := make(chan error, 1)
	go func() {
		h2, err := lock.Acquire(context.Background(), path,
			lock.WithWaitReport(time.Millisecond, func(e *lock.BusyError) { logs <- e }))
		if err == nil {
			h2.Release()
		}
		done <- err
	}()
	select {
	case r := <-logs:
		if r.Path != path || r.Holder == nil || r.Holder.Purpose != "reported work" {
			t.Errorf("wait report = %+v, want the lock path and the holder's purpose", r)
		}
	case <-time.After(bound):
		t.Fatal("no wait reported")
	}
	h.Release()
	if err := assertDone(t, done, "logged waiter"); err != nil {
		t.Fatal(err)
	}
	if len(logs) != 0 {
		t.Errorf("wait reported %d more times, want once", len(logs))
	}
}

// TestWithoutCreate checks that WithoutCreate refuses a missing lock file with
// fs.ErrNotExist and creates neither it nor its directory, and that it takes
// an existing one as usual. Ablation: ignoring the option in lookup (the file
// and directory appear) turns it red.
func TestWithoutCreate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	path := filepath.Join(dir, "job.lock")
	for _, try := range []struct {
		name    string
		acquire func() (*lock.Handle, error)
	}{
		{"Acquire", func() (*lock.Handle, error) {
			return lock.Acquire(context.Background(), path, lock.WithoutCreate())
		}},
		{"TryAcquire", func() (*lock.Handle, error) { return lock.TryAcquire(path, lock.WithoutCreate()) }},
	} {
		t.Run(try.name, func(t *testing.T) {
			h, err := try.acquire()
			if h != nil {
				h.Release()
			}
			if !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s(missing, WithoutCreate()) = %v, %v; want fs.ErrNotExist", try.name, h, err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Stat(%s) = %v after a refused acquire; want fs.ErrNotExist", dir, err)
			}
		})
	}
	t.Run("existing", func(t *testing.T) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		h, err := lock.Acquire(context.Background(), path, lock.WithoutCreate())
		if err != nil {
			t.Fatalf("Acquire(existing, WithoutCreate()) = %v", err)
		}
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestBusyErrorWithoutErrSaysBusy: a BusyError a caller builds without Err
// (for a report of its own) still prints, naming the lock file and the wait,
// instead of panicking on the nil Err. Ablation: dropping the nil check in
// Error makes it panic.
func TestBusyErrorWithoutErrSaysBusy(t *testing.T) {
	e := &lock.BusyError{Path: "/x/y.lock", Waited: 2 * time.Second}
	got := e.Error()
	require.Equal(t, "lock /x/y.lock: busy, waited 2s", got, "BusyError{Path, Waited}.Error() = %q, want %q", got, "lock /x/y.lock: busy, waited 2s")
	require.NoError(t, e.Unwrap(), "BusyError{Path, Waited}.Unwrap() = %v, want nil", e.Unwrap())
}

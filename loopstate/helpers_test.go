package loopstate

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/lock"
)

// testClock is a clock that tests move by hand. It is safe for concurrent
// use.
type testClock struct {
	mu sync.Mutex // protects t
	t  time.Time
}

var epoch0 = time.Date(2025, 5, 1, 9, 0, 0, 0, time.UTC)

func newClock() *testClock { return &testClock{t: epoch0} }

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newTestRoot returns a root in a fresh temporary directory, without fsync,
// on a test clock.
func newTestRoot(t testing.TB, opts ...filetxn.Option) (*Root, *testClock) {
	t.Helper()
	c := newClock()
	r := mustRoot(NewRoot(t.TempDir(), append([]filetxn.Option{filetxn.WithoutSync()}, opts...)...))
	r.now = c.now
	return r, c
}

// mustCreate creates a loop or fails the test.
func mustCreate(t testing.TB, r *Root, name string, tpl Template) *Loop {
	t.Helper()
	l, err := r.Create(context.Background(), name, tpl.apply)
	if err != nil {
		t.Fatalf("Create(%q) = %v", name, err)
	}
	return l
}

// mustOpen opens a loop or fails the test.
func mustOpen(t testing.TB, r *Root, name string) *Loop {
	t.Helper()
	l, err := r.Open(ctx0, name)
	if err != nil {
		t.Fatalf("Open(%q) = %v", name, err)
	}
	return l
}

// mustView reads a loop's state or fails the test.
func mustView(t testing.TB, l *Loop) *Doc {
	t.Helper()
	d, err := l.View(context.Background())
	if err != nil {
		t.Fatalf("View(%s) = %v", l.Name(), err)
	}
	return d
}

// mustTicks reads a loop's tick log or fails the test.
func mustTicks(t testing.TB, l *Loop) []TickRecord {
	t.Helper()
	recs, err := l.Ticks(context.Background())
	if err != nil {
		t.Fatalf("Ticks(%s) = %v", l.Name(), err)
	}
	return recs
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func i64(n int64) *int64        { return &n }
func f64(f float64) *float64    { return &f }
func tm(t time.Time) *time.Time { return &t }

// okHarness is an in-process harness that succeeds at the given cost.
func okHarness(c Cost) Harness {
	return func(ctx context.Context, run *Run) (Result, error) { return Result{Cost: &c}, nil }
}

// failHarness is an in-process harness that fails at no cost.
func failHarness(ctx context.Context, run *Run) (Result, error) {
	return Result{Failed: true, Cost: &Cost{}, Note: "failed on purpose"}, nil
}

// tickHalted reports whether a tick's record says that the tick halted the
// loop (by a gate before or after its harness, or by its harness).
func tickHalted(rec TickRecord) bool {
	return rec.StatusAfter == Halted && rec.StatusBefore != Halted
}

// The exit codes of the format (docs/formats/loopstate.md), as the tests
// of the cross-process properties record a command's result.
const (
	exitOK      = 0
	exitRefused = 1
	exitUsage   = 2
	exitNoLoop  = 3
	exitHalted  = 4
	exitPaused  = 5
	exitBusy    = 75
)

// exitCode maps an error of this package to the format's exit code, as a
// command line would.
func exitCode(err error) int {
	var (
		busy  *lock.BusyError
		guard *GuardError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &busy), errors.Is(err, lock.ErrWouldBlock), errors.Is(err, lock.ErrLockLost):
		return exitBusy
	case errors.Is(err, filetxn.ErrNotFound):
		return exitNoLoop
	case errors.As(err, &guard) && guard.op == "check-gate" && guard.Status == Halted:
		return exitHalted
	case errors.As(err, &guard) && guard.op == "check-gate" && guard.Status == Paused:
		return exitPaused
	case errors.Is(err, filetxn.ErrInvalidArgument):
		return exitUsage
	}
	return exitRefused
}

// mustRoot returns r, and panics if NewRoot refused its arguments: the
// tests' roots are all valid.
func mustRoot(r *Root, err error) *Root {
	if err != nil {
		panic(err)
	}
	return r
}

// Template is the tests' shorthand for what a Create fn sets: the template
// name, the gates, the schedule, and whether the loop starts paused.
type Template struct {
	Name     string
	Gates    Gates
	Schedule Schedule
	Paused   bool // create the loop paused (pause.by "create")
}

// apply is a Create fn that sets what t says.
func (t Template) apply(d *Doc) error {
	d.Template, d.Gates, d.Schedule = t.Name, t.Gates.clone(), t.Schedule
	if t.Paused {
		d.Status = Paused
		d.Paused = &Event{At: d.CreatedAt, By: "create", Reason: "created paused"}
	}
	return nil
}

// New returns the initial state that Create writes for name, created at
// now from t, without any I/O, and checks it as Create does.
func New(name string, now time.Time, t Template) (*Doc, error) {
	d, _, err := initial(name, now, t.apply)
	return d, err
}

// refusal returns the Key of the *filetxn.FormatError in err, the invariant
// it says is broken ("" for none), and whether err has one.
func refusal(err error) (key, inv string, ok bool) {
	var fe *filetxn.FormatError
	if !errors.As(err, &fe) {
		return "", "", false
	}
	var bi *brokenInvariant
	if errors.As(fe.Err, &bi) {
		inv = bi.name
	}
	return fe.Key, inv, true
}

// keyIs reports whether err has a *filetxn.FormatError whose Key is key.
func keyIs(err error, key string) bool {
	k, _, ok := refusal(err)
	return ok && k == key
}

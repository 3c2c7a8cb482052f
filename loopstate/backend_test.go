package loopstate

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/internal/testkit/memback"
	"github.com/filetxn/filetxn/lock"
)

// newBackendRoot returns the root "proj" of a fresh session of c, on a
// test clock.
func newBackendRoot(t testing.TB, c *memback.Cluster) *Root {
	t.Helper()
	r := mustRoot(NewRoot("proj", filetxn.WithBackend(c.Backend())))
	r.now = newClock().now
	return r
}

// TestBackendLoopLifecycle: on a backend every operation of a loop works
// on documents, with the files' errors: Create claims the name (a second
// gets fs.ErrExist), Open, List (a loop "a" does not list "ab"'s ticks),
// the transitions, Tick, Ticks, and Delete, which removes the state and
// every tick line in one commit; no local file is made. Ablation: a List
// of "proj/ticks/a" without the slash gives "a" the ticks of "ab"; a Delete
// without the prefix removal leaves its lines, and the loop created again
// lists them.
func TestBackendLoopLifecycle(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	c := memback.New()
	r := newBackendRoot(t, c)
	a := mustCreate(t, r, "a", Template{})
	ab := mustCreate(t, r, "ab", Template{})
	_, err := r.Create(ctx0, "a", nil)
	require.ErrorIs(t, err, fs.ErrExist, "Create(a) again")
	_, err = r.Open(ctx0, "nope")
	require.ErrorIs(t, err, filetxn.ErrNotFound, "Open(nope)")
	ls, err := r.List(ctx0)
	require.NoError(t, err)
	require.Len(t, ls, 2)
	assert.Equal(t, []string{"a", "ab"}, []string{ls[0].Name(), ls[1].Name()})

	require.NoError(t, a.Pause(ctx0, "ops", "maintenance"))
	rec, err := a.Tick(ctx0, TriggerManual, mustNotRun(t))
	require.NoError(t, err)
	assert.Equal(t, Skipped, rec.Outcome)
	require.NoError(t, a.Resume(ctx0))
	_, err = a.Mutate(ctx0, func(d *Doc) error { d.Template = "t1"; return nil })
	require.NoError(t, err)
	for range 2 {
		rec, err = a.Tick(ctx0, TriggerManual, okHarness(Cost{USD: 0.5, Tokens: 3}))
		require.NoError(t, err)
		assert.Equal(t, OK, rec.Outcome)
	}
	_, err = ab.Tick(ctx0, TriggerManual, failHarness)
	require.NoError(t, err)
	d := mustView(t, a)
	assert.Equal(t, int64(2), d.TickCount)
	assert.Equal(t, "t1", d.Template)
	assert.Equal(t, 1.0, d.Spent.USD)
	ticks := mustTicks(t, a)
	require.Len(t, ticks, 3, "Ticks(a)")
	assert.Equal(t, []Outcome{Skipped, OK, OK}, []Outcome{ticks[0].Outcome, ticks[1].Outcome, ticks[2].Outcome})
	assert.Equal(t, int64(2), ticks[2].N)
	require.Len(t, mustTicks(t, ab), 1, "Ticks(ab)")

	require.NoError(t, a.Delete(ctx0))
	require.ErrorIs(t, a.Delete(ctx0), filetxn.ErrNotFound, "Delete again")
	_, err = a.View(ctx0)
	require.ErrorIs(t, err, filetxn.ErrNotFound, "View after Delete")
	_, err = a.Ticks(ctx0)
	require.ErrorIs(t, err, filetxn.ErrNotFound, "Ticks after Delete")
	_, err = a.Mutate(ctx0, func(d *Doc) error { return nil })
	require.ErrorIs(t, err, filetxn.ErrNotFound, "Mutate after Delete")
	_, err = a.Tick(ctx0, TriggerManual, mustNotRun(t))
	require.ErrorIs(t, err, filetxn.ErrNotFound, "Tick after Delete")
	for _, name := range c.Names() {
		assert.False(t, strings.HasPrefix(name, "proj/loops/a/") || strings.HasPrefix(name, "proj/ticks/a/"), "%s outlives Delete", name)
	}
	a = mustCreate(t, r, "a", Template{})
	assert.Empty(t, mustTicks(t, a), "Ticks of a loop created again")
	require.Len(t, mustTicks(t, ab), 1, "Ticks(ab) after a's Delete")
	_, err = os.Stat(filepath.Join(dir, "proj"))
	assert.ErrorIs(t, err, fs.ErrNotExist, "a local file on a backend")
}

// TestBackendCreateOneWins: of concurrent Creates of one name, each in its
// own session, exactly one succeeds and the others get fs.ErrExist.
// Ablation: a Create that puts without its create-if-absent (a Commit)
// lets them all succeed.
func TestBackendCreateOneWins(t *testing.T) {
	c := memback.New()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		r := newBackendRoot(t, c)
		wg.Go(func() { _, errs[i] = r.Create(ctx0, "x", nil) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else {
			require.ErrorIs(t, err, fs.ErrExist)
		}
	}
	assert.Equal(t, 1, won)
}

// TestBackendTickIsOneCommit: a tick's line and its count are published
// together: a tick costs two commits (the marker, then the line with the
// state), and the log always has as many counted lines as tick_count.
// Ablation: publishing the line in a Commit of its own makes three.
func TestBackendTickIsOneCommit(t *testing.T) {
	c := memback.New()
	l := mustCreate(t, newBackendRoot(t, c), "x", Template{})
	before := c.Commits()
	_, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{}))
	require.NoError(t, err)
	assert.Equal(t, before+2, c.Commits(), "commits of one tick")
}

// TestBackendLostTickIsCountedOnce: a runner whose lock is lost during its
// harness (its lease expired) is fenced: a tick of another session that
// takes the lock counts the marked tick as abandoned, and the first
// runner's record then publishes nothing and fails with lock.ErrLockLost;
// every tick is counted once. When nobody took the lock, the runner
// records its tick once it holds the lock again. Ablation: recording again
// without checking that current_tick still marks the tick (record's
// marker.same) counts it twice (tick_count 3); a runningHere that ignores
// the backend takes the other session's tick for this one's, alive, and
// refuses the second tick.
func TestBackendLostTickIsCountedOnce(t *testing.T) {
	c := memback.New()
	r1, r2 := newBackendRoot(t, c), newBackendRoot(t, c)
	l1 := mustCreate(t, r1, "x", Template{})
	l2 := mustOpen(t, r2, "x")
	lockName := docName(l1.LockPath())
	_, err := l1.Tick(ctx0, TriggerManual, func(ctx context.Context, run *Run) (Result, error) {
		c.Steal(lockName)
		rec, err := l2.Tick(ctx0, TriggerManual, okHarness(Cost{}))
		require.NoError(t, err, "the second session's tick")
		assert.Equal(t, int64(2), rec.N)
		return Result{}, nil
	})
	require.ErrorIs(t, err, lock.ErrLockLost, "the fenced runner's Tick")
	d := mustView(t, l1)
	assert.Equal(t, int64(2), d.TickCount)
	assert.Nil(t, d.current)
	ticks := mustTicks(t, l1)
	require.Len(t, ticks, 2)
	assert.Equal(t, []Outcome{Abandoned, OK}, []Outcome{ticks[0].Outcome, ticks[1].Outcome})

	rec, err := l1.Tick(ctx0, TriggerManual, func(ctx context.Context, run *Run) (Result, error) {
		c.Steal(lockName)
		return Result{}, nil
	})
	require.NoError(t, err, "a tick whose lock nobody took")
	assert.Contains(t, rec.Note, lostNote)
	assert.Equal(t, int64(3), mustView(t, l1).TickCount)
	assert.Len(t, mustTicks(t, l1), 3)
}

// TestBackendScheduledTickSkipsBusy: a scheduled tick that finds the lock
// held logs a skipped/busy line without it, and runs nothing. Ablation:
// dropping the backend from Tick's busy check returns the lock's error.
func TestBackendScheduledTickSkipsBusy(t *testing.T) {
	c := memback.New()
	l1 := mustCreate(t, newBackendRoot(t, c), "x", Template{})
	_, err := l1.Mutate(ctx0, func(d *Doc) error { d.Schedule.Enabled = true; return nil })
	require.NoError(t, err)
	l2 := mustOpen(t, newBackendRoot(t, c), "x")
	_, err = l1.Tick(ctx0, TriggerManual, func(ctx context.Context, run *Run) (Result, error) {
		rec, err := l2.Tick(ctx, TriggerSchedule, mustNotRun(t))
		require.NoError(t, err)
		assert.Equal(t, skipBusy, rec.SkipReason)
		return Result{}, nil
	})
	require.NoError(t, err)
	ticks := mustTicks(t, l1)
	require.Len(t, ticks, 2)
	assert.Equal(t, skipBusy, ticks[0].SkipReason)
	assert.Equal(t, OK, ticks[1].Outcome)
}

// TestBackendMutateAllWithLoops: MutateAll with two loops on one backend
// changes both in one commit, or neither.
func TestBackendMutateAllWithLoops(t *testing.T) {
	c := memback.New()
	r := newBackendRoot(t, c)
	a, b := mustCreate(t, r, "a", Template{}), mustCreate(t, r, "b", Template{})
	_, err := filetxn.MutateAll(ctx0, []filetxn.Member{a, b}, func(m *filetxn.Multi) error {
		a.In(m).Template, b.In(m).Template = "ta", "tb"
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, "ta", mustView(t, a).Template)
	assert.Equal(t, "tb", mustView(t, b).Template)
	boom := errors.New("boom")
	_, err = filetxn.MutateAll(ctx0, []filetxn.Member{a, b}, func(m *filetxn.Multi) error { a.In(m).Template = "no"; return boom })
	require.ErrorIs(t, err, boom)
	assert.Equal(t, "ta", mustView(t, a).Template)
}

// TestBackendBusyTickOnDeletedLoop: on a backend the lock exists whether
// or not the loop does. A scheduled tick of a deleted loop whose lock name
// another session holds fails with filetxn.ErrNotFound and creates no
// line; and a busy line created for the old loop after a Delete (the
// window between skipBusy's View and its Create) is not listed by the loop
// created again with the name. Ablation: skipBusy ignoring View's error on
// a backend creates a line and returns nil; Ticks without the filter on
// the state's Created lists the stray line.
func TestBackendBusyTickOnDeletedLoop(t *testing.T) {
	c := memback.New()
	r := newBackendRoot(t, c)
	l := mustCreate(t, r, "x", Template{})
	require.NoError(t, l.Delete(ctx0))
	h, err := c.Backend().Lock(ctx0, docName(l.lock), false)
	require.NoError(t, err)
	_, err = l.Tick(ctx0, TriggerSchedule, mustNotRun(t))
	require.ErrorIs(t, err, filetxn.ErrNotFound, "scheduled tick of a deleted loop")
	require.NoError(t, h.Release())
	for _, name := range c.Names() {
		assert.False(t, strings.HasPrefix(name, l.ticksPrefix()), "line %s created", name)
	}

	// The window: a busy line created after the Delete, then a new loop.
	now := r.now()
	stray := TickRecord{StartedAt: now, EndedAt: now, Outcome: Skipped, SkipReason: skipBusy, Trigger: TriggerSchedule, GatesTripped: []string{}, PID: 1}
	_, err = parseRecord(appendRecord(nil, &stray))
	require.NoError(t, err, "the stray line parses")
	require.NoError(t, l.createTick(ctx0, &stray))
	l = mustCreate(t, r, "x", Template{})
	assert.Empty(t, mustTicks(t, l), "Ticks of the loop created again")
	_, err = l.Tick(ctx0, TriggerManual, okHarness(Cost{}))
	require.NoError(t, err)
	ticks := mustTicks(t, l)
	require.Len(t, ticks, 1)
	assert.Equal(t, OK, ticks[0].Outcome)
}

// lateLock is a session whose Lock returns the lock it took only once the
// wait's ctx is done: a lock taken at the very end of a WithLockTimeout.
type lateLock struct{ *memback.Backend }

func (b lateLock) Lock(ctx context.Context, name string, wait bool) (filetxn.Held, error) {
	h, err := b.Backend.Lock(ctx, name, wait)
	if err == nil {
		<-ctx.Done()
	}
	return h, err
}

// TestBackendLockTimeout: on a backend (memback fails a request whose ctx
// is done, as etcd does) WithLockTimeout(0) tries the lock once, as on
// files: it ticks uncontended and reports a busy lock as files do, a
// *lock.BusyError matching context.DeadlineExceeded, running nothing; and
// a lock taken just as WithLockTimeout's bound passes still ticks, its
// requests bounded by the caller's ctx. Ablations: the engine's lockRemote
// without its one try under a done ctx (b.Lock given the done ctx) fails
// the uncontended tick with context.DeadlineExceeded (loopstate once made
// a bound of 0 a lock without wait on a backend for it, whose busy error
// said lock.ErrWouldBlock); the tick's first read with the wait's ctx
// (tx.Read) fails the late lock's tick.
func TestBackendLockTimeout(t *testing.T) {
	c := memback.New()
	l := mustCreate(t, newBackendRoot(t, c), "x", Template{})
	rec, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{}), WithLockTimeout(0))
	require.NoError(t, err, "uncontended Tick(WithLockTimeout(0))")
	assert.Equal(t, OK, rec.Outcome)

	h, err := c.Backend().Lock(ctx0, docName(l.lock), false)
	require.NoError(t, err)
	_, err = l.Tick(ctx0, TriggerManual, mustNotRun(t), WithLockTimeout(0))
	var busy *lock.BusyError
	require.ErrorAs(t, err, &busy, "Tick(WithLockTimeout(0)) on a held lock")
	require.ErrorIs(t, err, context.DeadlineExceeded, "Tick(WithLockTimeout(0)) on a held lock")
	require.NotErrorIs(t, err, lock.ErrWouldBlock, "Tick(WithLockTimeout(0)) on a held lock: files say ctx's error, not ErrWouldBlock")
	require.NoError(t, h.Release())

	r := mustRoot(NewRoot("proj", filetxn.WithBackend(lateLock{c.Backend()})))
	r.now = newClock().now
	late := mustOpen(t, r, "x")
	rec, err = late.Tick(ctx0, TriggerManual, okHarness(Cost{}), WithLockTimeout(time.Millisecond))
	require.NoError(t, err, "Tick whose lock is taken as its bound passes")
	assert.Equal(t, OK, rec.Outcome)
	assert.Len(t, mustTicks(t, l), 2)
}

// TestBackendHarnessStopsWhenTheLockEnds: a harness is cancelled once its
// backend lock's hold ends (memback's Steal, as a lapsed lease), so that
// its work stops before another session may count the tick abandoned and
// run its own; the tick is then recorded as lost. Ablation: not watching
// the Held's Done leaves the harness running until the test's bound.
func TestBackendHarnessStopsWhenTheLockEnds(t *testing.T) {
	c := memback.New()
	l := mustCreate(t, newBackendRoot(t, c), "x", Template{})
	cancelled := false
	rec, err := l.Tick(ctx0, TriggerManual, func(ctx context.Context, run *Run) (Result, error) {
		c.Steal(docName(l.lock))
		select {
		case <-ctx.Done():
			cancelled = true
			return Result{}, ctx.Err()
		case <-time.After(testkit.Timeout):
			return Result{Failed: true, Note: "not cancelled"}, nil
		}
	})
	require.NoError(t, err)
	assert.True(t, cancelled, "the harness's ctx was cancelled when its lock ended")
	assert.True(t, strings.HasPrefix(rec.Note, lostNote), "note %q", rec.Note)
}

// TestBackendNits: a Create that fails returns no Loop; a Commit of a Put
// with Prefix but not Remove is refused (ErrInvalidArgument) and publishes
// nothing. Ablation: returning the Loop with Create's error; memback
// taking the Put as a plain put.
func TestBackendNits(t *testing.T) {
	c := memback.New()
	r := newBackendRoot(t, c)
	mustCreate(t, r, "x", Template{})
	l, err := r.Create(ctx0, "x", nil)
	require.ErrorIs(t, err, fs.ErrExist)
	assert.Nil(t, l, "the Loop of a failed Create")

	b := c.Backend()
	h, err := b.Lock(ctx0, "n", true)
	require.NoError(t, err)
	defer h.Release()
	err = b.Commit(ctx0, []filetxn.Held{h}, []filetxn.Put{{Name: "p/", Data: []byte("x"), Prefix: true}}, false)
	require.ErrorIs(t, err, filetxn.ErrInvalidArgument)
	_, ok := c.Doc("p/")
	assert.False(t, ok, "a refused Put published")
}

// hookList is a session that runs after once, after its first List of a
// prefix that ends in "/".
type hookList struct {
	*memback.Backend
	after func()
}

func (b *hookList) List(ctx context.Context, prefix string) ([]filetxn.Entry, error) {
	ents, err := b.Backend.List(ctx, prefix)
	if f := b.after; f != nil && strings.HasSuffix(prefix, "/") {
		b.after = nil
		f()
	}
	return ents, err
}

// TestBackendTicksAcrossARecreate: a Delete and a Create of the loop
// between Ticks' two reads (the lines, then the state) give no line of the
// older loop. Ablation: Ticks without the filter on the state's Created
// returns the old loop's line with the new loop's state.
func TestBackendTicksAcrossARecreate(t *testing.T) {
	c := memback.New()
	other := newBackendRoot(t, c)
	old := mustCreate(t, other, "x", Template{})
	_, err := old.Tick(ctx0, TriggerManual, okHarness(Cost{}))
	require.NoError(t, err)
	hb := &hookList{Backend: c.Backend()}
	r := mustRoot(NewRoot("proj", filetxn.WithBackend(hb)))
	r.now = newClock().now
	l := mustOpen(t, r, "x")
	hb.after = func() {
		require.NoError(t, old.Delete(ctx0))
		mustCreate(t, other, "x", Template{})
	}
	ticks, err := l.Ticks(ctx0)
	require.NoError(t, err)
	assert.Empty(t, ticks, "the lines of the loop deleted between Ticks' reads")
}

// TestBackendLiveRunnerWording: on a backend, a change of a loop whose
// tick this process still runs after its lock's hold ended (memback's
// Steal, as a lapsed lease) is refused with ErrTickInProgress and
// lock.ErrLockLost, in the backend's words: the lock's name and its
// session's lease, no lock file and no pid. The change is a Mutate that
// waits in this process's queue for the lock while the harness runs
// (synctest.Wait: it is blocked there), so that it has the lock between
// the runner's failed record and its record again (recordLost), when the
// tick is still marked and still run here. Ablation: a remoteBusy that
// leaves remote unset gives the files' wording ("in pid", "its lock
// file"), and the test fails.
func TestBackendLiveRunnerWording(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memback.New()
		l := mustCreate(t, newBackendRoot(t, c), "x", Template{})
		lockName := docName(l.LockPath())
		var refused error
		done := make(chan struct{})
		rec, err := l.Tick(ctx0, TriggerManual, func(ctx context.Context, run *Run) (Result, error) {
			c.Steal(lockName)
			go func() { // another goroutine: the lock is not re-entered
				defer close(done)
				_, refused = l.Mutate(ctx0, func(d *Doc) error { d.Template = "no"; return nil })
			}()
			synctest.Wait()
			return Result{}, nil
		})
		require.NoError(t, err, "the runner's tick, its lock taken by nobody")
		assert.Contains(t, rec.Note, lostNote)
		<-done
		require.ErrorIs(t, refused, ErrTickInProgress, "Mutate during the runner's tick")
		require.ErrorIs(t, refused, lock.ErrLockLost)
		msg := refused.Error()
		assert.Contains(t, msg, "tick 1 is still running in this process")
		assert.Contains(t, msg, "it lost its lock "+lockName+" (its session's lease ended)")
		assert.Contains(t, msg, "mutate refused until that tick has ended")
		assert.NotContains(t, msg, "lock file", "the files' wording on a backend")
		assert.NotContains(t, msg, "in pid", "the files' wording on a backend")
		d := mustView(t, l)
		assert.NotEqual(t, "no", d.Template, "the refused Mutate published")
		assert.Equal(t, int64(1), d.TickCount)
	})
}

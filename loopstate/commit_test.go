package loopstate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit/memback"
	"github.com/filetxn/filetxn/lock"
)

// counter is the document of the stores a tick's commit changes in these
// tests.
type counter struct {
	N int `json:"n"`
}

// commitFixture is a loop and two stores, a and b, in directories of their
// own (a and b with their locks beside them), on durable files.
type commitFixture struct {
	dir  string
	l    *Loop
	a, b *filetxn.Store[*counter]
}

// newCommitFixture makes a commitFixture in a fresh directory, its loop
// "k" in root (nil: durable files in the directory's "root", on a test
// clock; a backend's root: the stores on it too).
func newCommitFixture(t testing.TB, root *Root) *commitFixture {
	t.Helper()
	dir := t.TempDir()
	if root == nil {
		root = mustRoot(NewRoot(filepath.Join(dir, "root")))
		root.now = newClock().now
	}
	mustCreate(t, root, "k", Template{})
	if root.b == nil {
		for _, n := range []string{"a", "b"} {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, n), 0o755))
		}
	}
	return openCommitFixture(t, dir, root)
}

// openCommitFixture opens the fixture that newCommitFixture made in dir,
// its loop in root.
func openCommitFixture(t testing.TB, dir string, root *Root) *commitFixture {
	t.Helper()
	var opts []filetxn.Option
	if root.b != nil {
		opts = append(opts, filetxn.WithBackend(root.b))
	}
	store := func(n string) *filetxn.Store[*counter] {
		s, err := filetxn.NewStore[*counter](filepath.Join(dir, n, n+".json"), filetxn.JSON[counter](), opts...)
		require.NoError(t, err)
		return s
	}
	return &commitFixture{dir: dir, l: mustOpen(t, root, "k"), a: store("a"), b: store("b")}
}

// bump is the tick's commit of these tests: both counters up by one.
func (f *commitFixture) bump() TickOption {
	return WithCommit([]filetxn.Member{f.a, f.b}, func(m *filetxn.Multi, rec TickRecord) error {
		filetxn.In(m, f.a).N++
		filetxn.In(m, f.b).N++
		return nil
	})
}

// values returns the counters, as read under their locks.
func (f *commitFixture) values(t testing.TB) [2]int {
	t.Helper()
	var v [2]int
	for i, s := range []*filetxn.Store[*counter]{f.a, f.b} {
		_, err := s.Mutate(context.Background(), func(d *counter) error { v[i] = d.N; return nil })
		require.NoError(t, err)
	}
	return v
}

// leftovers returns the staged files and intent records left in the
// fixture's directories and the loop's.
func (f *commitFixture) leftovers(t testing.TB) []string {
	t.Helper()
	var left []string
	for _, d := range []string{filepath.Join(f.dir, "a"), filepath.Join(f.dir, "b"), f.l.dir} {
		ents, err := os.ReadDir(d)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		require.NoError(t, err)
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".intent") || strings.HasSuffix(e.Name(), ".tmp") {
				left = append(left, filepath.Join(d, e.Name()))
			}
		}
	}
	return left
}

// counted returns the log's counted lines (those other than skipped).
func counted(t testing.TB, l *Loop) []TickRecord {
	t.Helper()
	var c []TickRecord
	for _, r := range mustTicks(t, l) {
		if r.Outcome != Skipped {
			c = append(c, r)
		}
	}
	return c
}

// TestATickWithACommitRecordsItsTickAndItsFilesTogether: a tick whose
// harness succeeds, WithCommit over two stores, changes both stores, counts
// the tick and logs its line once, and leaves no staged file or intent
// record; fn gets the record as logged. The same on a backend, where the
// line is a document of the same Commit.
//
// Ablation seen red: recordCommit without multix.Append (the line is not
// logged: the log has no counted line for the tick).
func TestATickWithACommitRecordsItsTickAndItsFilesTogether(t *testing.T) {
	for _, where := range []string{"files", "backend"} {
		t.Run(where, func(t *testing.T) {
			var root *Root
			if where == "backend" {
				t.Chdir(t.TempDir())
				root = newBackendRoot(t, memback.New())
			}
			f := newCommitFixture(t, root)
			var got TickRecord
			opt := WithCommit([]filetxn.Member{f.a, f.b}, func(m *filetxn.Multi, rec TickRecord) error {
				got = rec
				filetxn.In(m, f.a).N++
				filetxn.In(m, f.b).N += 2
				return nil
			})
			rec, err := f.l.Tick(ctx0, TriggerManual, okHarness(Cost{USD: 0.5, Tokens: 3}), opt)
			require.NoError(t, err)
			require.Equal(t, OK, rec.Outcome)
			require.Equal(t, int64(1), rec.N)
			require.Equal(t, rec, got, "the record fn got, want the one logged")
			require.Equal(t, [2]int{1, 2}, f.values(t))
			d := mustView(t, f.l)
			require.Equal(t, int64(1), d.TickCount)
			require.Nil(t, d.current)
			require.Equal(t, 0.5, d.Spent.USD)
			lines := counted(t, f.l)
			require.Len(t, lines, 1, "the log's counted lines")
			require.Equal(t, rec.N, lines[0].N)
			require.Equal(t, OK, lines[0].Outcome)
			require.Empty(t, f.leftovers(t))

			// A tick that fn leaves the stores alone in still counts.
			rec, err = f.l.Tick(ctx0, TriggerManual, failHarness, WithCommit([]filetxn.Member{f.a, f.b},
				func(m *filetxn.Multi, rec TickRecord) error { return nil }))
			require.NoError(t, err)
			require.Equal(t, Fail, rec.Outcome)
			require.Equal(t, [2]int{1, 2}, f.values(t))
			require.Len(t, counted(t, f.l), 2)
			require.Equal(t, int64(2), mustView(t, f.l).TickCount)
		})
	}
}

// TestATickWhoseCommitFailsIsRecordedAloneFailed: fn's error publishes
// nothing of fn's; the tick is counted failed, alone, its note naming the
// error, and Tick returns that record with an error that wraps fn's. A
// commit that cannot take a member's lock does the same.
//
// Ablation seen red: recordCommit returning the commit's error without
// recording the tick (the tick stays marked: tick_count 0, no line).
func TestATickWhoseCommitFailsIsRecordedAloneFailed(t *testing.T) {
	f := newCommitFixture(t, nil)
	refused := errors.New("DW-99 is not in the ledger")
	rec, err := f.l.Tick(ctx0, TriggerManual, okHarness(Cost{Tokens: 7}), WithCommit([]filetxn.Member{f.a, f.b},
		func(m *filetxn.Multi, rec TickRecord) error {
			filetxn.In(m, f.a).N++
			return refused
		}))
	require.ErrorIs(t, err, refused)
	require.Equal(t, Fail, rec.Outcome)
	require.Contains(t, rec.Note, commitFailedNote)
	require.Contains(t, rec.Note, refused.Error())
	require.Equal(t, [2]int{0, 0}, f.values(t))
	d := mustView(t, f.l)
	require.Equal(t, int64(1), d.TickCount)
	require.Equal(t, int64(1), d.FailuresTotal)
	require.Equal(t, int64(7), d.Spent.Tokens)
	lines := counted(t, f.l)
	require.Len(t, lines, 1)
	require.Equal(t, Fail, lines[0].Outcome)
	require.Empty(t, f.leftovers(t))

	// A member's document that does not decode.
	require.NoError(t, os.WriteFile(filepath.Join(f.dir, "b", "b.json"), []byte("not json"), 0o644))
	rec, err = f.l.Tick(ctx0, TriggerManual, okHarness(Cost{}), f.bump())
	require.Error(t, err)
	require.ErrorContains(t, err, filepath.Join(f.dir, "b", "b.json"))
	require.Equal(t, Fail, rec.Outcome)
	require.Equal(t, int64(2), rec.N)
	require.Len(t, counted(t, f.l), 2)
}

// TestWithCommitRefusesWhatItCannotDo: no fn, the loop itself among the
// members (as a Loop, opened again, or its state file as a plain store), a
// nil member or a member of a backend beside a loop on files is refused
// before the harness runs, and records nothing.
//
// Ablation seen red: checkCommit without multix.Check (the harness runs:
// mustNotRun fails the test).
func TestWithCommitRefusesWhatItCannotDo(t *testing.T) {
	f := newCommitFixture(t, nil)
	remote, err := filetxn.NewStore[*counter]("proj/r.json", filetxn.JSON[counter](), filetxn.WithBackend(memback.New().Backend()))
	require.NoError(t, err)
	for name, opt := range map[string]TickOption{
		"nil fn":        WithCommit([]filetxn.Member{f.a}, nil),
		"the loop":      WithCommit([]filetxn.Member{f.a, f.l}, func(*filetxn.Multi, TickRecord) error { return nil }),
		"the loop anew": WithCommit([]filetxn.Member{mustOpen(t, f.l.root, "k")}, func(*filetxn.Multi, TickRecord) error { return nil }),
		"its state":     WithCommit([]filetxn.Member{f.l.engine("x", false)}, func(*filetxn.Multi, TickRecord) error { return nil }),
		"a nil member":  WithCommit([]filetxn.Member{f.a, nil}, func(*filetxn.Multi, TickRecord) error { return nil }),
		"a backend's":   WithCommit([]filetxn.Member{remote}, func(*filetxn.Multi, TickRecord) error { return nil }),
	} {
		_, err := f.l.Tick(ctx0, TriggerManual, mustNotRun(t), opt)
		require.ErrorIs(t, err, filetxn.ErrInvalidArgument, name)
	}
	require.Empty(t, mustTicks(t, f.l))
	require.Equal(t, int64(0), mustView(t, f.l).TickCount)
}

// TestAFaultInATicksCommitLeavesItAllOrNothing fails each step of a tick's
// commit that a multi-file commit's fault matrix does not already cover,
// and the first of those it does: the log's append and its fsync (after
// the renames: the commit stands, the error names the log and the step),
// the first copy of the record (nothing published: the tick is recorded
// alone, failed). The next transaction, a Mutate of a store or the next
// tick, leaves the stores and the tick together: both counters 1 and the
// tick's ok line logged once, or both 0 and the tick counted failed; and
// nothing behind.
//
// Ablations seen red: settle without applyAppends (after a failed append
// the line is never logged: no ok line for tick 1); apply appending without
// looking (after a failed fsync the line is logged twice).
func TestAFaultInATicksCommitLeavesItAllOrNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		point seam.Point
		n     int // the hit of point that fails, in the tick's commit
		says  string
		stand bool // the commit stands
	}{
		{"the append", seam.Append, 1, "append to the log", true},
		{"the log's fsync", seam.Append, 2, "fsync the log", true},
		{"the record", seam.Intent, 1, "write the intent record", false},
	} {
		for _, next := range []string{"a store", "the next tick"} {
			t.Run(tc.name+"/"+next, func(t *testing.T) {
				f := newCommitFixture(t, nil)
				hits := 0
				remove := seam.Set(t, func(p seam.Point, path string) error {
					if p == tc.point {
						if hits++; hits == tc.n {
							return syscall.EIO
						}
					}
					return nil
				})
				rec, err := f.l.Tick(ctx0, TriggerManual, okHarness(Cost{}), f.bump())
				remove()
				require.ErrorIs(t, err, syscall.EIO)
				require.ErrorContains(t, err, tc.says)
				if tc.point == seam.Append {
					require.ErrorContains(t, err, f.l.log)
				}
				if tc.stand {
					require.Equal(t, OK, rec.Outcome)
				} else {
					require.Equal(t, Fail, rec.Outcome)
				}
				if next == "a store" {
					_, err = f.a.Mutate(ctx0, func(*counter) error { return nil })
				} else {
					_, err = f.l.Tick(ctx0, TriggerManual, okHarness(Cost{}))
				}
				require.NoError(t, err)
				want := [2]int{0, 0}
				if tc.stand {
					want = [2]int{1, 1}
				}
				require.Equal(t, want, f.values(t))
				lines := counted(t, f.l)
				require.NotEmpty(t, lines)
				require.Equal(t, int64(1), lines[0].N)
				require.Equal(t, map[bool]Outcome{true: OK, false: Fail}[tc.stand], lines[0].Outcome, "tick 1's line")
				for _, r := range lines[1:] {
					require.NotEqual(t, int64(1), r.N, "tick 1 logged twice: %+v", lines)
				}
				require.Empty(t, f.leftovers(t))
			})
		}
	}
}

// TestATickWithACommitOnABackendKeepsItsLock: on a backend a tick records
// its commit under the loop's lock, which it keeps (letting it go would
// tell another session that its runner is gone): a member's lock held by
// someone else when the harness ends is tried again until it is free, and
// the commit then made; the loop's lock is held by the tick all the while,
// so that no other session can take it in between.
//
// Ablation seen red: tryRemote giving up at the first busy lock (the
// tick is recorded alone, failed, with an error).
func TestATickWithACommitOnABackendKeepsItsLock(t *testing.T) {
	t.Chdir(t.TempDir())
	c := memback.New()
	f := newCommitFixture(t, newBackendRoot(t, c))
	held := make(chan struct{})
	release := make(chan struct{})
	go func() {
		_ = f.a.Locked(ctx0, func(*filetxn.Tx) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	loopBusy := false
	harness := func(ctx context.Context, run *Run) (Result, error) {
		go func() {
			time.Sleep(100 * time.Millisecond)
			// Another session finds the loop's lock taken while the tick
			// waits for the member's.
			_, err := c.Backend().Lock(context.Background(), docName(f.l.lock), false)
			loopBusy = errors.Is(err, lock.ErrWouldBlock)
			close(release)
		}()
		return Result{}, nil
	}
	rec, err := f.l.Tick(ctx0, TriggerManual, harness, f.bump())
	require.NoError(t, err)
	require.Equal(t, OK, rec.Outcome)
	require.True(t, loopBusy, "the loop's lock was free while the tick waited for its member's")
	require.Equal(t, [2]int{1, 1}, f.values(t))
	require.Len(t, counted(t, f.l), 1)
}

// TestAScheduledTickWhoseCommitFindsAMemberBusyIsNotSkipped: a scheduled
// tick, whose busy loop lock is a skip, runs its harness and then finds a
// member's lock busy (a store WithNoWait): the tick is recorded alone,
// failed, and Tick returns that record with the busy error, not a
// skipped/busy line and nil as if the loop's lock had been busy.
//
// Ablation seen red: Tick deciding the skip on the commit's error (as it
// did): a second line, skipped busy, naming the member's holder as the
// loop's, and a nil error.
func TestAScheduledTickWhoseCommitFindsAMemberBusyIsNotSkipped(t *testing.T) {
	f := newCommitFixture(t, nil)
	nw, err := filetxn.NewStore[*counter](filepath.Join(f.dir, "a", "a.json"), filetxn.JSON[counter](), filetxn.WithNoWait())
	require.NoError(t, err)
	require.NoError(t, f.l.SetSchedule(ctx0, true))
	held, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = f.a.Locked(ctx0, func(*filetxn.Tx) error { close(held); <-release; return nil })
	}()
	<-held
	defer close(release)
	rec, err := f.l.Tick(ctx0, TriggerSchedule, okHarness(Cost{}), WithCommit([]filetxn.Member{nw, f.b},
		func(m *filetxn.Multi, rec TickRecord) error { filetxn.In(m, nw).N++; return nil }))
	require.Error(t, err)
	require.ErrorIs(t, err, lock.ErrWouldBlock)
	require.Equal(t, Fail, rec.Outcome)
	lines := mustTicks(t, f.l)
	require.Len(t, lines, 1, "the log: %+v", lines)
	require.Equal(t, Fail, lines[0].Outcome)
}

// TestARecoveryThatFindsTheLineFsyncsTheLog: a commit whose log fsync
// failed after the line was written leaves the record; the next
// transaction finds the line and must still fsync the log before it
// removes the records, or a power cut would lose the line of a tick that
// the fsynced state counts.
//
// Ablation seen red: apply returning at once when it finds the line (no
// fsync of the log in the recovery).
func TestARecoveryThatFindsTheLineFsyncsTheLog(t *testing.T) {
	f := newCommitFixture(t, nil)
	hits := 0
	remove := seam.Set(t, func(p seam.Point, path string) error {
		if p == seam.Append {
			if hits++; hits == 2 {
				return syscall.EIO
			}
		}
		return nil
	})
	_, err := f.l.Tick(ctx0, TriggerManual, okHarness(Cost{}), f.bump())
	remove()
	require.ErrorIs(t, err, syscall.EIO)
	syncs := 0
	remove = seam.Set(t, func(p seam.Point, path string) error {
		if p == seam.Append && path == f.l.log {
			syncs++
		}
		return nil
	})
	_, err = f.a.Mutate(ctx0, func(*counter) error { return nil })
	remove()
	require.NoError(t, err)
	require.Equal(t, 1, syncs, "the recovery's steps on the log: want its fsync, and no append")
	require.Len(t, counted(t, f.l), 1)
	require.Empty(t, f.leftovers(t))
}

// TestARecoveryLogsNoLineForACommitNeverStaged: a runner that dies after
// writing its records and before creating any staged file left a commit
// that never reached its commit point; if a program that does not know
// the records (bmad-loop, counting the marked tick) then writes the loop's
// state, the next transaction finds no staged file and a target that is
// not old, which is also what a finished commit whose records came back
// looks like. It must not log the tick's line: the stores stay old and
// tick 1 has no ok line.
//
// Ablation seen red: settle logging the lines in that case (as it did): an
// ok line for tick 1 beside stores at 0.
func TestARecoveryLogsNoLineForACommitNeverStaged(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a crash simulated in-process may leave files open, which Windows does not remove")
	}
	f := newCommitFixture(t, nil)
	type crashed struct{}
	armed := false // the harness has run: the next staged file is the commit's
	remove := seam.Set(t, func(p seam.Point, path string) error {
		if p == seam.Create && path == f.l.state && armed {
			panic(crashed{})
		}
		return nil
	})
	func() {
		defer func() { require.Equal(t, crashed{}, recover()) }()
		_, _ = f.l.Tick(ctx0, TriggerManual, func(ctx context.Context, run *Run) (Result, error) {
			armed = true
			return Result{}, nil
		}, f.bump())
	}()
	remove()
	require.Len(t, f.leftovers(t), 3, "the records, and no staged file")
	// The foreign write: the state as it is, with one more byte of space.
	data := readFile(t, f.l.state)
	require.NoError(t, os.WriteFile(f.l.state, append(data, '\n'), 0o644))
	_, err := f.a.Mutate(ctx0, func(*counter) error { return nil })
	require.NoError(t, err)
	require.Equal(t, [2]int{0, 0}, f.values(t))
	for _, r := range counted(t, f.l) {
		require.NotEqual(t, OK, r.Outcome, "a line for a commit never published: %+v", r)
	}
	require.Empty(t, f.leftovers(t))
}

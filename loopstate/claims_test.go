package loopstate

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
	"github.com/stretchr/testify/require"
)

// TestNewRootDoesNoIO: NewRoot of a directory that does not exist creates
// nothing; the first Create makes it.
// Ablation (run): an os.MkdirAll(dir) in NewRoot makes it red.
func TestNewRootDoesNoIO(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	r, err := NewRoot(dir)
	require.NoError(t, err, "NewRoot(%s) = %v", dir, err)
	_, err = os.Lstat(filepath.Dir(dir))
	require.ErrorIs(t, err, fs.ErrNotExist, "NewRoot(%s) made %s: %v, want nothing created", dir, filepath.Dir(dir), err)
	_, err = r.Create(ctx0, "x", nil)
	require.NoError(t, err, "Create(x) in a root that does not exist = %v, want the root made", err)
}

// TestCreateChecksItsContextOnceAndListIgnoresIt: Create with a done ctx
// returns the ctx's error and creates nothing (not even the root), since
// it checks ctx once before any I/O; List, which never waits, lists with
// a done ctx.
// Ablation (run): dropping Create's ctx check creates the loop; an
// early ctx.Err() return in List makes it fail.
func TestCreateChecksItsContextOnceAndListIgnoresIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	r := mustRoot(NewRoot(dir))
	done, cancel := context.WithCancel(ctx0)
	cancel()
	_, err := r.Create(done, "x", nil)
	require.ErrorIs(t, err, context.Canceled, "Create(done ctx) = %v, want context.Canceled", err)
	_, err = os.Lstat(dir)
	require.ErrorIs(t, err, fs.ErrNotExist, "Create(done ctx) made %s: %v, want nothing created", dir, err)

	mustCreate(t, r, "x", Template{})
	ls, err := r.List(done)
	require.NoError(t, err, "List(done ctx) = %v, want the loops", err)
	require.Len(t, ls, 1, "List(done ctx) = %v, want [x]", ls)
}

// TestReadsDoNotWaitForTheLock: View, Ticks, Open and List answer while
// another holder has the loop's lock, with a ctx that never ends; a
// scheduled tick does not wait either (it logs skipped/busy). Each would
// block until the lock is released if it waited for it.
// Ablation (run): View through the loop's lock (l.locked) instead of the
// engine's View times out here, in View and in the scheduled tick's skip,
// which reads through it.
func TestReadsDoNotWaitForTheLock(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{Schedule: Schedule{Enabled: true}})
	h, err := lock.Acquire(ctx0, l.lock)
	require.NoError(t, err)
	defer h.Release()
	for name, op := range map[string]func() error{
		"View":  func() error { _, err := l.View(ctx0); return err },
		"Ticks": func() error { _, err := l.Ticks(ctx0); return err },
		"Open":  func() error { _, err := r.Open(ctx0, "x"); return err },
		"List":  func() error { _, err := r.List(ctx0); return err },
		"Tick(schedule)": func() error {
			rec, err := l.Tick(ctx0, TriggerSchedule, mustNotRun(t))
			if err == nil && rec.SkipReason != skipBusy {
				err = errors.New("skip reason " + rec.SkipReason + ", want busy")
			}
			return err
		},
	} {
		res := make(chan error, 1)
		go func() { res <- op() }()
		err := testkit.Recv(t, res, name+" with the lock held elsewhere")
		require.NoError(t, err, "%s() with the lock held elsewhere = %v, want an answer", name, err)
	}
}

// TestTickRecordMarshalsAsItsLogLine: TickRecord.MarshalJSON gives the
// record as its line in ticks.jsonl, without the newline: the same keys in
// the same order, the same timestamp layout, the note as written (no HTML
// escapes), and it reads back as the same record.
// Ablation (run): MarshalJSON through json.Marshal of the Go struct (keys
// "N", "StartedAt", ...) makes it red.
func TestTickRecordMarshalsAsItsLogLine(t *testing.T) {
	r, c := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{})
	rec, err := l.Tick(ctx0, TriggerManual, func(ctx context.Context, run *Run) (Result, error) {
		c.add(1500 * time.Millisecond)
		return Result{Cost: &Cost{USD: 0.25, Tokens: 7}, Note: "a <b> & c"}, nil
	})
	require.NoError(t, err, "Tick() = %v", err)
	log := readFile(t, l.log)
	line := bytes.TrimSuffix(log, []byte("\n"))
	require.NotContains(t, string(line), "\n", "ticks.jsonl = %q, want one line", log)
	got, err := rec.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, string(line), string(got), "TickRecord.MarshalJSON() = %s, want the log line %s", got, line)
	back, err := parseRecord(got)
	require.NoError(t, err, "parseRecord(MarshalJSON()) = %v", err)
	require.Equal(t, mustTicks(t, l)[0], back, "parseRecord(MarshalJSON()) = %+v, want the record Ticks reads", back)
}

// TestDeleteRemovesADirectoryThatHoldsALockFileButNoState: such a
// directory is not a loop (the other methods give filetxn.ErrNotFound), and
// Delete removes it all the same, as it removes a loop, and returns
// filetxn.ErrNotFound; no tombstone is left.
// Ablation (run): Delete returning l.missing() before it renames the
// directory leaves loops/x in place.
func TestDeleteRemovesADirectoryThatHoldsALockFileButNoState(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{})
	require.NoError(t, os.Remove(l.state))
	err := l.Delete(ctx0)
	require.ErrorIs(t, err, filetxn.ErrNotFound, "Delete() of a directory without a state = %v, want filetxn.ErrNotFound", err)
	ents, err := os.ReadDir(filepath.Join(r.dir, loopsDir))
	require.NoError(t, err)
	require.Empty(t, ents, "after Delete() of a directory without a state, %s holds %v, want nothing", loopsDir, ents)
}

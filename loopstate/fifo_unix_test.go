//go:build unix

package loopstate

import (
	"os"
	"testing"
	"time"

	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestFIFOAtTheStateFileIsRefusedAtOnce: a named pipe in place of
// .state.loop (no writer on its other end) makes show, pause and tick
// return an error wrapping atomicfile.ErrNotRegular that names the path,
// within a bound, instead of blocking forever in open(2); the pipe is left
// alone. A FIFO at ticks.jsonl likewise for Ticks.
// Ablation (run, in a copy of the tree): fsys opening without O_NONBLOCK
// hangs every operation (the bound fails them).
func TestFIFOAtTheStateFileIsRefusedAtOnce(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{})
	require.NoError(t, os.Remove(l.state))
	require.NoError(t, unix.Mkfifo(l.state, 0o644), "mkfifo %s", l.state)
	require.NoError(t, os.Remove(l.log))
	require.NoError(t, unix.Mkfifo(l.log, 0o644), "mkfifo %s", l.log)
	for _, op := range []struct {
		name string
		path string
		run  func() error
	}{
		{"Open", l.state, func() error { _, err := r.Open(ctx0, "x"); return err }},
		{"View", l.state, func() error { _, err := l.View(ctx0); return err }},
		{"Pause", l.state, func() error { return l.Pause(ctx0, "ops", "") }},
		{"Tick", l.state, func() error { _, err := l.Tick(ctx0, TriggerManual, mustNotRun(t)); return err }},
		{"Tick(schedule)", l.state, func() error { _, err := l.Tick(ctx0, TriggerSchedule, mustNotRun(t)); return err }},
		{"Ticks", l.log, func() error { _, err := l.Ticks(ctx0); return err }},
	} {
		done := make(chan error, 1)
		go func() { done <- op.run() }()
		select {
		case err := <-done:
			require.ErrorIs(t, err, atomicfile.ErrNotRegular, "%s() with a FIFO at %s = %v, want ErrNotRegular", op.name, op.path, err)
			require.ErrorContains(t, err, op.path, "%s() = %v, want it to name %s", op.name, err, op.path)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s() with a FIFO at %s still blocks after 30s", op.name, op.path)
		}
		fi, err := os.Lstat(op.path)
		require.NoError(t, err)
		require.Equal(t, os.ModeNamedPipe, fi.Mode().Type(), "%s after %s() is %v, want the FIFO left alone", op.path, op.name, fi.Mode())
	}
}

// TestFIFOAtTheTickLogIsRefusedAtOnce: a named pipe in place of ticks.jsonl
// (no reader on its other end) makes a tick that logs a line (a skip of a
// paused loop, and a scheduled tick's skipped/busy line, written without
// the lock) return an error wrapping atomicfile.ErrNotRegular that names
// the log, within a bound, instead of blocking forever in open(2) with the
// loop's lock held; the pipe and the state are left as they were.
// Ablation (run): fsys.Append opening with os.OpenFile (as it did)
// hangs both ticks (the bound fails them).
func TestFIFOAtTheTickLogIsRefusedAtOnce(t *testing.T) {
	r, _ := newTestRoot(t)
	paused := mustCreate(t, r, "paused", Template{Paused: true})
	busy := mustCreate(t, r, "busy", Template{Schedule: Schedule{Enabled: true}})
	h, err := lock.Acquire(ctx0, busy.lock)
	require.NoError(t, err)
	defer h.Release()
	for _, l := range []*Loop{paused, busy} {
		require.NoError(t, os.Remove(l.log))
		require.NoError(t, unix.Mkfifo(l.log, 0o644), "mkfifo %s", l.log)
	}
	for _, op := range []struct {
		name    string
		l       *Loop
		trigger Trigger
	}{
		{"Tick(manual) of a paused loop", paused, TriggerManual},
		{"Tick(schedule) with the lock busy", busy, TriggerSchedule},
	} {
		state := readFile(t, op.l.state)
		done := make(chan error, 1)
		go func() { _, err := op.l.Tick(ctx0, op.trigger, mustNotRun(t)); done <- err }()
		err := testkit.Recv(t, done, op.name+" with a FIFO at "+op.l.log)
		require.ErrorIs(t, err, atomicfile.ErrNotRegular, "%s with a FIFO at %s = %v, want ErrNotRegular", op.name, op.l.log, err)
		require.ErrorContains(t, err, op.l.log, "%s = %v, want it to name %s", op.name, err, op.l.log)
		fi, err := os.Lstat(op.l.log)
		require.NoError(t, err)
		require.Equal(t, os.ModeNamedPipe, fi.Mode().Type(), "%s after %s is %v, want the FIFO left alone", op.l.log, op.name, fi.Mode())
		require.Equal(t, string(state), string(readFile(t, op.l.state)), "%s changed the state, want it left as it was", op.name)
	}
}

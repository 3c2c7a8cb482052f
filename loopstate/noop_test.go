package loopstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/lock"
	"github.com/stretchr/testify/require"
)

// TestNoOpOperationsTakeNoLock: an operation that changes nothing
// (a check-gate that trips no gate, a schedule set as it already is)
// succeeds while the loop's lock is held by someone else, without waiting,
// and writes nothing; one that changes the state still needs the lock.
// Ablation (run): mutate calling the engine's Mutate instead of
// MutateProbed makes CheckGate and SetSchedule(false) return a
// *lock.BusyError.
func TestNoOpOperationsTakeNoLock(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{Gates: Gates{MaxTicks: i64(5)}})
	before := readFile(t, l.state)

	held, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		h, err := lock.Acquire(ctx0, l.lock, lock.WithPurpose("holder"))
		if err != nil {
			t.Error(err)
			close(held)
			return
		}
		close(held)
		<-release
		h.Release()
	}()
	<-held
	defer func() { close(release); <-done }()

	tried, cancel := context.WithCancel(ctx0)
	cancel() // a busy lock gives up at once
	err := l.CheckGate(tried)
	require.NoError(t, err, "CheckGate(no gate trips, lock held elsewhere) = %v, want nil", err)
	err = l.SetSchedule(tried, false)
	require.NoError(t, err, "SetSchedule(false) of a disabled schedule, lock held elsewhere = %v, want nil", err)
	require.Equal(t, before, readFile(t, l.state), "a no-op wrote the state")

	err = l.SetSchedule(tried, true)
	var busy *lock.BusyError
	require.ErrorAs(t, err, &busy, "SetSchedule(true) of a disabled schedule, lock held elsewhere = %v, want a *lock.BusyError", err)
	err = l.Pause(tried, "ops", "")
	require.ErrorAs(t, err, &busy, "Pause(running), lock held elsewhere = %v, want a *lock.BusyError", err)
	require.Equal(t, before, readFile(t, l.state), "an operation that could not lock wrote the state")
}

// TestNoOpInsideMutateAnswersAndAChangeIsReentrant: from inside a Mutate
// callback on the same loop, a check-gate that trips nothing answers from
// the file as last written, and an operation that would change the state
// returns lock.ErrReentrant at once instead of deadlocking.
func TestNoOpInsideMutateAnswersAndAChangeIsReentrant(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{})
	_, err := l.Mutate(ctx0, func(d *Doc) error {
		d.Template = "inner"
		if err := l.CheckGate(ctx0); err != nil {
			return fmt.Errorf("CheckGate() inside Mutate = %w, want nil", err)
		}
		if err := l.SetSchedule(ctx0, true); !errors.Is(err, lock.ErrReentrant) {
			return fmt.Errorf("SetSchedule(true) inside Mutate = %v, want lock.ErrReentrant", err)
		}
		return nil
	})
	require.NoError(t, err, "Mutate() = %v", err)
	d := mustView(t, l)
	require.Equal(t, "inner", d.Template, "template after Mutate = %q, want inner", d.Template)
	require.False(t, d.Schedule.Enabled, "schedule after a re-entrant SetSchedule = enabled, want disabled")
}

// TestCreateRunsFnOnTheInitialState: Create's fn sets what the loop starts
// with; an error from fn is returned unchanged, and a state that fn leaves
// invalid is refused with filetxn.ErrInvalidArgument; neither creates anything.
func TestCreateRunsFnOnTheInitialState(t *testing.T) {
	r, c := newTestRoot(t)
	l, err := r.Create(ctx0, "ci", func(d *Doc) error {
		require.Equal(t, Running, d.Status, "Create's fn got status %s, want running", d.Status)
		require.Equal(t, c.now(), d.CreatedAt, "Create's fn got created_at %s, want %s", d.CreatedAt, c.now())
		d.Template = "ci-triage"
		d.Gates.BudgetTokens = i64(1000)
		return nil
	})
	require.NoError(t, err, "Create(ci, fn) = %v, want nil", err)
	d := mustView(t, l)
	require.Equal(t, "ci-triage", d.Template, "Create(ci, fn): template = %q, want ci-triage", d.Template)
	require.Equal(t, int64(1000), *d.Gates.BudgetTokens, "Create(ci, fn): budget.tokens = %d, want 1000", *d.Gates.BudgetTokens)

	mine := errors.New("mine")
	for _, tc := range []struct {
		name string
		fn   func(*Doc) error
		want error
	}{
		{"fn fails", func(*Doc) error { return mine }, mine},
		{"a negative gate", func(d *Doc) error { d.Gates.MaxTicks = i64(-1); return nil }, filetxn.ErrInvalidArgument},
		{"paused without a pause", func(d *Doc) error { d.Status = Paused; return nil }, filetxn.ErrInvalidArgument},
		{"another name", func(d *Doc) error { d.Name = "other"; return nil }, filetxn.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.Create(ctx0, "refused", tc.fn)
			require.ErrorIs(t, err, tc.want, "Create(refused, %s) = %v, want %v", tc.name, err, tc.want)
			_, err = os.Stat(filepath.Join(r.dir, loopsDir, "refused"))
			require.ErrorIs(t, err, os.ErrNotExist, "Create(refused, %s) left a directory: %v", tc.name, err)
		})
	}
}

// TestDocJSONIsTheFile: MarshalJSON gives the bytes of the file for a Doc
// that has not changed and the canonical layout for one that has;
// UnmarshalJSON reads strictly and leaves the Doc as it was on a refusal,
// which is a *filetxn.FormatError even for nil data (not the missing file's
// filetxn.ErrNotFound). Ablation (run): UnmarshalJSON passing bytes.Clone(nil),
// which is nil, to Decode makes it red.
func TestDocJSONIsTheFile(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{})
	d := mustView(t, l)
	b, err := d.MarshalJSON()
	require.NoError(t, err, "MarshalJSON() = %v", err)
	require.Equal(t, string(readFile(t, l.state)), string(b), "MarshalJSON() of an unchanged Doc = %s, want the file's bytes", b)

	var back Doc
	require.NoError(t, json.Unmarshal(b, &back), "json.Unmarshal(MarshalJSON()) failed")
	require.Equal(t, d.canonical(), back.canonical(), "json.Unmarshal(MarshalJSON()) = %s, want %s", back.canonical(), d.canonical())
	back.Template = "changed"
	b, err = back.MarshalJSON()
	require.NoError(t, err, "MarshalJSON() of a changed Doc = %v", err)
	require.Contains(t, string(b), `"template": "changed"`, "MarshalJSON() of a changed Doc = %s, want the change", b)

	keep := back.canonical()
	err = json.Unmarshal([]byte(`{"schema": 1, "name": "x", "surprise": 1}`), &back)
	_, _, ok := refusal(err)
	require.True(t, ok, "json.Unmarshal(a partial state) = %v, want a *filetxn.FormatError", err)
	require.Equal(t, keep, back.canonical(), "a refused UnmarshalJSON changed the Doc")
	err = back.UnmarshalJSON(nil)
	_, _, ok = refusal(err)
	require.True(t, ok, "UnmarshalJSON(nil) = %v, want a *filetxn.FormatError", err)
	back.Status = Halted // no halt record
	_, err = back.MarshalJSON()
	key, inv, _ := refusal(err)
	require.Equal(t, []string{"halt", invHalted}, []string{key, inv}, "MarshalJSON() of a Doc that breaks an invariant = %v, want a *filetxn.FormatError at halt", err)
}

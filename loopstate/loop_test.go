package loopstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/lock"
	"github.com/stretchr/testify/require"
)

var ctx0 = context.Background()

func TestNamesAreValidatedBeforeAnyIO(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"ci-triage-main", true},
		{"0abc", true},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false},
		{strings.Repeat("a", 300), false},
		{"", false},
		{"-a", false},
		{"A", false},
		{"a_b", false},
		{"a.b", false},
		{".", false},
		{"..", false},
		{"../x", false},
		{"a/b", false},
		{`a\b`, false},
		{"/abs", false},
		{"a\n", false},
		{"ünï", false},
	} {
		t.Run(fmt.Sprintf("%q", tc.name), func(t *testing.T) {
			if got := validName(tc.name); got != tc.ok {
				t.Fatalf("validName(%q) = %v, want %v", tc.name, got, tc.ok)
			}
			r, _ := newTestRoot(t)
			_, cerr := r.Create(ctx0, tc.name, Template{}.apply)
			_, oerr := r.Open(ctx0, tc.name)
			if tc.ok {
				if cerr != nil {
					t.Fatalf("Create(%q) = %v", tc.name, cerr)
				}
				if oerr != nil {
					t.Fatalf("Open(%q) = %v", tc.name, oerr)
				}
				return
			}
			if !errors.Is(cerr, filetxn.ErrInvalidArgument) || !errors.Is(oerr, filetxn.ErrInvalidArgument) {
				t.Fatalf("Create, Open(%q) = %v, %v, want filetxn.ErrInvalidArgument", tc.name, cerr, oerr)
			}
			if _, err := os.Stat(filepath.Join(r.dir, loopsDir)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("an invalid name created %s: %v", loopsDir, err)
			}
			// The name is refused before anything is looked at: a root that
			// does not exist makes no difference.
			missing := mustRoot(NewRoot(filepath.Join(r.dir, "no-such-root")))
			if _, err := missing.Open(ctx0, tc.name); !errors.Is(err, filetxn.ErrInvalidArgument) {
				t.Fatalf("Open(%q) under a missing root = %v, want filetxn.ErrInvalidArgument", tc.name, err)
			}
		})
	}
}

// TestCreateRefusesTheNamesWindowsReservesForDevices: con, prn, aux, nul, com0-com9 and
// lpt0-lpt9 match the name pattern, but on Windows a path ending in one names the device,
// so the loop's directory cannot be made or read there. Create refuses them on every
// system with filetxn.ErrInvalidArgument, before any I/O; names that only start like them
// are loops like any other.
//
// Ablation (run): dropping the windowsDevice check from initial makes it red: Create("nul")
// succeeds here (and fails on Windows, where the claim's rename targets the device).
func TestCreateRefusesTheNamesWindowsReservesForDevices(t *testing.T) {
	r, _ := newTestRoot(t)
	for _, name := range []string{"con", "prn", "aux", "nul", "com0", "com9", "lpt1"} {
		_, err := r.Create(ctx0, name, nil)
		require.ErrorIs(t, err, filetxn.ErrInvalidArgument, "Create(%q) = %v, want filetxn.ErrInvalidArgument", name, err)
		require.ErrorContains(t, err, strconv.Quote(name), "Create(%q) = %v, want an error naming the name", name, err)
		_, err = os.Stat(filepath.Join(r.dir, loopsDir))
		require.ErrorIs(t, err, fs.ErrNotExist, "Create(%q) made %s: %v, want nothing created", name, loopsDir, err)
	}
	for _, name := range []string{"con1", "nul-x", "com10", "lpt", "aux0", "xcon"} {
		_, err := r.Create(ctx0, name, nil)
		require.NoError(t, err, "Create(%q) = %v, want a loop", name, err)
	}
}

func TestCreateWritesTheInitialStateAndRefusesATakenName(t *testing.T) {
	r, c := newTestRoot(t)
	tpl := Template{Name: "ci-triage", Gates: Gates{MaxTicks: i64(20)}, Schedule: Schedule{Enabled: true, Every: "15m"}}
	l := mustCreate(t, r, "ci", tpl)
	for _, f := range []string{stateFile, lockFile, tickLog} {
		if _, err := os.Stat(filepath.Join(l.dir, f)); err != nil {
			t.Fatalf("after Create: %v", err)
		}
	}
	d := mustView(t, l)
	if d.Status != Running || d.Template != "ci-triage" || *d.Gates.MaxTicks != 20 || !d.Schedule.Enabled ||
		!d.CreatedAt.Equal(c.now()) || !d.Epoch.StartedAt.Equal(c.now()) || d.TickCount != 0 {
		t.Fatalf("initial state = %+v", d)
	}
	before := readFile(t, l.state)
	if _, err := r.Create(ctx0, "ci", Template{Name: "other"}.apply); !errors.Is(err, fs.ErrExist) || exitCode(err) != exitRefused {
		t.Fatalf("second Create(ci) = %v, want fs.ErrExist (exit 1)", err)
	}
	if after := readFile(t, l.state); !bytes.Equal(before, after) {
		t.Fatalf("a refused Create changed the state:\n%s", after)
	}
	p := mustCreate(t, r, "paused-one", Template{Paused: true})
	if d := mustView(t, p); d.Status != Paused || d.Paused == nil || d.Paused.By != "create" {
		t.Fatalf("Create with Paused: status %s, pause %+v", d.Status, d.Paused)
	}
	ents, _ := os.ReadDir(filepath.Join(r.dir, loopsDir))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Fatalf("a staging directory was left behind: %s", e.Name())
		}
	}
	if _, err := r.Open(ctx0, "missing"); !errors.Is(err, filetxn.ErrNotFound) || exitCode(err) != exitNoLoop {
		t.Fatalf("Open(missing) = %v, want filetxn.ErrNotFound (exit 3)", err)
	}
	if _, err := r.Create(ctx0, "bad", Template{Gates: Gates{CheckpointEvery: i64(0)}}.apply); !errors.Is(err, filetxn.ErrInvalidArgument) {
		t.Fatalf("Create with checkpoint_every 0 = %v, want filetxn.ErrInvalidArgument", err)
	}
}

// TestAnExpiresAtTheFormatCannotWriteIsRefused: a gates.expires_at outside the years
// 0000-9999 in UTC (year 10000, year -1, or 9999-12-31T23:00-05:00, which is year 10000
// in UTC) has no RFC 3339 spelling: Create refuses it with filetxn.ErrInvalidArgument
// naming gates.expires_at before any I/O, and Mutate refuses it with a
// *filetxn.FormatError keyed gates.expires_at without writing, so the loop stays readable. The first and last seconds of those years are kept and read back.
//
// Ablation (run): dropping the year check from Gates.validate makes it red: Create
// returns nil, having written a state that View, and every later operation on the loop,
// refuses ("gates.expires_at: want an RFC 3339 UTC timestamp ...").
func TestAnExpiresAtTheFormatCannotWriteIsRefused(t *testing.T) {
	for _, at := range []time.Time{
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 0, 0, 0, time.FixedZone("EST", -5*3600)),
	} {
		r, _ := newTestRoot(t)
		_, err := r.Create(ctx0, "x", Template{Gates: Gates{ExpiresAt: &at}}.apply)
		require.ErrorIs(t, err, filetxn.ErrInvalidArgument, "Create(expires_at %v) = %v, want filetxn.ErrInvalidArgument", at, err)
		require.ErrorContains(t, err, "gates.expires_at", "Create(expires_at %v) = %v, want an error naming gates.expires_at", at, err)
		_, err = os.Stat(filepath.Join(r.dir, loopsDir))
		require.ErrorIs(t, err, fs.ErrNotExist, "Create(expires_at %v) = %v left %s: %v, want nothing created", at, err, loopsDir, err)

		l := mustCreate(t, r, "y", Template{})
		before := readFile(t, l.state)
		_, err = l.Mutate(ctx0, func(d *Doc) error { d.Gates.ExpiresAt = &at; return nil })
		var fe *filetxn.FormatError
		require.True(t, errors.As(err, &fe) && fe.Key == "gates.expires_at", "Mutate(expires_at %v) = %v, want a *filetxn.FormatError keyed gates.expires_at", at, err)
		require.Equal(t, string(before), string(readFile(t, l.state)), "Mutate(expires_at %v) = %v changed the state", at, err)
		mustView(t, l)
	}
	for _, at := range []time.Time{time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)} {
		r, _ := newTestRoot(t)
		l := mustCreate(t, r, "x", Template{Gates: Gates{ExpiresAt: &at}})
		d := mustView(t, l)
		require.True(t, d.Gates.ExpiresAt != nil && d.Gates.ExpiresAt.Equal(at), "View().Gates.ExpiresAt after Create(expires_at %v) = %v, want that time", at, d.Gates.ExpiresAt)
	}
}

func TestListReadsSnapshotsAndReportsRefusedStates(t *testing.T) {
	r, _ := newTestRoot(t)
	got, err := r.List(ctx0)
	require.NoError(t, err, "List(empty root) = %v, %v, want no loops", got, err)
	require.Empty(t, got, "List(empty root) = %v, %v, want no loops", got, err)
	for _, n := range []string{"b", "a", "c"} {
		mustCreate(t, r, n, Template{})
	}
	bad, _ := r.Open(ctx0, "c")
	if err := os.WriteFile(bad.state, []byte(`{"schema": 2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(r.dir, loopsDir, ".x.tmp-123"), 0o755)
	os.Mkdir(filepath.Join(r.dir, loopsDir, "nostate"), 0o755)
	got, err = r.List(ctx0)
	var names []string
	for _, l := range got {
		names = append(names, l.Name())
	}
	require.NoError(t, err, "List() = %v, %v", names, err)
	require.Equal(t, []string{"a", "b", "c"}, names, "List() = %v, want [a b c]", names)
	d, err := got[0].View(ctx0)
	require.NoError(t, err, "List()[0].View() = %v, want the state", err)
	require.Equal(t, Running, d.Status, "List()[0].View().Status = %s, want running", d.Status)
	_, err = got[2].View(ctx0)
	key, _, ok := refusal(err)
	require.True(t, ok, "View() of a schema-2 state = %v, want a *filetxn.FormatError", err)
	require.Equal(t, "schema", key, "View() of a schema-2 state = %v: Key = %q, want schema", err, key)
}

// TestOperatorCommandsGuards: every command in every status, checked on the
// state read under the lock: what it refuses (and with which exit code) and
// what it changes.
func TestOperatorCommandsGuards(t *testing.T) {
	type cmd func(l *Loop) error
	pause := func(l *Loop) error { return l.Pause(ctx0, "ops", "maintenance") }
	resume := func(l *Loop) error { return l.Resume(ctx0) }
	approve := func(l *Loop) error { return l.Approve(ctx0, "alice", "looks fine") }
	check := func(l *Loop) error { return l.CheckGate(ctx0) }
	for _, tc := range []struct {
		name   string
		status Status
		cmd    cmd
		want   error
		exit   int
		after  Status
	}{
		{"pause running", Running, pause, nil, 0, Paused},
		{"pause paused", Paused, pause, ErrStatus, 1, Paused},
		{"pause halted", Halted, pause, ErrStatus, 1, Halted},
		{"resume paused", Paused, resume, nil, 0, Running},
		{"resume running", Running, resume, ErrStatus, 1, Running},
		{"resume halted", Halted, resume, ErrStatus, 1, Halted},
		{"approve halted", Halted, approve, nil, 0, Running},
		{"approve running", Running, approve, ErrStatus, 1, Running},
		{"approve paused", Paused, approve, ErrStatus, 1, Paused},
		{"check-gate running", Running, check, nil, 0, Running},
		{"check-gate paused", Paused, check, ErrStatus, 5, Paused},
		{"check-gate halted", Halted, check, ErrStatus, 4, Halted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, c := newTestRoot(t)
			l := mustCreate(t, r, "x", Template{Gates: Gates{MaxTicks: i64(1)}})
			switch tc.status {
			case Paused:
				if err := l.Pause(ctx0, "setup", ""); err != nil {
					t.Fatal(err)
				}
			case Halted:
				if rec, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{})); err != nil || !tickHalted(rec) {
					t.Fatalf("setup tick = %+v, %v, want a halt at max_ticks 1", rec, err)
				}
			}
			before := mustView(t, l)
			beforeBytes := readFile(t, l.state)
			c.add(time.Minute)
			err := tc.cmd(l)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) || exitCode(err) != tc.exit {
				t.Fatalf("%s = %v (exit %d), want %v (exit %d)", tc.name, err, exitCode(err), tc.want, tc.exit)
			}
			var ge *GuardError
			if errors.As(err, &ge) && (ge.loop != "x" || ge.Status != tc.status || !strings.HasPrefix(ge.Error(), "x: ")) {
				t.Fatalf("GuardError = %+v (%q)", ge, ge.Error())
			}
			after := mustView(t, l)
			if after.Status != tc.after {
				t.Fatalf("status after %s = %s, want %s", tc.name, after.Status, tc.after)
			}
			if err != nil && !bytes.Equal(beforeBytes, readFile(t, l.state)) {
				t.Fatalf("a refused %s wrote the state", tc.name)
			}
			switch tc.name {
			case "approve halted":
				if after.ResumedCount != before.ResumedCount+1 || after.Halted != nil || after.LastApproval == nil ||
					after.LastApproval.By != "alice" || after.Epoch.Tick != after.TickCount || !after.Epoch.StartedAt.Equal(c.now()) {
					t.Fatalf("after approve: %+v", after)
				}
			case "resume paused":
				if after.ResumedCount != before.ResumedCount || after.Paused != nil {
					t.Fatalf("resume changed resumed_count or kept pause: %+v", after)
				}
			case "pause running":
				if after.Paused == nil || after.Paused.By != "ops" || after.Paused.Reason != "maintenance" || !after.UpdatedAt.Equal(c.now()) {
					t.Fatalf("after pause: %+v", after.Paused)
				}
			}
		})
	}
}

// TestApproveOpensANewWindow is T13 in one process: a loop halted by
// max_ticks passes check-gate after approve, and halts again only after
// max_ticks more ticks.
func TestApproveOpensANewWindow(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{Gates: Gates{MaxTicks: i64(3)}})
	for i := range 3 {
		rec, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{USD: 0.5}))
		if err != nil || (i == 2) != tickHalted(rec) {
			t.Fatalf("tick %d = %+v, %v", i+1, rec, err)
		}
	}
	if err := l.CheckGate(ctx0); !errors.Is(err, ErrStatus) {
		t.Fatalf("CheckGate on the halted loop = %v", err)
	}
	if err := l.Approve(ctx0, "bob", ""); err != nil {
		t.Fatal(err)
	}
	if err := l.CheckGate(ctx0); err != nil {
		t.Fatalf("CheckGate after approve = %v, want nil (new window)", err)
	}
	for i := range 3 {
		rec, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{}))
		if err != nil || (i == 2) != tickHalted(rec) {
			t.Fatalf("tick %d after approve = %+v, %v", i+1, rec, err)
		}
	}
	d := mustView(t, l)
	if d.TickCount != 6 || d.Halted == nil || !slices.Equal(d.Halted.Gates, []string{gateMaxTicks}) || d.Halted.Tick != 6 || d.ResumedCount != 1 {
		t.Fatalf("after 3+3 ticks: %+v %+v", d, d.Halted)
	}
}

// TestTickRecordsEveryOutcome drives the tick through ok, fail, skipped
// (schedule disabled, paused, gate) and checks state and log together.
func TestTickRecordsEveryOutcome(t *testing.T) {
	r, c := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{Gates: Gates{MaxConsecutiveFailures: i64(2), BudgetUSD: f64(1)}})
	step := func(trigger Trigger, h Harness) (TickRecord, error) {
		c.add(time.Minute)
		return l.Tick(ctx0, trigger, h)
	}
	if rec, err := step(TriggerManual, okHarness(Cost{USD: 0.25, Tokens: 100, Seconds: 2})); err != nil || rec.Outcome != OK || rec.N != 1 {
		t.Fatalf("ok tick = %+v, %v", rec, err)
	}
	if rec, err := step(TriggerSchedule, okHarness(Cost{})); err != nil || rec.Outcome != Skipped || rec.SkipReason != skipScheduleDisabled || rec.N != 1 {
		t.Fatalf("scheduled tick with the schedule off = %+v, %v", rec, err)
	}
	if err := l.SetSchedule(ctx0, true); err != nil {
		t.Fatal(err)
	}
	if rec, err := step(TriggerSchedule, failHarness); err != nil || rec.Outcome != Fail || rec.N != 2 || rec.Note != "failed on purpose" {
		t.Fatalf("failing tick = %+v, %v", rec, err)
	}
	if err := l.Pause(ctx0, "me", "look"); err != nil {
		t.Fatal(err)
	}
	if rec, err := step(TriggerManual, okHarness(Cost{})); err != nil || rec.SkipReason != skipPaused {
		t.Fatalf("tick while paused = %+v, %v", rec, err)
	}
	if err := l.Resume(ctx0); err != nil {
		t.Fatal(err)
	}
	rec, err := step(TriggerManual, failHarness)
	if err != nil || !tickHalted(rec) || !slices.Equal(rec.GatesTripped, []string{gateMaxConsecutiveFailures}) {
		t.Fatalf("second failure = %+v, %v, want a halt by max_consecutive_failures", rec, err)
	}
	if rec, err := step(TriggerManual, okHarness(Cost{})); err != nil || rec.SkipReason != skipHalted {
		t.Fatalf("tick while halted = %+v, %v", rec, err)
	}
	if err := l.Approve(ctx0, "me", ""); err != nil {
		t.Fatal(err)
	}
	if rec, err := step(TriggerManual, okHarness(Cost{USD: 1})); err != nil || !tickHalted(rec) || !slices.Equal(rec.GatesTripped, []string{gateBudgetUSD}) {
		t.Fatalf("tick spending the window's budget = %+v, %v", rec, err)
	}
	d := mustView(t, l)
	if d.TickCount != 4 || d.FailuresTotal != 2 || d.ConsecutiveFailures != 0 || d.Spent.USD != 1.25 || d.Spent.Tokens != 100 || d.Epoch.Spent.USD != 0.25 {
		t.Fatalf("state after the run = %+v", d)
	}
	// Gates before the tick: raise nothing, approve, and the budget that
	// was overshot is in the old window; lower the budget below what the
	// window already spent and the next tick is skipped with the gate.
	if err := l.Approve(ctx0, "me", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := step(TriggerManual, okHarness(Cost{USD: 0.5})); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Mutate(ctx0, func(d *Doc) error { d.Gates = Gates{BudgetUSD: f64(0.5)}; return nil }); err != nil {
		t.Fatal(err)
	}
	if rec, err := step(TriggerManual, okHarness(Cost{})); err != nil || !tickHalted(rec) || rec.SkipReason != skipGate || rec.Outcome != Skipped {
		t.Fatalf("tick over a lowered budget = %+v, %v, want skipped/gate", rec, err)
	}
	var outcomes []string
	for _, r := range mustTicks(t, l) {
		o := string(r.Outcome)
		if r.SkipReason != "" {
			o += "/" + string(r.SkipReason)
		}
		outcomes = append(outcomes, fmt.Sprintf("%d:%s", r.N, o))
	}
	want := []string{"1:ok", "1:skipped/schedule_disabled", "2:fail", "2:skipped/paused", "3:fail", "3:skipped/halted", "4:ok", "5:ok", "5:skipped/gate"}
	if !slices.Equal(outcomes, want) {
		t.Fatalf("tick log = %v, want %v", outcomes, want)
	}
}

// TestPanickingHarnessIsAbandoned: a harness that panics releases the lock
// (the panic propagates) and leaves current_tick set; the next tick logs
// the tick as abandoned and counts it as a failure before running its own.
// TestTheLogKeepsAtMost500BytesOfANote: a harness's note is logged cut to 500 bytes where a
// character starts, and read back from the log as it was written, whatever it holds: a
// note of bytes that are not UTF-8 is read back as that many U+FFFD (as every string the
// package writes), still within the 500 bytes, not three times as long.
//
// Ablation (run): truncNote cutting the note's bytes before replacing the invalid ones
// (the code before) makes it red: 500 bytes of 0xff came back from Ticks as 1,500 bytes.
func TestTheLogKeepsAtMost500BytesOfANote(t *testing.T) {
	for _, tc := range []struct{ note, want string }{
		{strings.Repeat("\xff", 600), strings.Repeat("\ufffd", 166)},
		{"ok " + strings.Repeat("\xff", 200) + strings.Repeat("é", 200), "ok " + strings.Repeat("\ufffd", 165)},
		{strings.Repeat("é", 300), strings.Repeat("é", 250)},
		{strings.Repeat("a", 499) + "é", strings.Repeat("a", 499)},
		{"\xed\xa0\x80 lone surrogate", "\ufffd\ufffd\ufffd lone surrogate"},
	} {
		r, _ := newTestRoot(t)
		l := mustCreate(t, r, "x", Template{})
		_, err := l.Tick(ctx0, TriggerManual, func(context.Context, *Run) (Result, error) { return Result{Note: tc.note}, nil })
		require.NoError(t, err, "Tick(note %q) = %v, want nil", tc.note, err)
		recs := mustTicks(t, l)
		require.Len(t, recs, 1, "Ticks() after Tick(note %q) = %+v, want one record", tc.note, recs)
		require.Equal(t, tc.want, recs[0].Note, "Ticks()[0].Note after Tick(note of %d bytes %.20q...) = %d bytes %.20q..., want %d bytes", len(tc.note), tc.note, len(recs[0].Note), recs[0].Note, len(tc.want))
	}
}

func TestPanickingHarnessIsAbandoned(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{})
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the harness's panic did not propagate")
			}
		}()
		l.Tick(ctx0, TriggerManual, func(ctx context.Context, run *Run) (Result, error) { panic("harness bug") })
	}()
	d := mustView(t, l)
	if d.current == nil || d.current.N != 1 || d.current.PID != os.Getpid() {
		t.Fatalf("current_tick after the panic = %+v", d.current)
	}
	if err := l.Pause(ctx0, "a", "b"); err != nil {
		t.Fatalf("Pause after the panic (lock released?) = %v", err)
	}
	if err := l.Resume(ctx0); err != nil {
		t.Fatal(err)
	}
	rec, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{}))
	if err != nil || rec.N != 2 || rec.Outcome != OK {
		t.Fatalf("tick after the panic = %+v, %v", rec, err)
	}
	recs := mustTicks(t, l)
	if len(recs) != 2 || recs[0].Outcome != Abandoned || recs[0].N != 1 || recs[0].PID != os.Getpid() {
		t.Fatalf("tick log = %+v, want abandoned 1 then ok 2", recs)
	}
	if d := mustView(t, l); d.TickCount != 2 || d.FailuresTotal != 1 || d.ConsecutiveFailures != 0 || d.current != nil {
		t.Fatalf("state = %+v", d)
	}
}

// TestRefusedStateIsNeverRewritten: a state file that breaks an invariant,
// has an unknown schema major, or is not JSON is refused by every
// operation with a *filetxn.FormatError naming the key and the invariant,
// inside an *fs.PathError naming the state file, and its
// bytes are never touched, not even by a tick.
func TestRefusedStateIsNeverRewritten(t *testing.T) {
	canon := func(edit func(*Doc)) string {
		d, _ := New("x", epoch0, Template{})
		edit(d)
		return string(d.appendCanonical(nil))
	}
	for _, tc := range []struct {
		name  string
		state string
		key   string
		inv   string
	}{
		{"paused without pause", canon(func(d *Doc) { d.Status = Paused }), "pause", invPaused},
		{"pause while running", canon(func(d *Doc) { d.Paused = &Event{At: epoch0} }), "pause", invPaused},
		{"halted without halt", canon(func(d *Doc) { d.Status = Halted }), "halt", invHalted},
		{"epoch ahead", canon(func(d *Doc) { d.Epoch.Tick = 1 }), "epoch.tick", invEpochTick},
		{"stale current tick", canon(func(d *Doc) { d.current = &currentTick{N: 5, StartedAt: epoch0, PID: 1} }), "current_tick", invCurrentTick},
		{"other name", canon(func(d *Doc) { d.Name = "y" }), "name", invName},
		{"schema 2", `{"schema": 2, "whatever": true}`, "schema", ""},
		{"not json", `{"schema": 1,`, "", ""},
		{"misspelt gate", strings.Replace(canon(func(*Doc) {}), `"max_ticks"`, `"max_tick"`, 1), "gates.max_tick", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newTestRoot(t)
			l := mustCreate(t, r, "x", Template{})
			if err := os.WriteFile(l.state, []byte(tc.state), 0o644); err != nil {
				t.Fatal(err)
			}
			ops := map[string]func() error{
				"Pause":     func() error { return l.Pause(ctx0, "", "") },
				"Approve":   func() error { return l.Approve(ctx0, "", "") },
				"CheckGate": func() error { return l.CheckGate(ctx0) },
				"Tick":      func() error { _, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{})); return err },
				"View":      func() error { _, err := l.View(ctx0); return err },
			}
			for name, op := range ops {
				err := op()
				key, inv, ok := refusal(err)
				var pe *fs.PathError
				if !ok || key != tc.key || inv != tc.inv || !errors.As(err, &pe) || pe.Path != l.state {
					t.Fatalf("%s on %s = %v, want a *filetxn.FormatError at %q, invariant %q, in an *fs.PathError for %s", name, tc.name, err, tc.key, tc.inv, l.state)
				}
				if !strings.Contains(err.Error(), l.state) {
					t.Fatalf("%s error %q does not name the path", name, err)
				}
			}
			if got := string(readFile(t, l.state)); got != tc.state {
				t.Fatalf("refused state was rewritten:\n%s", got)
			}
			if recs := mustTicks(t, l); len(recs) != 0 {
				t.Fatalf("a tick on a refused state logged %+v", recs)
			}
		})
	}
}

// TestMutateKeepsInvariantsAndUpdatedAt: Mutate writes nothing when fn
// changes nothing, sets updated_at when it changes something, refuses to
// write a Doc that breaks an invariant, and keeps unknown keys.
func TestMutateKeepsInvariantsAndUpdatedAt(t *testing.T) {
	r, c := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{})
	withExtra := strings.Replace(string(readFile(t, l.state)), "\n}\n", `, "x_future": {"a": [1, 2]}}`+"\n", 1)
	os.WriteFile(l.state, []byte(withExtra), 0o644)
	c.add(time.Hour)
	if cm, err := l.Mutate(ctx0, func(d *Doc) error { return nil }); err != nil || cm.Written {
		t.Fatalf("no-op Mutate = %+v, %v, want nothing written", cm, err)
	}
	if got := string(readFile(t, l.state)); got != withExtra {
		t.Fatalf("a no-op Mutate rewrote the file")
	}
	if cm, err := l.Mutate(ctx0, func(d *Doc) error { d.Template = "t2"; return nil }); err != nil || !cm.Written {
		t.Fatalf("Mutate = %+v, %v", cm, err)
	}
	d := mustView(t, l)
	if !d.UpdatedAt.Equal(c.now()) || d.Template != "t2" {
		t.Fatalf("after Mutate: updated_at %s, template %q", d.UpdatedAt, d.Template)
	}
	if !strings.HasSuffix(string(readFile(t, l.state)), "\"last_approval\": null,\n  \"x_future\": {\"a\":[1,2]}\n}\n") {
		t.Fatalf("unknown key lost or misplaced:\n%s", readFile(t, l.state))
	}
	before := readFile(t, l.state)
	_, err := l.Mutate(ctx0, func(d *Doc) error { d.Status = Halted; return nil })
	if key, _, _ := refusal(err); key != "halt" || !bytes.Equal(before, readFile(t, l.state)) {
		t.Fatalf("Mutate breaking an invariant = %v, want a *filetxn.FormatError at halt and nothing written", err)
	}
	sentinel := errors.New("mine")
	if _, err := l.Mutate(ctx0, func(d *Doc) error { d.Template = "t3"; return sentinel }); err != sentinel {
		t.Fatalf("Mutate(fn error) = %v, want fn's error unchanged", err)
	}
	if _, err := l.Mutate(ctx0, func(d *Doc) error { return l.Pause(ctx0, "", "") }); !errors.Is(err, lock.ErrReentrant) {
		t.Fatalf("Pause inside Mutate = %v, want lock.ErrReentrant", err)
	}
}

// TestDeleteMakesWaitersFail: a Pause waiting for the lock while the loop
// is deleted and a new loop of the same name is created gets filetxn.ErrNotFound
// once it has the lock: the loop it asked for is gone, and the new one is
// left alone. Afterwards the name is free and operations give filetxn.ErrNotFound.
// Ablation (run): mutate's step without its directory check (sameDir) makes
// the waiter pause the new loop: nil instead of filetxn.ErrNotFound. On Windows (run
// under Wine), statDir without its os.SameFile, which reads the directory's
// id by path only at the comparison, takes the new loop for the old: the
// waiter gets nil.
// TestTicksOfADeletedLoopIsNotFound: the tick log of a loop that is gone is
// an error matching filetxn.ErrNotFound, not an empty log; a loop that has
// not ticked yet has an empty one. (Ablation: without the state check, Ticks
// answers nil, nil for the deleted loop.)
func TestTicksOfADeletedLoopIsNotFound(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "gone", Template{})
	recs, err := l.Ticks(ctx0)
	require.NoError(t, err, "Ticks() of a new loop = %v, %v, want an empty log", recs, err)
	require.Empty(t, recs, "Ticks() of a new loop = %v, want an empty log", recs)
	require.NoError(t, l.Delete(ctx0))
	recs, err = l.Ticks(ctx0)
	require.ErrorIs(t, err, filetxn.ErrNotFound, "Ticks() of a deleted loop = %v, %v, want filetxn.ErrNotFound", recs, err)
	require.Nil(t, recs, "Ticks() of a deleted loop = %v, want nil", recs)
}

func TestDeleteMakesWaitersFail(t *testing.T) {
	waiting := make(chan struct{})
	var once sync.Once
	r, _ := newTestRoot(t, filetxn.WithLockOptions(lock.WithWaitReport(time.Millisecond, func(*lock.BusyError) {
		once.Do(func() { close(waiting) })
	})))
	l := mustCreate(t, r, "x", Template{})
	res := make(chan error, 1)
	_, err := l.Mutate(ctx0, func(d *Doc) error {
		go func() { res <- l.Pause(ctx0, "late", "") }()
		<-waiting
		if _, err := l.tombstone(); err != nil {
			return err
		}
		_, err := r.Create(ctx0, "x", Template{Name: "second"}.apply)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-res; !errors.Is(err, filetxn.ErrNotFound) || exitCode(err) != exitNoLoop {
		t.Fatalf("Pause that waited across a delete = %v, want filetxn.ErrNotFound (exit 3)", err)
	}
	l2 := mustOpen(t, r, "x")
	if d := mustView(t, l2); d.Template != "second" || d.Status != Running {
		t.Fatalf("the new loop was changed by the stale waiter: %s", d.canonical())
	}
	if err := l2.Delete(ctx0); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	ents, _ := os.ReadDir(filepath.Join(r.dir, loopsDir))
	if len(ents) != 0 {
		t.Fatalf("after Delete the loops directory holds %v, want nothing (Delete removes the tombstone the test left too)", ents)
	}
	if _, err := r.Open(ctx0, "x"); !errors.Is(err, filetxn.ErrNotFound) {
		t.Fatalf("Open after Delete = %v", err)
	}
	if err := l2.Delete(ctx0); !errors.Is(err, filetxn.ErrNotFound) {
		t.Fatalf("second Delete = %v, want filetxn.ErrNotFound", err)
	}
	mustCreate(t, r, "x", Template{})
}

// TestLateCallersDoNotRecreateADeletedLoop: every method of a Loop opened
// before its loop was deleted returns filetxn.ErrNotFound (exit 3) and leaves the
// loops directory empty: no lock file, no loop directory comes back, and
// the name can be created again.
// Ablation (run): without lock.WithoutCreate in Loop.engine the first
// late call re-creates loops/x/ with a lock file in it.
func TestLateCallersDoNotRecreateADeletedLoop(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{Schedule: Schedule{Enabled: true}})
	if err := mustOpen(t, r, "x").Delete(ctx0); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"Pause", func() error { return l.Pause(ctx0, "late", "") }},
		{"Resume", func() error { return l.Resume(ctx0) }},
		{"Approve", func() error { return l.Approve(ctx0, "late", "") }},
		{"CheckGate", func() error { return l.CheckGate(ctx0) }},
		{"EnableSchedule", func() error { return l.SetSchedule(ctx0, true) }},
		{"Mutate", func() error { _, err := l.Mutate(ctx0, func(*Doc) error { return nil }); return err }},
		{"Tick manual", func() error { _, err := l.Tick(ctx0, TriggerManual, okHarness(Cost{})); return err }},
		{"Tick schedule", func() error { _, err := l.Tick(ctx0, TriggerSchedule, okHarness(Cost{})); return err }},
		{"Delete", func() error { return l.Delete(ctx0) }},
	}
	loops := filepath.Join(r.dir, loopsDir)
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			if err := c.call(); !errors.Is(err, filetxn.ErrNotFound) || exitCode(err) != exitNoLoop {
				t.Errorf("%s on a deleted loop = %v, want filetxn.ErrNotFound (exit 3)", c.name, err)
			}
			if ents, _ := os.ReadDir(loops); len(ents) != 0 {
				t.Fatalf("after %s on a deleted loop the loops directory holds %v, want nothing", c.name, ents)
			}
		})
	}
	mustCreate(t, r, "x", Template{})
}

// TestLockTimeoutZeroTriesOnce: with a context that is already done, an
// operator command still takes a free lock, and on a busy one returns at
// once a *lock.BusyError (exit 75) that names the holder and matches the
// context's error.
func TestLockTimeoutZeroTriesOnce(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{})
	done, cancel := context.WithCancel(ctx0)
	cancel()
	if err := l.Pause(done, "ops", ""); err != nil {
		t.Fatalf("Pause(done ctx) on a free lock = %v, want nil", err)
	}
	res := make(chan error, 1)
	if _, err := l.Mutate(ctx0, func(*Doc) error {
		go func() { res <- l.Resume(done) }()
		err := <-res
		var be *lock.BusyError
		if !errors.As(err, &be) || !errors.Is(err, context.Canceled) || exitCode(err) != exitBusy ||
			be.Holder == nil || be.Holder.PID != os.Getpid() || be.Holder.Purpose != "mutate x" || be.Path != l.lock {
			t.Errorf("Resume(done ctx) on a held lock = %v, want a *lock.BusyError naming this process's mutate", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestWriteRefusesAnEventFieldItsKeyDoesNotHold: an Event field that its
// key in the file does not hold (a pause's tick or gates, a halt's by, an
// approval's gates) is refused with a *filetxn.FormatError naming it, and
// nothing is written, so that nothing set is lost in silence.
// Ablation (run): without the check in Doc.validate every case is written
// (the field dropped) and the test fails.
func TestWriteRefusesAnEventFieldItsKeyDoesNotHold(t *testing.T) {
	for _, tc := range []struct {
		key string
		set func(d *Doc)
	}{
		{"pause.tick", func(d *Doc) { d.Status, d.Paused = Paused, &Event{At: epoch0, Tick: 3} }},
		{"pause.gates", func(d *Doc) { d.Status, d.Paused = Paused, &Event{At: epoch0, Gates: []string{gateMaxTicks}} }},
		{"halt.by", func(d *Doc) {
			d.Status, d.Halted = Halted, &Event{At: epoch0, By: "ops", Gates: []string{gateMaxTicks}, Reason: "r"}
		}},
		{"last_approval.gates", func(d *Doc) { d.LastApproval = &Event{At: epoch0, Gates: []string{gateMaxTicks}} }},
	} {
		t.Run(tc.key, func(t *testing.T) {
			r, _ := newTestRoot(t)
			l := mustCreate(t, r, "x", Template{})
			before := readFile(t, l.state)
			_, err := l.Mutate(ctx0, func(d *Doc) error { tc.set(d); return nil })
			require.True(t, keyIs(err, tc.key), "Mutate(set %s) = %v, want a *filetxn.FormatError at %s", tc.key, err, tc.key)
			require.Equal(t, string(before), string(readFile(t, l.state)), "Mutate(set %s) wrote the state", tc.key)
		})
	}
}

// TestLongTextIsRefusedBeforeAnyIO: Pause's by and reason and Approve's by
// and note are at most 4096 bytes; a longer one is refused with
// filetxn.ErrInvalidArgument, before the lock is taken, and nothing is
// written. Ablation (run): Loop.Pause and Loop.Approve without their
// checkText make it red.
func TestLongTextIsRefusedBeforeAnyIO(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{Gates: Gates{MaxTicks: i64(0)}})
	require.ErrorAs(t, l.CheckGate(ctx0), new(*GuardError), "CheckGate(max_ticks 0) did not halt the loop")
	long, most := strings.Repeat("x", maxString+1), strings.Repeat("x", maxString)
	before := readFile(t, l.state)

	// The lock is held elsewhere: an operation that got as far as the
	// state would wait for it, or refuse on the loop's status.
	h, err := lock.Acquire(ctx0, l.lock)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		op   func() error
	}{
		{"Pause by", func() error { return l.Pause(ctx0, long, "") }},
		{"Pause reason", func() error { return l.Pause(ctx0, "", long) }},
		{"Approve by", func() error { return l.Approve(ctx0, long, "") }},
		{"Approve note", func() error { return l.Approve(ctx0, "", long) }},
	} {
		err := tc.op()
		require.ErrorIs(t, err, filetxn.ErrInvalidArgument, "%s of %d bytes = %v, want filetxn.ErrInvalidArgument", tc.name, len(long), err)
	}
	h.Release()
	require.Equal(t, before, readFile(t, l.state), "a refused argument wrote the state")

	require.NoError(t, l.Approve(ctx0, most, most), "Approve(by, note of %d bytes)", len(most))
	d := mustView(t, l)
	require.Equal(t, most, d.LastApproval.Reason, "last_approval.note after Approve of %d bytes", len(most))
}

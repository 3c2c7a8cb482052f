package loopstate

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/filetxn/filetxn"
)

// docIn returns a fresh state in status st: running as created, paused by
// "ops", or halted by its max_ticks gate of 0.
func docIn(t *testing.T, st Status) *Doc {
	t.Helper()
	d, err := New("x", epoch0, Template{Gates: Gates{MaxTicks: i64(0)}})
	if err != nil {
		t.Fatal(err)
	}
	switch st {
	case Paused:
		if err := d.Pause(epoch0, "ops", "why"); err != nil {
			t.Fatal(err)
		}
	case Halted:
		if _, err := d.checkGates(epoch0); err != nil || d.Status != Halted {
			t.Fatalf("checkGates of a max_ticks 0 loop = %v, status %s, want it halted", err, d.Status)
		}
	}
	return d
}

// TestExportedTransitionsGuardAndChangeInMemory: Doc.Pause, Resume and
// Approve allow exactly the status Loop's methods allow, change what they
// say (stamped at now, in whole seconds) and, refused, leave the state
// byte for byte as it was, with a *GuardError that names the loop and its
// status.
// Ablation: Pause's guard removed makes the "pause of paused" and "pause of
// halted" rows change the state; Approve without its reset of
// consecutive_failures fails the "approve of halted" row.
func TestExportedTransitionsGuardAndChangeInMemory(t *testing.T) {
	now := epoch0.Add(90*time.Minute + 500*time.Millisecond)
	at := stamp(now)
	ops := []struct {
		name  string
		allow Status
		do    func(*Doc) error
		check func(*testing.T, *Doc)
	}{
		{"pause", Running, func(d *Doc) error { return d.Pause(now, "ops", "deploy freeze") }, func(t *testing.T, d *Doc) {
			if p := d.Paused; d.Status != Paused || p == nil || !p.At.Equal(at) || p.By != "ops" || p.Reason != "deploy freeze" {
				t.Fatalf("after Pause: status %s, pause %+v, want paused by ops at %s", d.Status, d.Paused, at)
			}
		}},
		{"resume", Paused, func(d *Doc) error { return d.Resume(now) }, func(t *testing.T, d *Doc) {
			if d.Status != Running || d.Paused != nil || d.ResumedCount != 0 {
				t.Fatalf("after Resume: status %s, pause %+v, resumed_count %d, want running, none, 0", d.Status, d.Paused, d.ResumedCount)
			}
		}},
		{"approve", Halted, func(d *Doc) error { return d.Approve(now, "lead", "looked at it") }, func(t *testing.T, d *Doc) {
			a := d.LastApproval
			if d.Status != Running || d.Halted != nil || d.ResumedCount != 1 || d.ConsecutiveFailures != 0 ||
				a == nil || !a.At.Equal(at) || a.By != "lead" || a.Reason != "looked at it" || a.Tick != d.TickCount || !d.Epoch.StartedAt.Equal(at) {
				t.Fatalf("after Approve: %+v, want running, resumed_count 1, last_approval by lead at %s, a window opened then", d, at)
			}
		}},
	}
	for _, op := range ops {
		for _, st := range []Status{Running, Paused, Halted} {
			t.Run(op.name+" of "+string(st), func(t *testing.T) {
				d := docIn(t, st)
				d.ConsecutiveFailures = 2
				before := d.canonical()
				err := op.do(d)
				if st != op.allow {
					var ge *GuardError
					if !errors.As(err, &ge) || ge.Status != st || !errors.Is(err, ErrStatus) || !strings.HasPrefix(err.Error(), "x: not ") {
						t.Fatalf("%s of a %s loop = %v, want a *GuardError with status %s", op.name, st, err, st)
					}
					if after := d.canonical(); after != before {
						t.Fatalf("a refused %s changed the state:\n%s\nwant\n%s", op.name, after, before)
					}
					return
				}
				if err != nil {
					t.Fatalf("%s of a %s loop = %v, want nil", op.name, st, err)
				}
				if !d.UpdatedAt.Equal(at) {
					t.Fatalf("after %s: updated_at %s, want %s", op.name, d.UpdatedAt, at)
				}
				op.check(t, d)
				if err := d.validate(); err != nil {
					t.Fatalf("after %s: the state breaks the format: %v", op.name, err)
				}
			})
		}
	}
}

// TestExportedTransitionsRefuseLongTextFirst: by, reason and note over
// 4096 bytes are refused with an error matching filetxn.ErrInvalidArgument
// that names the argument, whatever the status (as Loop's methods refuse
// them before any I/O), and the state is left as it was; 4096 bytes pass.
// Ablation: Doc.Pause calling pause without checkText accepts the long by
// and writes it into the state.
func TestExportedTransitionsRefuseLongTextFirst(t *testing.T) {
	long, edge := strings.Repeat("x", maxString+1), strings.Repeat("x", maxString)
	tests := []struct {
		name, what string
		st         Status
		do         func(*Doc) error
	}{
		{"pause by", "by", Running, func(d *Doc) error { return d.Pause(epoch0, long, "") }},
		{"pause reason", "reason", Paused, func(d *Doc) error { return d.Pause(epoch0, "ops", long) }},
		{"approve by", "by", Halted, func(d *Doc) error { return d.Approve(epoch0, long, "") }},
		{"approve note", "note", Running, func(d *Doc) error { return d.Approve(epoch0, "ops", long) }},
	}
	for _, tt := range tests {
		d := docIn(t, tt.st)
		before := d.canonical()
		err := tt.do(d)
		if !errors.Is(err, filetxn.ErrInvalidArgument) || !strings.Contains(err.Error(), " "+tt.what+" is 4097 bytes") {
			t.Fatalf("%s of 4097 bytes = %v, want an invalid argument naming %s", tt.name, err, tt.what)
		}
		if d.canonical() != before {
			t.Fatalf("%s of 4097 bytes changed the state", tt.name)
		}
	}
	if err := docIn(t, Running).Pause(epoch0, edge, edge); err != nil {
		t.Fatalf("Pause with 4096-byte by and reason = %v, want nil", err)
	}
	if err := docIn(t, Halted).Approve(epoch0, edge, edge); err != nil {
		t.Fatalf("Approve with 4096-byte by and note = %v, want nil", err)
	}
}

// TestApproveAtTheLargestResumedCount: an approval that would take
// resumed_count past the largest value the format holds is refused with a
// *filetxn.FormatError naming it, and the state is left as it was.
func TestApproveAtTheLargestResumedCount(t *testing.T) {
	d := docIn(t, Halted)
	d.ResumedCount = math.MaxInt64
	before := d.canonical()
	if err := d.Approve(epoch0, "ops", ""); !keyIs(err, "resumed_count") {
		t.Fatalf("Approve at resumed_count %d = %v, want a *filetxn.FormatError keyed resumed_count", d.ResumedCount, err)
	}
	if d.canonical() != before {
		t.Fatal("a refused Approve changed the state")
	}
}

// TestExportedTransitionsInAMutateAll: a loop paused by Doc.Pause in the
// fn of a filetxn.MutateAll is published with the other member's change,
// stamped by the root's clock; a transition refused there fails the
// MutateAll with its *GuardError, and neither file changes.
func TestExportedTransitionsInAMutateAll(t *testing.T) {
	r, clock := newTestRoot(t)
	l := mustCreate(t, r, "ci", Template{})
	counts := filepath.Join(t.TempDir(), "n.json")
	other, err := filetxn.NewStore(counts, filetxn.JSON[struct{ Pauses int }](), filetxn.WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	clock.add(time.Hour)
	ctx := context.Background()
	_, err = filetxn.MutateAll(ctx, []filetxn.Member{l, other}, func(m *filetxn.Multi) error {
		filetxn.In(m, other).Pauses++
		return l.In(m).Pause(clock.now(), "ops", "freeze")
	})
	if err != nil {
		t.Fatalf("MutateAll(pause, count) = %v", err)
	}
	d := mustView(t, l)
	if d.Status != Paused || d.Paused.By != "ops" || !d.UpdatedAt.Equal(epoch0.Add(time.Hour)) {
		t.Fatalf("after MutateAll: status %s, pause %+v, updated_at %s; want paused by ops at %s", d.Status, d.Paused, d.UpdatedAt, epoch0.Add(time.Hour))
	}
	state, count := readFile(t, l.state), readFile(t, counts)
	_, err = filetxn.MutateAll(ctx, []filetxn.Member{l, other}, func(m *filetxn.Multi) error {
		filetxn.In(m, other).Pauses++
		return l.In(m).Pause(clock.now(), "ops", "again")
	})
	var ge *GuardError
	if !errors.As(err, &ge) || ge.Status != Paused {
		t.Fatalf("MutateAll(pause of a paused loop) = %v, want a *GuardError with status paused", err)
	}
	if string(readFile(t, l.state)) != string(state) || string(readFile(t, counts)) != string(count) {
		t.Fatal("a MutateAll refused by a transition changed a file")
	}
}

package runner

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/filetxn/filetxn/loopstate"
)

// state decodes r's stdout as one loop state document, with
// loopstate.Doc's UnmarshalJSON, which refuses anything that is not the
// format.
func state(t *testing.T, r result) *loopstate.Doc {
	t.Helper()
	var d loopstate.Doc
	decode(t, r, &d)
	return &d
}

// tick decodes r's stdout as one tick record.
func tick(t *testing.T, r result) tickJSON {
	t.Helper()
	var rec tickJSON
	decode(t, r, &rec)
	return rec
}

// TestLoopCommands runs every loop command, in order, on one root: a loop
// that halts at its tick gate, is approved, paused, resumed, listed and
// deleted.
func TestLoopCommands(t *testing.T) {
	e := newEnv(t)
	root := e.path("loops")
	ok := []string{"--", bin, "help"}   // a harness that exits 0
	fail := []string{"--", bin, "nope"} // a harness that exits 2
	loop := func(args ...string) []string {
		return append([]string{"loop", args[0], "-root", root}, args[1:]...)
	}

	t.Run("create", func(t *testing.T) {
		e := e.with(t)
		d := state(t, e.want(0, append([]string{"-json"}, loop("create", "-template", "ci-triage", "-max-ticks", "2", "-budget-usd", "5", "-expires-at", "2099-01-01T00:00:00Z", "-tick-timeout", "90s", "ci")...)...))
		if d.Name != "ci" || d.Status != loopstate.Running || d.Template != "ci-triage" || *d.Gates.MaxTicks != 2 || *d.Gates.BudgetUSD != 5 || *d.Gates.TickTimeout != 90 || d.Gates.ExpiresAt.Year() != 2099 {
			t.Fatalf("loop create -json = %+v", d)
		}
		oneErrorLine(t, e.want(1, loop("create", "ci")...), "loop create")
		oneErrorLine(t, e.want(2, loop("create", "Not_A_Name")...), "loop create")
		oneErrorLine(t, e.want(2, loop("create", "-budget-usd", "-1", "neg")...), "loop create")
	})
	t.Run("tick", func(t *testing.T) {
		e := e.with(t)
		rec := tick(t, e.want(0, append([]string{"-json"}, append(loop("tick", "ci"), ok...)...)...))
		if rec.N != 1 || rec.Outcome != "ok" || rec.Trigger != "manual" || rec.StatusAfter != "running" || *rec.ExitCode != 0 {
			t.Fatalf("loop tick -json = %+v, want tick 1 ok", rec)
		}
	})
	t.Run("a tick that trips a gate exits 4", func(t *testing.T) {
		e := e.with(t)
		r := e.want(4, append([]string{"-json"}, append(loop("tick", "ci"), fail...)...)...)
		rec := tick(t, r) // the record, not an error document
		if rec.N != 2 || rec.Outcome != "fail" || rec.StatusAfter != "halted" || strings.Join(rec.GatesTripped, ",") != "max_ticks" {
			t.Fatalf("loop tick -json = %+v, want tick 2 failed and halted by max_ticks", rec)
		}
		// The harness's own stderr comes first; the command's error is the
		// last line.
		if !strings.HasSuffix(r.stderr, "\nloop tick: ci: halted (max_ticks: 2 ticks in window >= 2)\n") {
			t.Fatalf("stderr does not end with the halt\n%s", r)
		}
	})
	t.Run("halted", func(t *testing.T) {
		e := e.with(t)
		oneErrorLine(t, e.want(4, loop("check-gate", "ci")...), "loop check-gate")
		r := e.want(1, loop("resume", "ci")...)
		if oneErrorLine(t, r, "loop resume"); !strings.Contains(r.stderr, "not paused") {
			t.Fatalf("loop resume of a halted loop: %s", r)
		}
		// A scheduler can tell a skip for a halted loop from an ok tick.
		r = e.want(4, append(loop("tick", "ci"), ok...)...)
		if oneErrorLine(t, r, "loop tick"); !strings.Contains(r.stdout, "skipped (halted)") {
			t.Fatalf("loop tick of a halted loop = %q, want skipped (halted)", r.stdout)
		}
	})
	t.Run("approve", func(t *testing.T) {
		e := e.with(t)
		d := state(t, e.want(0, append([]string{"-json"}, loop("approve", "ci", "-by", "pat", "-note", "looked at it")...)...))
		if d.Status != loopstate.Running || d.ResumedCount != 1 || d.LastApproval.By != "pat" || d.Epoch.Tick != 2 {
			t.Fatalf("loop approve -json = %+v", d)
		}
		r := e.want(1, loop("approve", "ci")...)
		if oneErrorLine(t, r, "loop approve"); !strings.Contains(r.stderr, "not halted") {
			t.Fatalf("second approve: %s", r)
		}
		e.want(0, loop("check-gate", "ci")...)
	})
	t.Run("pause and resume", func(t *testing.T) {
		e := e.with(t)
		d := state(t, e.want(0, "-json", "loop", "pause", "ci", "-root", root, "-reason", "lunch"))
		if d.Status != loopstate.Paused || d.Paused.Reason != "lunch" {
			t.Fatalf("loop pause -json = %+v", d)
		}
		r := e.want(1, loop("pause", "ci")...)
		if oneErrorLine(t, r, "loop pause"); !strings.Contains(r.stderr, "not running") {
			t.Fatalf("second pause: %s", r)
		}
		oneErrorLine(t, e.want(5, loop("check-gate", "ci")...), "loop check-gate")
		if rec := tick(t, e.want(0, append([]string{"-json"}, append(loop("tick", "ci"), ok...)...)...)); rec.Outcome != "skipped" || *rec.SkipReason != "paused" {
			t.Fatalf("loop tick of a paused loop = %+v, want skipped (paused)", rec)
		}
		e.want(0, loop("resume", "ci")...)
	})
	t.Run("schedule", func(t *testing.T) {
		e := e.with(t)
		rec := tick(t, e.want(0, append([]string{"-json"}, append(loop("tick", "-trigger", "schedule", "ci"), ok...)...)...))
		if rec.Outcome != "skipped" || *rec.SkipReason != "schedule_disabled" {
			t.Fatalf("scheduled tick with the schedule off = %+v, want skipped (schedule_disabled)", rec)
		}
		if d := state(t, e.want(0, append([]string{"-json"}, loop("enable-schedule", "ci")...)...)); !d.Schedule.Enabled {
			t.Fatalf("loop enable-schedule -json = %+v", d)
		}
		if rec := tick(t, e.want(0, append([]string{"-json"}, append(loop("tick", "-trigger", "schedule", "ci"), ok...)...)...)); rec.Outcome != "ok" || rec.Trigger != "schedule" {
			t.Fatalf("scheduled tick with the schedule on = %+v, want ok", rec)
		}
		if d := state(t, e.want(0, append([]string{"-json"}, loop("disable-schedule", "ci")...)...)); d.Schedule.Enabled {
			t.Fatalf("loop disable-schedule -json = %+v", d)
		}
	})
	t.Run("show and list", func(t *testing.T) {
		e := e.with(t)
		d := state(t, e.want(0, append([]string{"-json"}, loop("show", "ci")...)...))
		if d.TickCount != 3 || d.ResumedCount != 1 || d.Status != loopstate.Running {
			t.Fatalf("loop show -json = %+v, want 3 ticks, 1 approval, running", d)
		}
		if r := e.want(0, loop("show", "ci")...); !strings.Contains(r.stdout, "status     running") {
			t.Fatalf("loop show = %q", r.stdout)
		}
		e.want(0, loop("create", "-paused", "docs-sync")...)
		var raws []json.RawMessage
		decode(t, e.want(0, append([]string{"-json"}, loop("list")...)...), &raws)
		var names []string
		for _, raw := range raws {
			var d loopstate.Doc
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatalf("loop list -json: %v", err)
			}
			names = append(names, d.Name+":"+string(d.Status))
		}
		if strings.Join(names, " ") != "ci:running docs-sync:paused" {
			t.Fatalf("loop list -json = %v", names)
		}
		if r := e.want(0, loop("list")...); len(strings.Split(strings.TrimSpace(r.stdout), "\n")) != 3 {
			t.Fatalf("loop list = %q, want a header and two rows", r.stdout)
		}
	})
	t.Run("delete", func(t *testing.T) {
		e := e.with(t)
		e.want(0, loop("delete", "docs-sync")...)
		oneErrorLine(t, e.want(3, loop("show", "docs-sync")...), "loop show")
		oneErrorLine(t, e.want(3, loop("pause", "docs-sync")...), "loop pause")
	})
	t.Run("usage", func(t *testing.T) {
		e := e.with(t)
		oneErrorLine(t, e.want(2, loop("tick", "ci")...), "loop tick") // no harness
		oneErrorLine(t, e.want(2, append(loop("tick", "-trigger", "cron", "ci"), ok...)...), "loop tick")
		oneErrorLine(t, e.want(2, "loop", "show", "ci"), "loop show") // no -root
	})
}

// TestTickHarnessRunsLoopCommandsOnItsOwnLoop runs, as a tick's harness,
// looprunner loop check-gate on the very loop being ticked. The harness is
// handed the runner's lock, so it finishes at once instead of waiting for
// its own parent (it would exit 75 after -lock-timeout otherwise). Windows
// has no hand-over (lock.Handle.HandOver is not supported there), so there
// such a harness waits for its parent and fails.
func TestTickHarnessRunsLoopCommandsOnItsOwnLoop(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("lock.Handle.HandOver is not supported on Windows: a harness cannot take its runner's loop lock")
	}
	e := newEnv(t)
	root := e.path("loops")
	e.want(0, "loop", "create", "-root", root, "ci")
	// The harness finds the root in $LOOPSTATE_ROOT, set by the runner.
	rec := tick(t, e.want(0, "-json", "loop", "tick", "-root", root, "ci", "--", bin, "-lock-timeout", "5s", "loop", "check-gate", "ci"))
	if rec.Outcome != "ok" || *rec.ExitCode != 0 {
		t.Fatalf("tick whose harness runs check-gate = %+v, want ok", rec)
	}
}

// TestShowNamesTheTickInProgress: loop show, run as a tick's harness (it
// reads without the lock), names the tick in progress, its number and its
// runner's pid, from the state's current_tick, and the default tick
// timeout among the gates; once the tick is over, show names none.
// Ablation (run): currentTick returning nil fails it.
func TestShowNamesTheTickInProgress(t *testing.T) {
	e := newEnv(t)
	root := e.path("loops")
	e.want(0, "loop", "create", "-root", root, "ci")
	r := e.want(0, "loop", "tick", "-root", root, "ci", "--", bin, "loop", "show", "ci")
	running := regexp.MustCompile(`(?m)^tick running +1, pid [1-9][0-9]*, since 20`)
	if !running.MatchString(r.stdout) || !strings.Contains(r.stdout, "tick timeout 30m0s") {
		t.Fatalf("loop show during tick 1: want its tick running line and the default tick timeout\n%s", r)
	}
	if r = e.want(0, "loop", "show", "-root", root, "ci"); strings.Contains(r.stdout, "tick running") {
		t.Fatalf("loop show after the tick: want no tick running line\n%s", r)
	}
}

// TestTickTimeout gives a tick's harness less time than it needs: it is
// killed, the tick is recorded as failed, with the reason in its note, and
// the command exits 124, as timeout(1) does.
func TestTickTimeout(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	e := newEnv(t)
	root := e.path("loops")
	e.want(0, "loop", "create", "-root", root, "ci")
	rec := tick(t, e.want(124, "-json", "loop", "tick", "-root", root, "-timeout", "200ms", "ci", "--", sleep, "60"))
	if rec.Outcome != "fail" || !strings.Contains(rec.Note, "timed out after 200ms") {
		t.Fatalf("tick with -timeout = %+v, want failed, timed out", rec)
	}
}

// TestLoopStateItDoesNotUnderstand: a state file that is not the format is
// refused with exit 65 and never rewritten.
func TestLoopStateItDoesNotUnderstand(t *testing.T) {
	e := newEnv(t)
	root := e.path("loops")
	e.want(0, "loop", "create", "-root", root, "ci")
	e.want(0, "loop", "create", "-root", root, "ok")
	sf := filepath.Join(root, loopsDir, "ci", ".state.loop")
	const bad = `{"schema": 1, "name": "ci"}` + "\n"
	if err := os.WriteFile(sf, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"show", "pause", "check-gate"} {
		r := e.want(65, "loop", cmd, "-root", root, "ci")
		if oneErrorLine(t, r, "loop "+cmd); !strings.Contains(r.stderr, sf) {
			t.Fatalf("loop %s: the message does not name %s\n%s", cmd, sf, r)
		}
	}
	var raws []json.RawMessage
	r := e.want(65, "-json", "loop", "list", "-root", root)
	decode(t, r, &raws)
	if len(raws) != 1 || !strings.Contains(r.stderr, sf) {
		t.Fatalf("loop list with a refused state: want the good loop listed and the bad one named\n%s", r)
	}
	if got := e.read(sf[len(e.dir)+1:]); got != bad {
		t.Fatalf("the refused state was rewritten: %q", got)
	}
}

// tickJSON decodes a tick's record as loop tick -json prints it: the
// tick log's line.
type tickJSON struct {
	N            int64     `json:"n"`
	StartedAt    time.Time `json:"started_at"`
	EndedAt      time.Time `json:"ended_at"`
	Outcome      string    `json:"outcome"`
	SkipReason   *string   `json:"skip_reason"`
	StatusBefore string    `json:"status_before"`
	StatusAfter  string    `json:"status_after"`
	ExitCode     *int      `json:"exit_code"`
	Cost         costJSON  `json:"cost"`
	GatesTripped []string  `json:"gates_tripped"`
	Trigger      string    `json:"trigger"`
	PID          int       `json:"pid"`
	Note         string    `json:"note"`
}

// costJSON is a cost with the format's keys.
type costJSON struct {
	USD     float64 `json:"usd"`
	Tokens  int64   `json:"tokens"`
	Seconds float64 `json:"seconds"`
}

// TestAnImpossibleLoopNameIsAUsageErrorBeforeAnyFile: a loop name that can
// never name a loop (a path, "..", 300 characters; for create a name
// Windows reserves as well) is exit 2 for every command that takes one,
// even with a -root that does not exist, which would be exit 3, and create
// makes nothing.
// Ablation (run): openNamed checking the root before the name (the order
// before this fix) makes every command but create exit 3.
func TestAnImpossibleLoopNameIsAUsageErrorBeforeAnyFile(t *testing.T) {
	e := newEnv(t)
	root := e.path("no-such-root")
	commands := [][]string{
		{"create"}, {"pause"}, {"resume"}, {"approve"}, {"check-gate"}, {"show"}, {"delete"},
		{"enable-schedule"}, {"disable-schedule"}, {"tick", "--", "/bin/sh", "-c", "exit 0"},
	}
	for _, name := range []string{"../x", "a/b", "..", strings.Repeat("a", 300), "Upper"} {
		for _, cmd := range commands {
			args := append([]string{"loop", cmd[0], "-root", root, name}, cmd[1:]...)
			r := e.want(2, args...)
			oneErrorLine(t, r, "loop "+cmd[0])
			if !strings.Contains(r.stderr, "invalid loop name") {
				t.Errorf("looprunner %s: stderr = %q, want it to say the loop name is invalid", strings.Join(args, " "), r.stderr)
			}
		}
	}
	for _, name := range []string{"con", "nul", "lpt1"} {
		oneErrorLine(t, e.want(2, "loop", "create", "-root", root, name), "loop create")
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Fatalf("after the refused commands, %s: %v, want it not to exist", root, err)
	}
	// A valid name with that root is the root's not-found.
	oneErrorLine(t, e.want(3, "loop", "pause", "-root", root, "ci"), "loop pause")
}

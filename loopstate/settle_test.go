package loopstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseCostLine(t *testing.T) {
	wall := 1500 * time.Millisecond
	for _, tc := range []struct {
		line string
		ok   bool
		want Cost
		note string
	}{
		{`{"cost": {"usd": 0.09, "tokens": 21000, "seconds": 63.0}}`, true, Cost{0.09, 21000, 63}, ""},
		{`{"cost": {"usd": 0.5}, "note": "done"}`, true, Cost{0.5, 0, 1.5}, "done"},
		{`  {"cost": {}}  `, true, Cost{0, 0, 1.5}, ""},
		{`{"cost": {"usd": -1}}`, false, Cost{}, ""},
		{`{"cost": {"tokens": 1.5}}`, false, Cost{}, ""},
		{`{"note": "no cost"}`, false, Cost{}, ""},
		{`{"cost": null}`, false, Cost{}, ""},
		{`done`, false, Cost{}, ""},
		{``, false, Cost{}, ""},
	} {
		got, note, ok := parseCostLine([]byte(tc.line), wall)
		if ok != tc.ok || got != tc.want || note != tc.note {
			t.Errorf("parseCostLine(%q) = %+v, %q, %v, want %+v, %q, %v", tc.line, got, note, ok, tc.want, tc.note, tc.ok)
		}
	}
}

func TestLastLineKeepsOnlyTheLastLine(t *testing.T) {
	for _, tc := range []struct {
		writes []string
		want   string
	}{
		{[]string{"a\nb\n"}, "b"},
		{[]string{"a\nb"}, "b"},
		{[]string{"a\n", "b", "c\n\n  \n"}, "bc"},
		{[]string{"x\n", strings.Repeat("y", maxLine+1), "\n"}, ""},
		{[]string{"x\n", strings.Repeat("y", maxLine+1)}, ""},
		{[]string{strings.Repeat("y", maxLine+1), "\nlast\n"}, "last"},
		{nil, ""},
	} {
		var w lastLine
		for _, s := range tc.writes {
			if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		if got := string(w.line()); got != tc.want && !(tc.want == "" && got == "-") {
			t.Errorf("after %d writes line() = %.20q, want %q", len(tc.writes), got, tc.want)
		}
	}
}

// TestSettleDecidesOutcomeAndCost: how a harness's return becomes the
// tick's outcome, note and cost.
func TestSettleDecidesOutcomeAndCost(t *testing.T) {
	c := Cost{USD: 1, Tokens: 2, Seconds: 3}
	for _, tc := range []struct {
		name      string
		res       Result
		herr      error
		timedOut  bool
		cancelled error
		outcome   Outcome
		note      string
		cost      Cost
	}{
		{"ok", Result{Cost: &c, Note: "n"}, nil, false, nil, OK, "n", c},
		{"failed", Result{Failed: true}, nil, false, nil, Fail, "", Cost{Seconds: 0.25}},
		{"error", Result{}, errors.New("no such file"), false, nil, Fail, "no such file", Cost{Seconds: 0.25}},
		{"timeout", Result{Failed: true, Note: "killed"}, nil, true, nil, Timeout, "timed out after 1m0s: killed", Cost{Seconds: 0.25}},
		{"cancelled", Result{}, nil, false, context.Canceled, Fail, "runner cancelled: context canceled", Cost{Seconds: 0.25}},
		{"bad cost", Result{Cost: &Cost{USD: -1}}, nil, false, nil, OK, "invalid cost {USD:-1 Tokens:0 Seconds:0} ignored", Cost{Seconds: 0.25}},
	} {
		o, note, cost := settle(tc.res, tc.herr, tc.timedOut, tc.cancelled, time.Minute, 250*time.Millisecond)
		if o != tc.outcome || note != tc.note || cost != tc.cost {
			t.Errorf("settle(%s) = %s, %q, %+v, want %s, %q, %+v", tc.name, o, note, cost, tc.outcome, tc.note, tc.cost)
		}
	}
}

// TestCommandReportsExitAndCost runs the test binary as a harness that
// fails: the tick is failed with the exit code and no cost line; and one
// that cannot start: the tick is failed with the start error as its note.
func TestCommandReportsExitAndCost(t *testing.T) {
	r, _ := newTestRoot(t)
	l := mustCreate(t, r, "x", Template{})
	rec, err := l.Tick(ctx0, TriggerManual, testHarness(t, "fail", t.TempDir()).Run)
	if err != nil || rec.Outcome != Fail || rec.ExitCode == nil || *rec.ExitCode != 3 || rec.Note != "exit status 3" || rec.Cost.USD != 0 || rec.Cost.Seconds <= 0 {
		t.Fatalf("tick with a failing harness = %+v (exit %v), %v", rec, deref(rec.ExitCode), err)
	}
	missing := &Command{Path: "/nonexistent/harness"}
	rec, err = l.Tick(ctx0, TriggerManual, missing.Run)
	if err != nil || rec.Outcome != Fail || rec.ExitCode != nil || !strings.Contains(rec.Note, "/nonexistent/harness") {
		t.Fatalf("tick with a missing harness = %+v, %v", rec, err)
	}
	if d := mustView(t, l); d.TickCount != 2 || d.ConsecutiveFailures != 2 || d.CurrentTick != nil {
		t.Fatalf("state = %s", d)
	}
	if _, err := (&Command{}).Run(ctx0, &Run{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Command{}.Run = %v, want ErrInvalid", err)
	}
}

func deref(p *int) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

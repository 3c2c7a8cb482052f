package loopstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

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
	rec, err := l.Tick(ctx0, TriggerManual, testHarness(t, "fail", t.TempDir()))
	if err != nil || rec.Outcome != Fail || rec.ExitCode == nil || *rec.ExitCode != 3 || rec.Note != "exit status 3" || rec.Cost.USD != 0 || rec.Cost.Seconds <= 0 {
		t.Fatalf("tick with a failing harness = %+v (exit %v), %v", rec, deref(rec.ExitCode), err)
	}
	rec, err = l.Tick(ctx0, TriggerManual, NewCommandHarness("/nonexistent/harness", nil, 0))
	if err != nil || rec.Outcome != Fail || rec.ExitCode != nil || !strings.Contains(rec.Note, "/nonexistent/harness") {
		t.Fatalf("tick with a missing harness = %+v, %v", rec, err)
	}
	if d := mustView(t, l); d.TickCount != 2 || d.ConsecutiveFailures != 2 || d.current != nil {
		t.Fatalf("state = %s", d.canonical())
	}
}

func deref(p *int) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

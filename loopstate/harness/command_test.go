package harness

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/loopstate"
	"github.com/stretchr/testify/require"
)

// TestParseCostLineReadsTheCostOrSaysWhatIsWrong: a good cost line gives
// its cost (a missing seconds is the wall time), a line that does not name
// "cost" gives none, and one that names it but is not a cost line gives an
// error saying why.
func TestParseCostLineReadsTheCostOrSaysWhatIsWrong(t *testing.T) {
	wall := 1500 * time.Millisecond
	for _, tc := range []struct {
		line    string
		want    *loopstate.Cost
		note    string
		problem string // a substring of the error; "" for none
	}{
		{`{"cost": {"usd": 0.09, "tokens": 21000, "seconds": 63.0}}`, &loopstate.Cost{USD: 0.09, Tokens: 21000, Seconds: 63}, "", ""},
		{`{"cost": {"usd": 0.5}, "note": "done"}`, &loopstate.Cost{USD: 0.5, Seconds: 1.5}, "done", ""},
		{`  {"cost": {}}  `, &loopstate.Cost{Seconds: 1.5}, "", ""},
		{`{"note": "no cost"}`, nil, "", ""},
		{`done`, nil, "", ""},
		{``, nil, "", ""},
		{`{"cost": {"usd": -1}}`, nil, "", "cost.usd -1 is negative"},
		{`{"cost": {"tokens": -5}}`, nil, "", "cost.tokens -5 is negative"},
		{`{"cost": {"tokens": 1.5}}`, nil, "", "cost.tokens is number 1.5, want a whole number"},
		{`{"cost": {"usd": "5"}}`, nil, "", "cost.usd is string, want a number"},
		{`{"cost": {"usd": 1e400}}`, nil, "", "cost.usd is number 1e400"},
		{`{"cost": null}`, nil, "", `"cost" is not an object`},
		{`{"cost": 3}`, nil, "", "cost is number, want an object"},
		{`{"cost": {"usd": 1}`, nil, "", "not JSON"},
		{`["cost"]`, nil, "", "not a JSON object"},
	} {
		got, note, err := parseCostLine([]byte(tc.line), wall)
		switch {
		case tc.problem == "" && err != nil, tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
			t.Errorf("parseCostLine(%q) = %v, want an error containing %q", tc.line, err, tc.problem)
		case (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want || note != tc.note:
			t.Errorf("parseCostLine(%q) = %+v, %q, want %+v, %q", tc.line, got, note, tc.want, tc.note)
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

// TestCommandWithoutAPathIsRefused: a Command needs a program.
func TestCommandWithoutAPathIsRefused(t *testing.T) {
	_, err := (&Command{}).Run(context.Background(), &loopstate.Run{})
	require.ErrorIs(t, err, filetxn.ErrInvalidArgument, "Command{}.Run = %v, want filetxn.ErrInvalidArgument", err)
}

package runner

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// addJSON is the shape of ledger add -json.
type addJSON struct {
	File      string `json:"file"`
	ID        string `json:"id"`
	Duplicate bool   `json:"duplicate"`
}

// closeJSON is the shape of ledger close -json and ledger reopen -json.
type closeJSON struct {
	File        string   `json:"file"`
	Closed      []string `json:"closed"`
	Reopened    []string `json:"reopened"`
	AlreadyDone []string `json:"already_done"`
	AlreadyOpen []string `json:"already_open"`
	NotEligible []string `json:"not_eligible"`
	Unknown     []string `json:"unknown"`
	Malformed   []string `json:"malformed"`
}

// TestLedgerCommands runs every ledger command, in order, on one ledger,
// with text and JSON output.
func TestLedgerCommands(t *testing.T) {
	e := newEnv(t)
	const f = "artifacts/deferred-work.md"
	add := func(title, origin string) []string {
		return []string{"ledger", "add", "-file", f, "-title", title, "-origin", origin, "-source-spec", "spec-1.md", "-reason", "out of scope"}
	}

	t.Run("add mints ids", func(t *testing.T) {
		e := e.with(t)
		if r := e.want(0, add("Harden unicode", "review of 1-1")...); r.stdout != "DW-1\n" {
			t.Fatalf("ledger add = %q, want DW-1\n%s", r.stdout, r)
		}
		var got addJSON
		decode(t, e.want(0, append([]string{"-json"}, add("Retry SMTP", "review of 1-2")...)...), &got)
		if got != (addJSON{File: f, ID: "DW-2"}) {
			t.Fatalf("ledger add -json = %+v, want id DW-2", got)
		}
	})
	t.Run("add of an open duplicate appends nothing", func(t *testing.T) {
		e := e.with(t)
		r := e.want(0, add("Harden unicode again", "review of 1-1")...)
		if !strings.Contains(r.stdout, "duplicate") {
			t.Fatalf("ledger add (duplicate) = %q, want it to say duplicate", r.stdout)
		}
		var got addJSON
		decode(t, e.want(0, append(add("x", "review of 1-1"), "-json")...), &got)
		if !got.Duplicate || got.ID != "" {
			t.Fatalf("ledger add -json (duplicate) = %+v, want duplicate and no id", got)
		}
	})
	t.Run("close", func(t *testing.T) {
		e := e.with(t)
		var got closeJSON
		decode(t, e.want(0, "-json", "ledger", "close", "-file", f, "-date", "2026-06-11", "-note", "fixed in 1-3", "-op", "run-7", "DW-1"), &got)
		if strings.Join(got.Closed, " ") != "DW-1" {
			t.Fatalf("ledger close -json = %+v, want closed [DW-1]", got)
		}
		for _, args := range [][]string{
			{"ledger", "close", "DW-1", "-file", f, "-date", "2026-06-11", "-note", "fixed in 1-3"}, // flags after the ids
			{"ledger", "close", "-file", f, "-date", "2026-06-11", "-note", "fixed in 1-3", "--", "DW-1"},
		} {
			if r := e.want(0, args...); r.stdout != "already done: DW-1\n" {
				t.Fatalf("ledger close (replay) = %q, want already done", r.stdout)
			}
		}
	})
	t.Run("close of an unknown id closes the others and exits 3", func(t *testing.T) {
		e := e.with(t)
		r := e.want(3, "ledger", "close", "-file", f, "-date", "2026-06-12", "-note", "n", "DW-2", "DW-9")
		oneErrorLine(t, r, "ledger close")
		if r.stdout != "closed: DW-2\n" || !strings.Contains(r.stderr, "DW-9") {
			t.Fatalf("want DW-2 closed and DW-9 named\n%s", r)
		}
		// With -json the failure is one document in the shape of every
		// command's failure, error and exit_code, with the report beside
		// them.
		var got struct {
			Error    string `json:"error"`
			ExitCode int    `json:"exit_code"`
			closeJSON
		}
		r = e.want(3, "-json", "ledger", "close", "-file", f, "-date", "2026-06-12", "-note", "n", "DW-2", "DW-9")
		decode(t, r, &got)
		if got.ExitCode != 3 || !strings.Contains(got.Error, "DW-9") || strings.Join(got.AlreadyDone, " ") != "DW-2" || strings.Join(got.Unknown, " ") != "DW-9" || got.File != f {
			t.Fatalf("ledger close -json DW-2 DW-9 = %+v, want exit_code 3, an error naming DW-9, DW-2 already done and DW-9 unknown", got)
		}
	})
	t.Run("reopen", func(t *testing.T) {
		e := e.with(t)
		r := e.want(1, "ledger", "reopen", "-file", f, "-note", "n", "-op", "run-7", "DW-2")
		oneErrorLine(t, r, "ledger reopen") // DW-2 was closed without -op
		var got closeJSON
		decode(t, e.want(0, "-json", "ledger", "reopen", "-file", f, "-note", "fixed in 1-3", "-op", "run-7", "DW-1"), &got)
		if strings.Join(got.Reopened, " ") != "DW-1" {
			t.Fatalf("ledger reopen -json = %+v, want reopened [DW-1]", got)
		}
	})
	t.Run("decide", func(t *testing.T) {
		e := e.with(t)
		var got struct {
			File   string `json:"file"`
			ID     string `json:"id"`
			Closed bool   `json:"closed"`
		}
		decode(t, e.want(0, "-json", "ledger", "decide", "-file", f, "-date", "2026-06-12", "-label", "fix now", "-detail", "cheap", "-close-note", "fixed", "DW-1"), &got)
		if got.ID != "DW-1" || !got.Closed {
			t.Fatalf("ledger decide -json = %+v, want DW-1 closed", got)
		}
		if !strings.Contains(e.read(f), "decision: 2026-06-12 fix now — cheap") {
			t.Fatalf("the ledger lacks the decision line:\n%s", e.read(f))
		}
		e.want(3, "ledger", "decide", "-file", f, "-date", "2026-06-12", "-label", "x", "DW-42")
	})
	t.Run("list", func(t *testing.T) {
		e := e.with(t)
		var got []entryJSON
		decode(t, e.want(0, "-json", "ledger", "list", "-file", f), &got)
		if len(got) != 2 || got[0].ID != "DW-1" || got[0].Title != "Harden unicode" || got[0].Status != "done 2026-06-12" || got[1].ID != "DW-2" || got[1].State != "done" {
			t.Fatalf("ledger list -json = %+v", got)
		}
		e.want(0, add("Third", "review of 1-3")...)
		decode(t, e.want(0, "ledger", "list", "-file", f, "-status", "open", "-json"), &got)
		if len(got) != 1 || got[0].ID != "DW-3" || got[0].Status != "open" {
			t.Fatalf("ledger list -status open -json = %+v, want [DW-3]", got)
		}
		r := e.want(0, "ledger", "list", "-file", f, "-status", "done")
		if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "DW-1 ") {
			t.Fatalf("ledger list -status done = %q, want DW-1 and DW-2", r.stdout)
		}
	})
	t.Run("archive", func(t *testing.T) {
		e := e.with(t)
		var got struct {
			File    string   `json:"file"`
			Archive string   `json:"archive"`
			IDs     []string `json:"ids"`
			DryRun  bool     `json:"dry_run"`
		}
		before := e.read(f)
		decode(t, e.want(0, "-json", "ledger", "archive", "-file", f, "-dry-run"), &got)
		if strings.Join(got.IDs, " ") != "DW-1 DW-2" || !got.DryRun || e.read(f) != before {
			t.Fatalf("ledger archive -dry-run -json = %+v, want DW-1 DW-2 and no write", got)
		}
		r := e.want(0, "ledger", "archive", "-file", f, "-stamp", "2026-06-20")
		if !strings.HasPrefix(r.stdout, "archived DW-1 DW-2") {
			t.Fatalf("ledger archive = %q", r.stdout)
		}
		if a := e.read("artifacts/deferred-work-archive.md"); !strings.Contains(a, "### DW-1: Harden unicode") {
			t.Fatalf("archive lacks DW-1:\n%s", a)
		}
		if r := e.want(0, "ledger", "archive", "-file", f); r.stdout != "nothing to archive\n" {
			t.Fatalf("ledger archive (again) = %q", r.stdout)
		}
	})
}

// TestLedgerFlagsTheLedgerRefusesAreNamedInTheCommandLinesWords: a date or
// severity the ledger refuses is reported as the flag that gave it, its
// value and what it must be (exit 2, one line, no "see -h"), before the
// ledger is changed; the preview of an archive writes no stubs, so it takes
// any -stamp. Ablation: dropping the flag check of ledger archive lets the
// ledger's own error through ("ledger: Archive: before ...: filetxn:
// invalid argument"), and the -before and -stamp lines go red.
func TestLedgerFlagsTheLedgerRefusesAreNamedInTheCommandLinesWords(t *testing.T) {
	e := newEnv(t)
	const text = "### DW-1: x\nstatus: open\n\n### DW-2: y\nstatus: done 2026-01-01\n"
	f := e.write("deferred-work.md", text)
	tests := []struct {
		args []string
		line string
	}{
		{[]string{"ledger", "close", "-file", f, "-date", "2026-02-30", "-note", "n", "DW-1"}, `ledger close: -date "2026-02-30": must be a calendar date, YYYY-MM-DD`},
		{[]string{"ledger", "decide", "-file", f, "-date", "0000-01-01", "-label", "l", "DW-1"}, `ledger decide: -date "0000-01-01": must be a calendar date, YYYY-MM-DD`},
		{[]string{"ledger", "decide", "-file", f, "-date", "2026-06-11 ", "-label", "l", "-close-note", "n", "DW-1"}, `ledger decide: -date "2026-06-11 ": must be a calendar date, YYYY-MM-DD`},
		{[]string{"ledger", "archive", "-file", f, "-before", "2026-13-01"}, `ledger archive: -before "2026-13-01": must be a calendar date, YYYY-MM-DD`},
		{[]string{"ledger", "archive", "-file", f, "-stamp", "today"}, `ledger archive: -stamp "today": must be a calendar date, YYYY-MM-DD`},
		{[]string{"ledger", "add", "-file", f, "-title", "t", "-origin", "o", "-source-spec", "s", "-reason", "r", "-severity", "High"}, `ledger add: -severity "High": must be one of critical, high, medium, low`},
	}
	for _, tt := range tests {
		r := e.want(2, tt.args...)
		require.Equal(t, tt.line+"\n", r.stderr, "looprunner %q: stderr = %q, want %q", tt.args, r.stderr, tt.line)
		require.Equal(t, text, e.read("deferred-work.md"), "looprunner %q changed the ledger", tt.args)
	}
	r := e.want(0, "ledger", "archive", "-file", f, "-dry-run", "-stamp", "today")
	require.Equal(t, "would archive DW-2 into "+e.path("deferred-work-archive.md")+"\n", r.stdout, "ledger archive -dry-run -stamp today = %q, want the preview", r.stdout)
}

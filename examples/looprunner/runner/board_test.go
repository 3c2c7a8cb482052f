package runner

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const testBoard = `# Sprint status
last_updated: 01-06-2026 10:00
development_status:
  epic-3: backlog
  3-1-login: done
  3-2-digest-delivery: backlog  # the next story
  3-3-export: drafted
`

// boardJSON is the shape of board show -json.
type boardJSON struct {
	File    string            `json:"file"`
	Stories map[string]string `json:"stories"`
	Epics   map[string]string `json:"epics"`
	Order   []storyJSON       `json:"order"`
	Next    string            `json:"next"`
	Unread  []unreadJSON      `json:"unread"`
}

func TestBoardAdvance(t *testing.T) {
	e := newEnv(t)
	f := e.write("sprint-status.yaml", testBoard)
	tests := []struct {
		name string
		args []string
		code int
		out  string
		err  string // stderr
	}{
		{"forward", []string{"3-2-digest-delivery", "in-progress", "-now", "02-06-2026 09:30"}, 0, "in-progress\n", ""},
		{"never backwards, and says so", []string{"3-1-login", "review"}, 0, "done\n", "board advance: 3-1-login unchanged: already done, past review\n"},
		{"drafted reads ready-for-dev", []string{"3-3-export", "ready-for-dev"}, 0, "ready-for-dev\n", ""},
		{"absent row", []string{"9-9-ghost", "done"}, 3, "", "board advance: no row 9-9-ghost in " + f + "\n"},
		{"target outside the order names the flag", []string{"3-3-export", "finished"}, 2, "", "board advance: status \"finished\" is outside the order (backlog, ready-for-dev, in-progress, review, awaiting-operator, done); give -allow-unordered to write it; see 'looprunner board advance -h'\n"},
		{"missing status", []string{"3-3-export"}, 2, "", "board advance: want KEY STATUS, got 1 argument; see 'looprunner board advance -h'\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := e.with(t)
			r := e.want(tt.code, append([]string{"board", "advance", "-file", f}, tt.args...)...)
			require.Equal(t, tt.out, r.stdout, "board advance %v = %q, want %q", tt.args, r.stdout, tt.out)
			require.Equal(t, tt.err, r.stderr, "board advance %v: stderr = %q, want %q", tt.args, r.stderr, tt.err)
		})
	}
	b := e.read("sprint-status.yaml")
	for _, want := range []string{"last_updated: 02-06-2026 09:30", "epic-3: in-progress", "3-2-digest-delivery: in-progress  # the next story", "3-3-export: drafted"} {
		if !strings.Contains(b, want) {
			t.Errorf("board lacks %q:\n%s", want, b)
		}
	}
	type advanced struct {
		File, Key, Target, Status string
		Unchanged                 bool
	}
	var got advanced
	decode(t, e.want(0, "-json", "board", "advance", "-file", f, "3-3-export", "review"), &got)
	want := advanced{File: f, Key: "3-3-export", Target: "review", Status: "review"}
	require.Equal(t, want, got, "board advance -json 3-3-export review = %+v, want %+v", got, want)
	decode(t, e.want(0, "-json", "board", "advance", "-file", f, "3-3-export", "in-progress"), &got)
	want = advanced{File: f, Key: "3-3-export", Target: "in-progress", Status: "review", Unchanged: true}
	require.Equal(t, want, got, "board advance -json 3-3-export in-progress = %+v, want %+v", got, want)
}

func TestBoardAdvanceRefusesAnUnorderedStatus(t *testing.T) {
	e := newEnv(t)
	f := e.write("sprint-status.yaml", "development_status:\n  5-1-x: completed\n")
	r := e.want(1, "board", "advance", "-file", f, "5-1-x", "done")
	want := "board advance: " + f + ": line 2: 5-1-x: \"completed\" -> \"done\": status outside the known order (backlog, ready-for-dev, in-progress, review, awaiting-operator, done); give -allow-unordered to overwrite it\n"
	require.Equal(t, want, r.stderr, "board advance of a completed row: stderr = %q, want %q", r.stderr, want)
	r = e.want(0, "board", "advance", "-file", f, "-allow-unordered", "5-1-x", "done")
	require.Equal(t, "done\n", r.stdout, "board advance -allow-unordered = %q, want done", r.stdout)
}

// TestBoardAdvanceNamesTheArgumentsTheBoardRefusesInItsOwnWords: a KEY,
// STATUS or -now that the board refuses as an argument is a usage error
// (exit 2) naming the positional argument or flag and its value, not the
// Go API's Advance or Stamp, and the board is not changed. Ablation:
// dropping the checkBoardArgs call lets the board's own words through
// ("board: Advance: key ...: filetxn: invalid argument"), and each line
// goes red.
func TestBoardAdvanceNamesTheArgumentsTheBoardRefusesInItsOwnWords(t *testing.T) {
	e := newEnv(t)
	f := e.write("sprint-status.yaml", testBoard)
	see := "; see 'looprunner board advance -h'\n"
	tests := []struct {
		args []string
		line string
	}{
		{[]string{"board", "advance", "-file", f, "", "done"}, `board advance: KEY "": want a non-empty UTF-8 key`},
		{[]string{"board", "advance", "-file", f, "-allow-unordered", "3-2-digest-delivery", "a: b"}, `board advance: STATUS "a: b": cannot be written as a plain YAML string`},
		{[]string{"board", "advance", "-file", f, "-now", "a: b", "3-2-digest-delivery", "done"}, `board advance: -now "a: b": cannot be written as a plain YAML value for last_updated`},
	}
	for _, tt := range tests {
		r := e.want(2, tt.args...)
		require.Equal(t, tt.line+see, r.stderr, "looprunner %q: stderr = %q, want %q", tt.args, r.stderr, tt.line)
		require.Equal(t, testBoard, e.read("sprint-status.yaml"), "looprunner %q changed the board", tt.args)
	}
}

// TestBoardAdvanceRefusesAnIllegalRegression: with -allow-regression, a backward move
// other than done to awaiting-operator exits 1, and the message names the file, the line,
// the row, its status, the target and the one move allowed; nothing is written.
// Ablation: dropping the allowlist check in board's plan (any regression allowed) turns
// it red.
func TestBoardAdvanceRefusesAnIllegalRegression(t *testing.T) {
	e := newEnv(t)
	f := e.write("sprint-status.yaml", testBoard)
	r := e.want(1, "board", "advance", "-file", f, "-allow-regression", "3-1-login", "review")
	want := "board advance: " + f + ": line 5: 3-1-login: \"done\" -> \"review\": illegal transition: only done -> awaiting-operator may move backwards\n"
	require.Equal(t, want, r.stderr, "board advance -allow-regression 3-1-login review: stderr = %q, want %q", r.stderr, want)
	require.Equal(t, testBoard, e.read("sprint-status.yaml"), "board after a refused regression")
	r = e.want(0, "board", "advance", "-file", f, "-allow-regression", "3-1-login", "awaiting-operator")
	require.Equal(t, "awaiting-operator\n", r.stdout, "board advance -allow-regression 3-1-login awaiting-operator = %q, want awaiting-operator", r.stdout)
}

func TestBoardShow(t *testing.T) {
	e := newEnv(t)
	f := e.write("sprint-status.yaml", testBoard)
	var got boardJSON
	decode(t, e.want(0, "-json", "board", "show", "-file", f), &got)
	want := map[string]string{"3-1-login": "done", "3-2-digest-delivery": "backlog", "3-3-export": "ready-for-dev"}
	if len(got.Stories) != len(want) || got.Epics["epic-3"] != "backlog" || got.Next != "3-2-digest-delivery" || len(got.Order) != 3 || got.Order[0].Key != "3-1-login" {
		t.Fatalf("board show -json = %+v", got)
	}
	for k, v := range want {
		if got.Stories[k] != v {
			t.Errorf("board show -json: stories[%s] = %q, want %q", k, got.Stories[k], v)
		}
	}
	r := e.want(0, "board", "show", "-file", f)
	if !strings.Contains(r.stdout, "epic-3") || !strings.Contains(r.stdout, "  3-2-digest-delivery  backlog") {
		t.Fatalf("board show = %q", r.stdout)
	}
	e.want(3, "board", "show", "-file", e.path("missing.yaml"))
}

// TestBoardShowListsRowsWithoutAStatus: a row the board cannot read a status
// from (a mapping without status) is named with its line, on stderr for text
// and under "unread" for -json, instead of vanishing from the listing.
// Ablation: dropping the Unread loop in boardShow turns both checks red.
func TestBoardShowListsRowsWithoutAStatus(t *testing.T) {
	e := newEnv(t)
	f := e.write("sprint-status.yaml", "development_status:\n  epic-1: in-progress\n  1-1-foo: done\n  1-2-bar:\n    title: x\n")
	var got boardJSON
	decode(t, e.want(0, "-json", "board", "show", "-file", f), &got)
	require.Equal(t, []unreadJSON{{Key: "1-2-bar", Line: 4, Detail: "the mapping has no status key"}}, got.Unread,
		"board show -json: unread = %+v, want 1-2-bar at line 4", got.Unread)
	r := e.want(0, "board", "show", "-file", f)
	require.Contains(t, r.stderr, "1-2-bar: line 4: no status", "board show: stderr = %q, want the row without a status named", r.stderr)
	require.Contains(t, r.stdout, "1-1-foo", "board show: stdout = %q", r.stdout)
}

package board

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// mapBoard mixes every shape of row: plain rows, a block-map epic and story (with other
// fields around the status, a quoted status and a trailing comment), a flow-map story, a
// map retrospective and a map without a status.
const mapBoard = `last_updated: 01-06-2026 10:00
development_status:
  epic-1:
    status: backlog
    title: "Foundation"
  1-1-plain: done  # shipped
  1-2-block:
    title: "Fix URLs"
    status: "ready-for-dev"  # quoted
    owner: pat
    last_updated: 2026-01-01
  1-3-flow: {status: backlog, title: x}
  1-4-flow-last: { title: "y, z", status: 'drafted' }  # legacy
  epic-1-retrospective:
    status: optional
  1-5-no-status:
    title: "Not started"
    owner: pat
  epic-2: backlog
  2-1-list: [backlog, done]
  2-2-plain: backlog

action_items:
  - status: backlog
`

// TestMapRowsLoadWithTheirStatus: a key holding a mapping with a scalar status key reads
// that status (block or flow, quoted or plain, drafted folded), lists in Stories and
// Epics at its key's line, and the board round-trips byte for byte. Ablation: reading
// the first status key anywhere below the row instead of the mapping's own (or dropping
// the MappingNode case) turns it red.
func TestMapRowsLoadWithTheirStatus(t *testing.T) {
	d, err := Parse([]byte(mapBoard))
	require.NoError(t, err, "Parse(mapBoard) = %v, want nil", err)
	require.Equal(t, mapBoard, string(d.Bytes()), "Parse(mapBoard).Bytes() differs from the source")
	for key, want := range map[string]Status{
		"epic-1": Backlog, "1-1-plain": Done, "1-2-block": ReadyForDev, "1-3-flow": Backlog,
		"1-4-flow-last": ReadyForDev, "epic-1-retrospective": "optional", "epic-2": Backlog, "2-2-plain": Backlog,
	} {
		got, ok := d.Status(key)
		require.True(t, ok && got == want, "Status(%q) = %q, %v, want %q, true", key, got, ok, want)
	}
	for _, key := range []string{"1-5-no-status", "2-1-list"} {
		got, ok := d.Status(key)
		require.False(t, ok, "Status(%q) = %q, %v, want absent", key, got, ok)
	}
	var keys []string
	for _, s := range d.Stories() {
		keys = append(keys, s.Key)
		if s.Key == "1-2-block" {
			require.Equal(t, 7, s.Line, "Stories()[1-2-block].Line = %d, want 7 (the key's line)", s.Line)
		}
	}
	require.Equal(t, []string{"1-1-plain", "1-2-block", "1-3-flow", "1-4-flow-last", "2-2-plain"}, keys, "Stories() keys = %v", keys)
	epics := d.Epics()
	require.Equal(t, []Row{{Key: "epic-1", Epic: 1, Status: Backlog, Line: 3}, {Key: "epic-2", Epic: 2, Status: Backlog, Line: 19}}, epics, "Epics() = %+v", epics)
	next, ok := d.NextActionable()
	require.True(t, ok && next.Key == "1-2-block", "NextActionable() = %q, %v, want 1-2-block, true", next.Key, ok)
}

// TestMapRowsAdvanceByEditingOnlyTheirStatusValue: advancing a map row rewrites the value
// of its status key and nothing else (quotes dropped, the comment and the mapping's other
// fields kept); a move to in-progress lifts a map epic through its status line, and
// Stamp sets the top-level last_updated, never the one inside the story's mapping.
// Ablation: editing the key's line instead of the status key's (row.line for row.vline
// in set) turns it red.
func TestMapRowsAdvanceByEditingOnlyTheirStatusValue(t *testing.T) {
	tests := []struct {
		name, key string
		target    Status
		replace   []string // old, new pairs applied to mapBoard
	}{
		{"block map with a quoted status and a comment", "1-2-block", InProgress, []string{
			"    status: backlog\n    title: \"Foundation\"", "    status: in-progress\n    title: \"Foundation\"",
			`    status: "ready-for-dev"  # quoted`, "    status: in-progress  # quoted",
			"last_updated: 01-06-2026 10:00", "last_updated: 2026-06-02",
		}},
		{"flow map, status first", "1-3-flow", Review, []string{
			"{status: backlog, title: x}", "{status: review, title: x}",
			"last_updated: 01-06-2026 10:00", "last_updated: 2026-06-02",
		}},
		{"flow map, status last and quoted", "1-4-flow-last", Done, []string{
			`{ title: "y, z", status: 'drafted' }  # legacy`, `{ title: "y, z", status: done }  # legacy`,
			"last_updated: 01-06-2026 10:00", "last_updated: 2026-06-02",
		}},
		{"map epic", "epic-1", Done, []string{
			"    status: backlog\n    title: \"Foundation\"", "    status: done\n    title: \"Foundation\"",
			"last_updated: 01-06-2026 10:00", "last_updated: 2026-06-02",
		}},
		{"plain row on a mixed board lifts a plain epic", "2-2-plain", InProgress, []string{
			"  epic-2: backlog", "  epic-2: in-progress",
			"  2-2-plain: backlog", "  2-2-plain: in-progress",
			"last_updated: 01-06-2026 10:00", "last_updated: 2026-06-02",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := strings.NewReplacer(tt.replace...).Replace(mapBoard)
			got, src, err := advance(t, mapBoard, tt.key, tt.target, Stamp("2026-06-02"))
			require.NoError(t, err, "Advance(%q, %q) = %v, want nil", tt.key, tt.target, err)
			require.Equal(t, tt.target, got, "Advance(%q, %q) = %q, want %q", tt.key, tt.target, got, tt.target)
			require.Equal(t, want, src, "Advance(%q, %q) bytes", tt.key, tt.target)
			b, err := advancedBytes([]byte(mapBoard), tt.key, tt.target, Stamp("2026-06-02"))
			require.NoError(t, err)
			require.Equal(t, want, string(b), "advancedBytes(%q, %q) = %q, want what Advance writes", tt.key, tt.target, b)
			re, err := Parse([]byte(src))
			require.NoError(t, err, "Parse(advanced board) = %v", err)
			st, _ := re.Status(tt.key)
			require.Equal(t, tt.target, st, "reparsed Status(%q) = %q, want %q", tt.key, st, tt.target)
		})
	}
	// At or past the target: nothing changes, as for a plain row.
	got, src, err := advance(t, mapBoard, "1-2-block", ReadyForDev, Stamp("x"))
	require.True(t, err == nil && got == ReadyForDev && src == mapBoard, "Advance(1-2-block, ready-for-dev) = %q, %v (changed %v), want ready-for-dev, nil, unchanged", got, err, src != mapBoard)
}

// TestMapRowsWithoutAStatusAreReportedAndNeverStopTheBoard: a mapping without a status
// key, a status key holding a mapping, and a list have no status; Unread names each by
// key and line, Advance refuses each with a *filetxn.FormatError naming key and line, and every
// other row of the board loads and advances. Ablation: refusing such a row in Parse (as
// before, ErrNestedRow) turns it red; so does leaving it out of Unread.
func TestMapRowsWithoutAStatusAreReportedAndNeverStopTheBoard(t *testing.T) {
	// mapBoard has 1-5-no-status on line 16 and 2-1-list on line 20.
	src := strings.Replace(mapBoard, "  2-2-plain: backlog\n", "  2-2-plain: backlog\n  2-3-deep:\n    status:\n      value: done\n", 1)
	d, err := Parse([]byte(src))
	require.NoError(t, err, "Parse(board with status-less maps) = %v, want nil", err)
	un := d.Unread()
	type seen struct {
		key  string
		line int
	}
	var got []seen
	for _, e := range un {
		got = append(got, seen{e.Key, e.Line})
		_, re := refusedRow(e)
		require.True(t, re != nil && re.reason == reasonValueNotScalar && re.target == "",
			"Unread() entry = %+v, want value-not-scalar, no target", e)
	}
	require.Equal(t, []seen{{"1-5-no-status", 16}, {"2-1-list", 20}, {"2-3-deep", 22}}, got, "Unread() = %v", got)
	require.Equal(t, `line 16: 1-5-no-status: the mapping has no status key`, un[0].Error(), "Unread()[0].Error()")

	for _, key := range []string{"1-5-no-status", "2-1-list", "2-3-deep"} {
		_, after, err := advance(t, src, key, Done, AllowUnordered())
		fe, re := refusedRow(err)
		require.True(t, fe != nil && re.reason == reasonValueNotScalar, "Advance(%q, done) error = %v, want a *filetxn.FormatError, value-not-scalar", key, err)
		require.True(t, fe.Key == key && fe.Line > 0 && re.target == Done, "Advance(%q, done) error = %+v, want key, line and target", key, fe)
		require.Equal(t, src, after, "Advance(%q, done) changed the board", key)
	}
	// The rest of the board works: several moves in one Doc.
	for _, key := range []string{"1-2-block", "1-3-flow", "2-2-plain"} {
		got, err := d.Advance(key, Done)
		require.True(t, err == nil && got == Done, "Advance(%q, done) = %q, %v, want done, nil", key, got, err)
	}
	re, err := Parse(d.Bytes())
	require.NoError(t, err)
	require.Len(t, re.Unread(), 3, "Unread() after the moves = %v, want the same three", re.Unread())
	require.Nil(t, mustDoc(t, sprint).Unread(), "Unread() on a board of plain rows = %v, want nil", mustDoc(t, sprint).Unread())
	// A repeated key whose last value has no status is reported for that, not for the
	// repetition.
	dup := "development_status:\n  x: done\n  x:\n    title: t\n"
	un = mustDoc(t, dup).Unread()
	require.Len(t, un, 1, "Unread(%q) = %v, want x at line 3, value-not-scalar", dup, un)
	_, ure := refusedRow(un[0])
	require.True(t, un[0].Key == "x" && un[0].Line == 3 && ure != nil && ure.reason == reasonValueNotScalar, "Unread(%q) = %v, want x at line 3, value-not-scalar", dup, un)
	_, _, err = advance(t, dup, "x", Done, AllowUnordered())
	_, rerr := refusedRow(err)
	require.True(t, rerr != nil && rerr.reason == reasonValueNotScalar, "Advance(x, done) error = %v, want value-not-scalar", err)
}

func mustDoc(t *testing.T, src string) *Doc {
	t.Helper()
	d, err := Parse([]byte(src))
	require.NoError(t, err, "Parse(%q) = %v", src, err)
	return d
}

// TestMapRowsRefuseWhatCannotBeRewrittenSafely: a map row whose status line cannot be
// edited safely loads with its status and is refused only when it must move, with the
// reason a plain row would get.
func TestMapRowsRefuseWhatCannotBeRewrittenSafely(t *testing.T) {
	tests := []struct {
		name, src, key string
		target         Status
		opts           []AdvanceOption
		reason         reason
		current        Status
	}{
		{"aliased mapping", "x: &m {status: backlog}\ndevelopment_status:\n  1-1-a: *m\n", "1-1-a", Done, nil, reasonValueIsAlias, Backlog},
		{"aliased status", "x: &s backlog\ndevelopment_status:\n  1-1-a:\n    status: *s\n", "1-1-a", Done, nil, reasonValueIsAlias, Backlog},
		{"aliased status in a flow mapping", "development_status:\n  1-1-a: {t: &s backlog, status: *s}\n", "1-1-a", Done, nil, reasonValueIsAlias, Backlog},
		{"anchored mapping", "development_status:\n  1-1-a: &m\n    status: backlog\n  1-2-b: *m\n", "1-1-a", Done, nil, reasonUnreadableValue, Backlog},
		{"two status keys", "development_status:\n  1-1-a:\n    status: done\n    status: backlog\n", "1-1-a", Review, nil, reasonDuplicateKey, Backlog},
		{"quoted status key", "development_status:\n  1-1-a:\n    'status': backlog\n", "1-1-a", Done, nil, reasonKeyNotPlain, Backlog},
		{"status value on the next line", "development_status:\n  1-1-a:\n    status:\n      backlog\n", "1-1-a", Done, nil, reasonMultilineValue, Backlog},
		{"empty status", "development_status:\n  1-1-a:\n    status:\n    title: x\n", "1-1-a", Done, []AdvanceOption{AllowUnordered()}, reasonUnreadableValue, ""},
		{"trailing blanks on the status line", "development_status:\n  1-1-a:\n    status: backlog  \n", "1-1-a", Done, nil, reasonUnreadableValue, Backlog},
		{"a flow target that would not read back", "development_status:\n  1-1-a: {status: blocked}\n", "1-1-a", "a,b", []AdvanceOption{AllowUnordered()}, reasonUnreadableValue, "blocked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, ok := mustDoc(t, tt.src).Status(tt.key)
			require.True(t, ok && st == tt.current, "Status(%q) = %q, %v, want %q, true", tt.key, st, ok, tt.current)
			_, after, err := advance(t, tt.src, tt.key, tt.target, tt.opts...)
			fe, re := refusedRow(err)
			require.True(t, fe != nil && fe.Key == tt.key, "Advance(%q, %q) error = %v, want a *filetxn.FormatError naming the key", tt.key, tt.target, err)
			require.Equal(t, tt.reason, re.reason, "Advance(%q, %q) reason = %q, want %q (%v)", tt.key, tt.target, re.reason, tt.reason, err)
			require.Equal(t, tt.src, after, "Advance(%q, %q) changed the board", tt.key, tt.target)
		})
	}
}

// TestAFlowRowIsMovedOnlyToATargetItReadsBack: a target outside the order, written into a
// flow mapping row ({status: blocked} or {status: blocked, title: x}), either reads back
// as itself from the board written, the other rows and fields intact, or is refused with
// unreadable-value and changes nothing. "a?" and ":a" are plain values in a block but the
// parser refuses them in a flow mapping, so they are refused.
//
// Ablation (run): the flow check testing only for ",[]{}" (the code before) makes it red:
// Advance moves the row to "a?" and ":a", and the board it writes is one Parse refuses as
// a whole ("not valid YAML").
func TestAFlowRowIsMovedOnlyToATargetItReadsBack(t *testing.T) {
	refused := []Status{"a?", ":a", "a,b", "a]", "a}b", "a, b"}
	targets := append([]Status{"blocked-by-ci", "x:y", "a!", "a'", "-a", "a\u00a0b"}, refused...)
	for _, src := range []string{
		"development_status:\n  1-1-a: {status: blocked}\n  1-2-b: done\n",
		"development_status:\n  1-1-a: {status: blocked, title: x}\n  1-2-b: done\n",
	} {
		for _, target := range targets {
			got, after, err := advance(t, src, "1-1-a", target, AllowUnordered())
			if err != nil {
				_, re := refusedRow(err)
				require.True(t, re != nil && re.reason == reasonUnreadableValue, "Advance(1-1-a, %q) on %q = %v, want nil or unreadable-value", target, src, err)
				require.Equal(t, src, after, "Advance(1-1-a, %q) refused changed the board", target)
				continue
			}
			require.NotContains(t, refused, target, "Advance(1-1-a, %q) on %q = %q, nil, want unreadable-value", target, src, got)
			d, err := Parse([]byte(after))
			require.NoError(t, err, "Parse(%q) after Advance(1-1-a, %q) = %v, want the board", after, target, err)
			st, ok := d.Status("1-1-a")
			require.True(t, ok && st == target, "Status(1-1-a) after Advance(1-1-a, %q) = %q, %v, want %q, true", target, st, ok, target)
			st, ok = d.Status("1-2-b")
			require.True(t, ok && st == Done, "Status(1-2-b) after Advance(1-1-a, %q) = %q, %v, want done, true", target, st, ok)
		}
	}
}

// TestPaddedEpicKeysAreNotLifted: the lift looks for the row keyed epic-<n> with the
// story's epic number unpadded, as bmad-loop does: a board numbering its epics epic-01
// reads and lists them as epic 1, but a story moving to in-progress lifts nothing; a
// story key with a padded epic number (01-1-x) lifts epic-1; an epic number on two rows
// (epic-1 and epic-01) lifts neither. Ablation: lifting by epic number alone (the code
// before) turns the first case red.
func TestPaddedEpicKeysAreNotLifted(t *testing.T) {
	tests := []struct {
		name, src, key, want string
	}{
		{"epic-01 is not lifted",
			"development_status:\n  epic-00: done\n  epic-01: backlog\n  1-1-a: backlog\n",
			"1-1-a", "development_status:\n  epic-00: done\n  epic-01: backlog\n  1-1-a: in-progress\n"},
		{"a padded story number lifts epic-1",
			"development_status:\n  epic-1: backlog\n  01-1-a: backlog\n",
			"01-1-a", "development_status:\n  epic-1: in-progress\n  01-1-a: in-progress\n"},
		{"epic-1 beside epic-01 is ambiguous",
			"development_status:\n  epic-1: backlog\n  epic-01: backlog\n  1-1-a: backlog\n",
			"1-1-a", "development_status:\n  epic-1: backlog\n  epic-01: backlog\n  1-1-a: in-progress\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, src, err := advance(t, tt.src, tt.key, InProgress)
			require.True(t, err == nil && got == InProgress, "Advance(%q, in-progress) = %q, %v, want in-progress, nil", tt.key, got, err)
			require.Equal(t, tt.want, src, "Advance(%q, in-progress) bytes", tt.key)
		})
	}
	es := mustDoc(t, tests[0].src).Epics()
	require.Equal(t, []Row{{Key: "epic-00", Epic: 0, Status: Done, Line: 2}, {Key: "epic-01", Epic: 1, Status: Backlog, Line: 3}}, es, "Epics() = %+v", es)
}

// TestTrailingBlanksErrorSaysHowToFix: a value followed by blanks and no comment is
// refused (bmad-loop's writer cannot edit that line either), and the error quotes the
// line, says what is wrong with it and how to fix it.
func TestTrailingBlanksErrorSaysHowToFix(t *testing.T) {
	src := "development_status:\n  epic-1: backlog\n  1-2-foo: done   \n"
	_, _, err := advance(t, src, "1-2-foo", "blocked", AllowUnordered())
	require.Error(t, err, "Advance(1-2-foo) = nil, want a refusal")
	require.Contains(t, err.Error(), `line 3: 1-2-foo: "done" -> "blocked": cannot rewrite the row safely: unreadable-value (line 3: "  1-2-foo: done   ": trailing blanks after the value; remove them`, "Advance(1-2-foo) error = %q", err)
	// Once fixed, the row moves.
	_, fixed, err := advance(t, strings.Replace(src, "done   \n", "done\n", 1), "1-2-foo", "blocked", AllowUnordered())
	require.NoError(t, err)
	require.Contains(t, fixed, "  1-2-foo: blocked\n")
}

package board

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/filetxn/filetxn"
)

// sprint is bmad-loop's test fixture SPRINT (format spec, section 4.1), verbatim.
const sprint = `# Sprint status — do not hand-edit casually
generated: 01-06-2026 10:00
last_updated: 01-06-2026 10:00

# STATUS DEFINITIONS
#   backlog -> ready-for-dev -> in-progress -> review -> done
development_status:
  epic-3: backlog
  3-1-login: done
  3-2-digest-delivery: backlog  # the next story
  epic-4: in-progress
  4-1-thing: review

# WORKFLOW NOTES
# keep these comments
`

// advance parses src, advances key and returns the resulting status and bytes.
func advance(t *testing.T, src, key string, target Status, opts ...AdvanceOption) (Status, string, error) {
	t.Helper()
	d, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("Parse(%q) = %v", src, err)
	}
	got, err := d.Advance(key, target, opts...)
	return got, string(d.Bytes()), err
}

func TestAdvanceRewritesOnlyTheLinesItMust(t *testing.T) {
	tests := []struct {
		name, src, key string
		target         Status
		opts           []AdvanceOption
		want           Status // status returned
		wantSrc        string // board afterwards
	}{
		{
			name: "in-progress lifts the backlog epic and keeps the comment",
			src:  sprint, key: "3-2-digest-delivery", target: InProgress, want: InProgress,
			wantSrc: strings.NewReplacer(
				"  epic-3: backlog\n", "  epic-3: in-progress\n",
				"  3-2-digest-delivery: backlog  # the next story\n", "  3-2-digest-delivery: in-progress  # the next story\n",
			).Replace(sprint),
		},
		{
			name: "review does not lift the epic",
			src:  sprint, key: "3-2-digest-delivery", target: Review, want: Review,
			wantSrc: strings.Replace(sprint, "delivery: backlog  #", "delivery: review  #", 1),
		},
		{
			name: "done does not lift the epic",
			src:  sprint, key: "3-2-digest-delivery", target: Done, want: Done,
			wantSrc: strings.Replace(sprint, "delivery: backlog  #", "delivery: done  #", 1),
		},
		{
			name: "never regresses: review to in-progress answers review",
			src:  sprint, key: "4-1-thing", target: InProgress, want: Review, wantSrc: sprint,
		},
		{
			name: "same status is a no-op",
			src:  sprint, key: "3-1-login", target: Done, want: Done, wantSrc: sprint,
		},
		{
			name: "awaiting-operator to done is allowed",
			src:  strings.Replace(sprint, "4-1-thing: review", "4-1-thing: awaiting-operator", 1),
			key:  "4-1-thing", target: Done, want: Done,
			wantSrc: strings.Replace(sprint, "4-1-thing: review", "4-1-thing: done", 1),
		},
		{
			name: "done to awaiting-operator answers done without the option",
			src:  sprint, key: "3-1-login", target: AwaitingOperator, want: Done, wantSrc: sprint,
		},
		{
			name: "done to awaiting-operator with AllowRegression",
			src:  sprint, key: "3-1-login", target: AwaitingOperator, opts: []AdvanceOption{AllowRegression()},
			want: AwaitingOperator, wantSrc: strings.Replace(sprint, "3-1-login: done", "3-1-login: awaiting-operator", 1),
		},
		{
			name: "Stamp refreshes last_updated only, generated is untouched",
			src:  sprint, key: "4-1-thing", target: Done, opts: []AdvanceOption{Stamp("02-06-2026 09:30")}, want: Done,
			wantSrc: strings.NewReplacer(
				"last_updated: 01-06-2026 10:00", "last_updated: 02-06-2026 09:30",
				"4-1-thing: review", "4-1-thing: done",
			).Replace(sprint),
		},
		{
			name: "Stamp does nothing when the row does not move",
			src:  sprint, key: "4-1-thing", target: InProgress, opts: []AdvanceOption{Stamp("02-06-2026 09:30")},
			want: Review, wantSrc: sprint,
		},
		{
			name: "split story lifts its epic, the sibling is untouched",
			src:  "development_status:\n  epic-2: backlog\n  2-6a-first-half: backlog\n  2-6b-second-half: backlog\n",
			key:  "2-6a-first-half", target: InProgress, want: InProgress,
			wantSrc: "development_status:\n  epic-2: in-progress\n  2-6a-first-half: in-progress\n  2-6b-second-half: backlog\n",
		},
		{
			name: "drafted reads as ready-for-dev: no write",
			src:  "development_status:\n  1-1-a: drafted\n", key: "1-1-a", target: ReadyForDev,
			want: ReadyForDev, wantSrc: "development_status:\n  1-1-a: drafted\n",
		},
		{
			name: "drafted moves on",
			src:  "development_status:\n  1-1-a: drafted\n", key: "1-1-a", target: InProgress,
			want: InProgress, wantSrc: "development_status:\n  1-1-a: in-progress\n",
		},
		{
			name: "an epic that is already in progress is not touched",
			src:  sprint, key: "4-1-thing", target: Done, want: Done,
			wantSrc: strings.Replace(sprint, "4-1-thing: review", "4-1-thing: done", 1),
		},
		// Value/comment split rows (format spec 4.4).
		{
			name: "backlog#x is one value, outside the order",
			src:  "development_status:\n  3-2-x: backlog#x\n", key: "3-2-x", target: Done, opts: []AdvanceOption{AllowUnordered()},
			want: Done, wantSrc: "development_status:\n  3-2-x: done\n",
		},
		{
			name: "a value with spaces is replaced whole",
			src:  "last_updated: 01-06-2026 10:00  # stamp\ndevelopment_status:\n  3-2-x: backlog\n",
			key:  "3-2-x", target: Review, opts: []AdvanceOption{Stamp("02-06-2026 11:00")}, want: Review,
			wantSrc: "last_updated: 02-06-2026 11:00  # stamp\ndevelopment_status:\n  3-2-x: review\n",
		},
		{
			// bmad-loop drops the comment after a quoted value ("  3-2-x: done"); we keep
			// it, because this package's guarantee is that comments survive. The quoted
			// value itself is outside the order, hence AllowUnordered.
			name: "a quoted value with a hash is one value, the real comment survives",
			src:  "development_status:\n  3-2-x: \"a # b\"  # real comment\n", key: "3-2-x", target: Done,
			opts: []AdvanceOption{AllowUnordered()},
			want: Done, wantSrc: "development_status:\n  3-2-x: done  # real comment\n",
		},
		{
			name: "a quoted ordered value is replaced by the plain target",
			src:  "development_status:\n  3-2-x: 'review' # c\n  3-3-y: \"backlog\"\n", key: "3-2-x", target: Done,
			want: Done, wantSrc: "development_status:\n  3-2-x: done # c\n  3-3-y: \"backlog\"\n",
		},
		{
			name: "a tab before the comment is kept",
			src:  "development_status:\n  3-2-x: review\t# c\n", key: "3-2-x", target: Done,
			want: Done, wantSrc: "development_status:\n  3-2-x: done\t# c\n",
		},
		{
			name: "a wide gap is kept",
			src:  "development_status:\n  3-2-x:    review   # c\n", key: "3-2-x", target: Done,
			want: Done, wantSrc: "development_status:\n  3-2-x:    done   # c\n",
		},
		{
			name: "an off-order status equal to the target is a no-op",
			src:  "development_status:\n  3-2-x: blocked\n", key: "3-2-x", target: "blocked", opts: []AdvanceOption{AllowUnordered()},
			want: "blocked", wantSrc: "development_status:\n  3-2-x: blocked\n",
		},
		{
			name: "an off-order status is overwritten with AllowUnordered",
			src:  "development_status:\n  3-2-x: completed  # yes\n", key: "3-2-x", target: Done, opts: []AdvanceOption{AllowUnordered()},
			want: Done, wantSrc: "development_status:\n  3-2-x: done  # yes\n",
		},
		{
			name: "an off-order target is written over an ordered status with AllowUnordered",
			src:  "development_status:\n  3-2-x: done\n", key: "3-2-x", target: "blocked", opts: []AdvanceOption{AllowUnordered()},
			want: "blocked", wantSrc: "development_status:\n  3-2-x: blocked\n",
		},
		{
			name: "the key in a nested mapping elsewhere is not the row",
			src:  "other:\n  3-2-x: backlog\ndevelopment_status:\n  3-2-x: backlog\n", key: "3-2-x", target: Review,
			want: Review, wantSrc: "other:\n  3-2-x: backlog\ndevelopment_status:\n  3-2-x: review\n",
		},
		{
			name: "last_updated in a nested mapping is not the stamp",
			src:  "meta:\n  last_updated: x\nlast_updated: y\ndevelopment_status:\n  3-2-x: backlog\n", key: "3-2-x", target: Review,
			opts: []AdvanceOption{Stamp("z")},
			want: Review, wantSrc: "meta:\n  last_updated: x\nlast_updated: z\ndevelopment_status:\n  3-2-x: review\n",
		},
		{
			name: "no last_updated line: none is added",
			src:  "development_status:\n  3-2-x: backlog\n", key: "3-2-x", target: Review, opts: []AdvanceOption{Stamp("z")},
			want: Review, wantSrc: "development_status:\n  3-2-x: review\n",
		},
		{
			name: "a repeated epic is not lifted, the story still moves",
			src:  "development_status:\n  epic-1: backlog\n  1-1-a: backlog\n# x\n  epic-1: backlog\n", key: "1-1-a", target: InProgress,
			want: InProgress, wantSrc: "development_status:\n  epic-1: backlog\n  1-1-a: in-progress\n# x\n  epic-1: backlog\n",
		},
		{
			name: "a quoted epic is not lifted, the story still moves",
			src:  "development_status:\n  \"epic-1\": backlog\n  1-1-a: backlog\n", key: "1-1-a", target: InProgress,
			want: InProgress, wantSrc: "development_status:\n  \"epic-1\": backlog\n  1-1-a: in-progress\n",
		},
		{
			name: "an epic row moves like a story, lifting nothing",
			src:  sprint, key: "epic-4", target: Done, want: Done,
			wantSrc: strings.Replace(sprint, "epic-4: in-progress", "epic-4: done", 1),
		},
		{
			name: "no final newline",
			src:  "development_status:\n  epic-1: backlog\n  1-1-a: backlog", key: "1-1-a", target: InProgress,
			want: InProgress, wantSrc: "development_status:\n  epic-1: in-progress\n  1-1-a: in-progress",
		},
		{
			name: "document start marker",
			src:  "# header\n---\ndevelopment_status:\n  1-1-a: backlog\n", key: "1-1-a", target: Done,
			want: Done, wantSrc: "# header\n---\ndevelopment_status:\n  1-1-a: done\n",
		},
		{
			name: "CJK key and a long Cyrillic comment",
			src:  "development_status:\n  1-6-mcp-player-profile-权限门: backlog  # Проверка пройдена — всё хорошо, ждём ревью\n",
			key:  "1-6-mcp-player-profile-权限门", target: Review, want: Review,
			wantSrc: "development_status:\n  1-6-mcp-player-profile-权限门: review  # Проверка пройдена — всё хорошо, ждём ревью\n",
		},
		{
			name: "byte order mark",
			src:  "\ufefflast_updated: a\ndevelopment_status:\n  1-1-a: backlog\n", key: "1-1-a", target: Done, opts: []AdvanceOption{Stamp("b")},
			want: Done, wantSrc: "\ufefflast_updated: b\ndevelopment_status:\n  1-1-a: done\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, gotSrc, err := advance(t, tt.src, tt.key, tt.target, tt.opts...)
			if err != nil {
				t.Fatalf("Advance(%q, %q) error = %v", tt.key, tt.target, err)
			}
			if got != tt.want {
				t.Errorf("Advance(%q, %q) = %q, want %q", tt.key, tt.target, got, tt.want)
			}
			if gotSrc != tt.wantSrc {
				t.Errorf("Advance(%q, %q) bytes =\n%q\nwant\n%q", tt.key, tt.target, gotSrc, tt.wantSrc)
			}
			// AdvancedBytes agrees with Advance: nil for an absent row, src itself for a
			// no-op, the same edit otherwise.
			ab, err := advancedBytes([]byte(tt.src), tt.key, tt.target, tt.opts...)
			if err != nil {
				t.Fatalf("advancedBytes(%q, %q) error = %v", tt.key, tt.target, err)
			}
			switch {
			case tt.want == "" && ab != nil:
				t.Errorf("advancedBytes(%q, %q) = %q, want nil", tt.key, tt.target, ab)
			case tt.want != "" && string(ab) != tt.wantSrc:
				t.Errorf("advancedBytes(%q, %q) = %q, want %q", tt.key, tt.target, ab, tt.wantSrc)
			}
		})
	}
}

func TestAdvanceKeepsLineEndings(t *testing.T) {
	want := strings.NewReplacer(
		"  epic-3: backlog\n", "  epic-3: in-progress\n",
		"delivery: backlog  #", "delivery: in-progress  #",
		"last_updated: 01-06-2026 10:00", "last_updated: 02-06-2026 09:30",
	).Replace(sprint)
	// mixed puts a different terminator on each line, cycling through LF, CRLF and a lone CR.
	mixed := func(s string) string {
		var b strings.Builder
		terms := []string{"\n", "\r\n", "\r"}
		for i, l := range strings.SplitAfter(s, "\n") {
			if strings.HasSuffix(l, "\n") {
				l = strings.TrimSuffix(l, "\n") + terms[i%len(terms)]
			}
			b.WriteString(l)
		}
		return b.String()
	}
	tests := []struct {
		name string
		conv func(string) string
	}{
		{"LF", func(s string) string { return s }},
		{"CRLF", func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }},
		{"lone CR", func(s string) string { return strings.ReplaceAll(s, "\n", "\r") }},
		{"mixed", mixed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.conv(sprint)
			got, gotSrc, err := advance(t, src, "3-2-digest-delivery", InProgress, Stamp("02-06-2026 09:30"))
			if err != nil || got != InProgress {
				t.Fatalf("Advance = %q, %v, want %q, nil", got, err, InProgress)
			}
			if w := tt.conv(want); gotSrc != w {
				t.Errorf("Advance bytes =\n%q\nwant\n%q", gotSrc, w)
			}
			ab, err := advancedBytes([]byte(src), "3-2-digest-delivery", InProgress, Stamp("02-06-2026 09:30"))
			if err != nil || string(ab) != gotSrc {
				t.Errorf("AdvancedBytes = %q, %v, want %q, nil", ab, err, gotSrc)
			}
		})
	}
}

func TestAdvancedBytesKeepsCRLFAndOwnerComment(t *testing.T) {
	src := "development_status:\r\n  epic-1: backlog\r\n  1-1-a: backlog  # owner: pat\r\n"
	want := "development_status:\r\n  epic-1: in-progress\r\n  1-1-a: in-progress  # owner: pat\r\n"
	got, err := advancedBytes([]byte(src), "1-1-a", InProgress)
	if err != nil || string(got) != want {
		t.Errorf("AdvancedBytes = %q, %v, want %q, nil", got, err, want)
	}
}

func TestAdvancedBytesEchoesTheSourceForANoOp(t *testing.T) {
	src := []byte(sprint)
	got, err := advancedBytes(src, "4-1-thing", InProgress)
	if err != nil || !bytes.Equal(got, src) {
		t.Fatalf("advancedBytes(no-op) = %q, %v, want the source", got, err)
	}
	if &got[0] != &src[0] {
		t.Errorf("advancedBytes(no-op) returned a copy, want the source slice itself")
	}
	if got, err := advancedBytes(nil, "4-1-thing", Done); got != nil || err != nil {
		t.Errorf("advancedBytes(nil) = %q, %v, want nil, nil", got, err)
	}
}

func TestAdvanceRefusesARowItCannotRewrite(t *testing.T) {
	tests := []struct {
		name, src, key string
		target         Status
		opts           []AdvanceOption
		sentinel       error // nil: a row that cannot be rewritten, a *filetxn.FormatError
		reason         reason
		current        Status
	}{
		{"quoted key", strings.Replace(sprint, "  4-1-thing: review\n", "  4-1-thing: review\n  '5-1-quoted': ready-for-dev\n", 1),
			"5-1-quoted", InProgress, []AdvanceOption{Stamp("x")}, nil, reasonKeyNotPlain, ReadyForDev},
		{"double-quoted key", "development_status:\n  \"5-1-q\": backlog\n", "5-1-q", Done, nil, nil, reasonKeyNotPlain, Backlog},
		{"explicit key", "development_status:\n  ? 5-1-q\n  : backlog\n", "5-1-q", Done, nil, nil, reasonKeyNotPlain, Backlog},
		{"space before colon", "development_status:\n  5-1-q  : backlog\n", "5-1-q", Done, nil, nil, reasonKeyNotPlain, Backlog},
		{"alias value", "x: &s backlog\ndevelopment_status:\n  5-1-q: *s\n", "5-1-q", Done, nil, nil, reasonValueIsAlias, Backlog},
		{"anchored value", "development_status:\n  5-1-q: &s backlog\n  5-2-r: *s\n", "5-1-q", Done, nil, nil, reasonUnreadableValue, Backlog},
		{"tagged value", "development_status:\n  5-1-q: !!str backlog\n", "5-1-q", Done, nil, nil, reasonUnreadableValue, Backlog},
		{"block scalar", "development_status:\n  5-1-q: |\n    backlog\n", "5-1-q", Done, []AdvanceOption{AllowUnordered()}, nil, reasonMultilineValue, "backlog"},
		{"value on the next line", "development_status:\n  5-1-q:\n    backlog\n", "5-1-q", Done, nil, nil, reasonMultilineValue, Backlog},
		{"plain value over two lines", "development_status:\n  5-1-q: in\n    progress\n", "5-1-q", Done, []AdvanceOption{AllowUnordered()}, nil, reasonMultilineValue, "in progress"},
		{"quoted value over two lines", "development_status:\n  5-1-q: \"in\n    progress\"\n", "5-1-q", Done, []AdvanceOption{AllowUnordered()}, nil, reasonMultilineValue, "in progress"},
		{"empty value", "development_status:\n  5-1-q:\n  5-2-r: done\n", "5-1-q", Done, []AdvanceOption{AllowUnordered()}, nil, reasonUnreadableValue, ""},
		{"trailing blank", "development_status:\n  5-1-q: backlog \n", "5-1-q", Done, nil, nil, reasonUnreadableValue, Backlog},
		{"merged row", "base: &b\n  5-1-q: backlog\ndevelopment_status:\n  <<: *b\n  5-2-r: done\n", "5-1-q", Done, nil, nil, reasonRowNotInMapping, Backlog},
		{"aliased mapping", "base: &b\n  5-1-q: backlog\ndevelopment_status: *b\n", "5-1-q", Done, nil, nil, reasonRowNotInMapping, Backlog},
		{"repeated epic", "development_status:\n  epic-5: backlog\n  epic-5: review\n", "epic-5", Done, nil, nil, reasonDuplicateKey, Review},
		{"nested unknown key", "development_status:\n  stories:\n    5-1-q: backlog\n", "stories", Done, nil, nil, reasonValueNotScalar, ""},
		{"completed is outside the order", "development_status:\n  5-1-q: completed\n", "5-1-q", Done, nil, ErrUnorderedStatus, reasonUnorderedStatus, "completed"},
		{"in_progress is outside the order", "development_status:\n  5-1-q: in_progress\n", "5-1-q", Review, nil, ErrUnorderedStatus, reasonUnorderedStatus, "in_progress"},
		{"In progress is outside the order", "development_status:\n  5-1-q: In progress\n", "5-1-q", Review, nil, ErrUnorderedStatus, reasonUnorderedStatus, "In progress"},
		{"blocked is outside the order", "development_status:\n  5-1-q: blocked  # waiting\n", "5-1-q", InProgress, nil, ErrUnorderedStatus, reasonUnorderedStatus, "blocked"},
		{"a regression off the allowlist", sprint, "4-1-thing", InProgress, []AdvanceOption{AllowRegression()}, ErrIllegalTransition, reasonIllegalRegress, Review},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, gotSrc, err := advance(t, tt.src, tt.key, tt.target, tt.opts...)
			fe, re := refusedRow(err)
			switch {
			case re == nil:
				t.Fatalf("Advance(%q, %q) error = %v, want a refused row", tt.key, tt.target, err)
			case tt.sentinel == nil && (fe == nil || fe.Key != tt.key || fe.Line == 0):
				t.Fatalf("Advance(%q, %q) error = %v, want a *filetxn.FormatError naming the key and its line", tt.key, tt.target, err)
			case tt.sentinel != nil && (fe != nil || !errors.Is(err, tt.sentinel) || !strings.Contains(err.Error(), "line ") || !strings.Contains(err.Error(), tt.key)):
				t.Fatalf("Advance(%q, %q) error = %v, want %v naming the key and its line, not a FormatError", tt.key, tt.target, err, tt.sentinel)
			}
			if re.reason != tt.reason || re.current != tt.current || re.target != tt.target {
				t.Errorf("Advance(%q, %q) error = %+v, want reason %q, current %q", tt.key, tt.target, re, tt.reason, tt.current)
			}
			if msg := err.Error(); !strings.Contains(msg, strconv.Quote(string(tt.current))+" -> "+strconv.Quote(string(tt.target))) {
				t.Errorf("Advance(%q, %q) error = %q, want the current status and the target named", tt.key, tt.target, msg)
			}
			// Ablation: rowError.Error leaving out a refused transition's detail
			// turns the regression row red.
			if msg := err.Error(); !strings.Contains(msg, re.detail) {
				t.Errorf("Advance(%q, %q) error = %q, want its detail %q", tt.key, tt.target, msg, re.detail)
			}
			if gotSrc != tt.src {
				t.Errorf("Advance(%q, %q) changed the board to %q", tt.key, tt.target, gotSrc)
			}
			if _, err := advancedBytes([]byte(tt.src), tt.key, tt.target, tt.opts...); err == nil || tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
				t.Errorf("advancedBytes(%q, %q) error = %v, want %v", tt.key, tt.target, err, tt.sentinel)
			}
		})
	}
}

func TestAdvanceRejectsInvalidArguments(t *testing.T) {
	tests := []struct {
		name, key string
		target    Status
		opts      []AdvanceOption
	}{
		{"empty key", "", Done, nil},
		{"key that is not UTF-8", "3-1-a\xff", Done, nil},
		{"unknown target", "3-1-login", "completed", nil},
		{"drafted is not a target", "3-1-login", drafted, nil},
		{"target with a colon", "3-1-login", "a: b", []AdvanceOption{AllowUnordered()}},
		{"target with a comment", "3-1-login", "a #b", []AdvanceOption{AllowUnordered()}},
		{"target that reads as a boolean", "3-1-login", "yes", []AdvanceOption{AllowUnordered()}},
		{"target that reads as a number", "3-1-login", "12", []AdvanceOption{AllowUnordered()}},
		{"target with a newline", "3-1-login", "a\nb", []AdvanceOption{AllowUnordered()}},
		{"quoted target", "3-1-login", `"x"`, []AdvanceOption{AllowUnordered()}},
		{"stamp with a newline", "3-1-login", Done, []AdvanceOption{Stamp("a\nb: c")}},
		{"stamp that opens a flow mapping", "3-1-login", Done, []AdvanceOption{Stamp("{project-root}/x")}},
		{"stamp with a colon-space", "3-1-login", Done, []AdvanceOption{Stamp("2026-07-23 (dev: done)")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, gotSrc, err := advance(t, sprint, tt.key, tt.target, tt.opts...)
			if !errors.Is(err, filetxn.ErrInvalidArgument) || !strings.HasPrefix(err.Error(), "board: Advance: ") {
				t.Errorf("Advance(%q, %q) error = %v, want filetxn.ErrInvalidArgument naming Advance", tt.key, tt.target, err)
			}
			if gotSrc != sprint {
				t.Errorf("Advance(%q, %q) changed the board", tt.key, tt.target)
			}
		})
	}
}

func TestAdvanceOnAMissingBoardIsNotFound(t *testing.T) {
	d, err := Parse(nil)
	if err != nil {
		t.Fatalf("Parse(nil) error = %v", err)
	}
	if got, err := d.Advance("3-1-login", Done); got != "" || !errors.Is(err, filetxn.ErrNotFound) || !strings.Contains(err.Error(), `"3-1-login"`) {
		t.Errorf("Advance on a missing board = %q, %v, want \"\" and filetxn.ErrNotFound naming the key", got, err)
	}
	got, src, err := advance(t, sprint, "9-9-ghost", Done)
	if got != "" || !errors.Is(err, filetxn.ErrNotFound) || !strings.Contains(err.Error(), `"9-9-ghost"`) || src != sprint {
		t.Errorf("Advance of an absent row = %q, %v (bytes changed %v), want \"\" and filetxn.ErrNotFound naming the key, bytes unchanged", got, err, src != sprint)
	}
	if d.Bytes() != nil {
		t.Errorf("missing board: Bytes() = %q, want nil", d.Bytes())
	}
}

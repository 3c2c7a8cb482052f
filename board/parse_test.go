package board

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/filetxn/filetxn"
)

func TestParseRefusesWhatItDoesNotUnderstand(t *testing.T) {
	tests := []struct {
		name, src string
		kind      string
		line      int
	}{
		{"empty file", "", kindNotBoard, 1},
		{"only comments", "# nothing\n", kindNotBoard, 1},
		{"a list", "- a\n- b\n", kindNotBoard, 1},
		{"a scalar", "hello\n", kindNotBoard, 1},
		{"another schema", "version: 6\nsprints:\n  - status: in_progress\n", kindNotBoard, 1},
		{"development_status is null", "generated: x\ndevelopment_status:\n# none yet\n", kindNotBoard, 2},
		{"development_status is a list", "generated: x\ndevelopment_status: []\n", kindNotBoard, 2},
		{"development_status is a scalar", "generated: x\ndevelopment_status: done\n", kindNotBoard, 2},
		{"development_status is an empty flow mapping", "generated: x\ndevelopment_status: {}\n", kindNotBoard, 2},
		{"development_status is a flow mapping", "generated: x\ndevelopment_status: {1-1-a: done}\n", kindNotBoard, 2},
		{"development_status twice", "development_status:\n  1-1-a: done\ndevelopment_status:\n  1-1-b: done\n", kindDuplicate, 3},
		{"a story twice", "development_status:\n  1-1-a: done\n  epic-1: done\n  1-1-a: backlog\n", kindDuplicate, 4},
		{"a flow mapping opened by a plain value", "x: 1\nstory_location: {project-root}/a\ndevelopment_status:\n  1-1-a: done\n", kindYAML, 2},
		{"a colon-space in a plain value", "last_updated: 2026-07-23 (dev-story 4-8 complete → review: ok)\ndevelopment_status:\n  1-1-a: done\n", kindYAML, 1},
		{"a tab indent", "development_status:\n\t1-1-a: done\n", kindYAML, 2},
		{"two documents", "development_status:\n  1-1-a: done\n---\nx: 1\n", kindYAML, 3},
		{"invalid UTF-8", "development_status:\n  1-1-a: d\xffone\n", kindYAML, 2},
		{"a control character", "development_status:\n  1-1-a: d\x0cone\n", kindYAML, 2},
		{"UTF-16", "\xff\xfed\x00e\x00", kindYAML, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse([]byte(tt.src))
			var fe *filetxn.FormatError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), "board: "+tt.kind+": ") {
				t.Fatalf("Parse(%q) = %v, %v, want a *filetxn.FormatError that says %q", tt.src, d, err, tt.kind)
			}
			if fe.Line != tt.line || !strings.HasPrefix(err.Error(), fmt.Sprintf("line %d: ", tt.line)) {
				t.Errorf("Parse(%q) error = %v (line %d), want line %d", tt.src, err, fe.Line, tt.line)
			}
			if wantKey := map[string]string{"development_status twice": "development_status", "a story twice": "1-1-a"}[tt.name]; fe.Key != wantKey {
				t.Errorf("Parse(%q) error's Key = %q, want %q", tt.src, fe.Key, wantKey)
			}
			if _, _, err := statusInBytes([]byte(tt.src), "1-1-a"); !errors.As(err, new(*filetxn.FormatError)) {
				t.Errorf("statusInBytes(%q) error = %v, want a *filetxn.FormatError", tt.src, err)
			}
		})
	}
}

func TestStatusReadsTheRowAsDocStatusDoes(t *testing.T) {
	src := []byte(sprint + "# tail\n")
	src = []byte(strings.Replace(string(src), "  4-1-thing: review\n", "  4-1-thing: review\n  4-2-old: drafted\n  4-3-odd: ' In progress '\n", 1))
	tests := []struct {
		key    string
		want   Status
		wantOK bool
	}{
		{"3-1-login", Done, true},
		{"3-2-digest-delivery", Backlog, true},
		{"4-2-old", ReadyForDev, true}, // drafted folds
		{"4-3-odd", "In progress", true},
		{"epic-3", Backlog, true},
		{"9-9-ghost", "", false},
		{"generated", "", false}, // not a row of development_status
	}
	for _, tt := range tests {
		got, ok, err := statusInBytes(src, tt.key)
		if got != tt.want || ok != tt.wantOK || err != nil {
			t.Errorf("statusInBytes(%q) = %q, %v, %v, want %q, %v, nil", tt.key, got, ok, err, tt.want, tt.wantOK)
		}
		d, _ := Parse(src)
		if s, ok := d.Status(tt.key); s != got || ok != tt.wantOK {
			t.Errorf("Status(%q) = %q, %v, want StatusInBytes's %q, %v", tt.key, s, ok, got, tt.wantOK)
		}
	}
	if _, _, err := statusInBytes([]byte("development_status: []\n"), "1-1-a"); !errors.As(err, new(*filetxn.FormatError)) {
		t.Errorf("statusInBytes(development_status: []) error = %v, want a *filetxn.FormatError", err)
	}
	if got, ok, err := statusInBytes(nil, "1-1-a"); got != "" || ok || err != nil {
		t.Errorf("statusInBytes(nil) = %q, %v, %v, want \"\", false, nil", got, ok, err)
	}
}

func TestStoriesEpicsAndNextActionable(t *testing.T) {
	src := `development_status:
  # Epic 1
  epic-1: done
  1-1-a: done
  1-2b-split: drafted  # legacy
  epic-1-retrospective: optional
  epic-2: backlog
  2-1-b: backlog
  epic-2-retro-item-1-fix-ci: open
  5.1-dotted: backlog
`
	d, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("Parse = %v", err)
	}
	wantStories := []Row{
		{Key: "1-1-a", Epic: 1, Number: 1, Slug: "a", Status: Done, Line: 4},
		{Key: "1-2b-split", Epic: 1, Number: 2, Split: "b", Slug: "split", Status: ReadyForDev, Line: 5},
		{Key: "2-1-b", Epic: 2, Number: 1, Slug: "b", Status: Backlog, Line: 8},
	}
	if got := d.Stories(); !reflect.DeepEqual(got, wantStories) {
		t.Errorf("Stories() = %+v, want %+v", got, wantStories)
	}
	wantEpics := []Row{{Key: "epic-1", Epic: 1, Status: Done, Line: 3}, {Key: "epic-2", Epic: 2, Status: Backlog, Line: 7}}
	if got := d.Epics(); !reflect.DeepEqual(got, wantEpics) {
		t.Errorf("Epics() = %+v, want %+v", got, wantEpics)
	}
	if got, ok := d.NextActionable(); got.Key != "1-2b-split" || !ok {
		t.Errorf("NextActionable() = %q, %v, want 1-2b-split, true", got.Key, ok)
	}
	if got, ok := mustDoc(t, "development_status:\n  1-1-a: done\n").NextActionable(); ok {
		t.Errorf("NextActionable() of a done board = %q, %v, want none", got.Key, ok)
	}
	for key, want := range map[string]Status{"epic-1-retrospective": "optional", "epic-2-retro-item-1-fix-ci": "open", "5.1-dotted": Backlog} {
		if got, ok := d.Status(key); got != want || !ok {
			t.Errorf("Status(%q) = %q, %v, want %q, true", key, got, ok, want)
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		key  string
		want class
	}{
		{"epic-3-retro-item-2-fix-ci", class{kind: kindRetroItem, epic: 3, num: 2, slug: "fix-ci"}},
		{"epic-3-retrospective", class{kind: kindRetro, epic: 3}},
		{"epic-3", class{kind: kindEpic, epic: 3}},
		{"3-2-digest-delivery", class{kind: kindStory, epic: 3, num: 2, slug: "digest-delivery"}},
		{"2-6a-first", class{kind: kindStory, epic: 2, num: 6, split: "a", slug: "first"}},
		{"1-2-3-x", class{kind: kindStory, epic: 1, num: 2, slug: "3-x"}},
		{"2-6ab-x", class{}},
		{"5.1-dotted", class{}},
		{"epic-5.1", class{}},
		{"epic-99999999999999999999", class{}},
		{"development Status", class{}},
	}
	for _, tt := range tests {
		if got := classify(tt.key); got != tt.want {
			t.Errorf("classify(%q) = %+v, want %+v", tt.key, got, tt.want)
		}
	}
}

// String shows a line as it stands in the file, for test messages.
func (l line) String() string { return l.text + l.term }

func TestSplitLinesMatchesTheParser(t *testing.T) {
	tests := []struct {
		src  string
		want []line
	}{
		{"", nil},
		{"a", []line{{"a", "", 0}}},
		{"a\n", []line{{"a", "\n", 0}}},
		{"a\r\nb\rc\nd", []line{{"a", "\r\n", 0}, {"b", "\r", 3}, {"c", "\n", 5}, {"d", "", 7}}},
		{"a\r\r\n", []line{{"a", "\r", 0}, {"", "\r\n", 2}}},
		{"a\u0085b\u2028c\u2029d", []line{{"a", "\u0085", 0}, {"b", "\u2028", 3}, {"c", "\u2029", 7}, {"d", "", 11}}},
		{"a\x0bb\x0cc", []line{{"a\x0bb\x0cc", "", 0}}}, // Python splits here; the parser rejects these
	}
	for _, tt := range tests {
		got := splitLines(tt.src)
		if (len(got) > 0 || len(tt.want) > 0) && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitLines(%q) = %#v, want %#v", tt.src, got, tt.want)
		}
		if j := string(joinLines(got)); j != tt.src {
			t.Errorf("joinLines(splitLines(%q)) = %q", tt.src, j)
		}
	}
	// A line separator inside a quoted value elsewhere is a line break for the parser too,
	// so the row after it is still found on the right line.
	src := "note: \"a\u2028b\"\ndevelopment_status:\n  1-1-a: backlog\n"
	got, err := advancedBytes([]byte(src), "1-1-a", Done)
	if want := strings.Replace(src, "1-1-a: backlog", "1-1-a: done", 1); err != nil || string(got) != want {
		t.Errorf("AdvancedBytes after an LS = %q, %v, want %q", got, err, want)
	}
}

package board

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/stretchr/testify/require"
)

var newDate = time.Date(2026, 6, 1, 23, 30, 0, 0, time.UTC)

// TestNewWritesABoardThatParsesAsItSays: the board New returns reads back through Parse
// as the same Doc (its bytes, its stories with their keys and lines, its epics), and
// carries BMAD's header and STATUS DEFINITIONS comment.
func TestNewWritesABoardThatParsesAsItSays(t *testing.T) {
	d, err := New("RPG Engine", newDate,
		Row{Epic: 2, Number: 1, Slug: "later"},
		Row{Epic: 1, Number: 2, Split: "a", Slug: "split-story", Status: Review},
		Row{Epic: 1, Number: 1, Slug: "first"},
	)
	require.NoError(t, err, "New(...) = %v, want nil", err)
	b := d.Bytes()
	re, err := Parse(b)
	require.NoError(t, err, "Parse(New(...).Bytes()) = %v, want nil", err)
	require.Equal(t, string(b), string(re.Bytes()), "Parse(New(...).Bytes()).Bytes() = %q, want New's bytes", re.Bytes())
	require.Equal(t, d.Stories(), re.Stories(), "Stories() = %v, want %v", re.Stories(), d.Stories())
	keys := []string{}
	for _, st := range d.Stories() {
		keys = append(keys, st.Key+"="+string(st.Status))
	}
	require.Equal(t, []string{"1-2a-split-story=review", "1-1-first=backlog", "2-1-later=backlog"}, keys, "New's stories = %v, want epic 1's in the order given, then epic 2's", keys)
	require.Len(t, d.Epics(), 2, "Epics() = %v, want epic-1 and epic-2", d.Epics())
	for _, want := range []string{"# generated: 2026-06-01\n", "\n# STATUS DEFINITIONS:\n", "\nlast_updated: 2026-06-01\n", "\nproject: RPG Engine\n", "  epic-1-retrospective: optional\n\n  epic-2: backlog\n"} {
		require.Contains(t, string(b), want, "New(...).Bytes() = %q, want it to hold %q", b, want)
	}
	require.NotNil(t, d.Bytes(), "New(...).Bytes() = nil, want a board that exists")
}

// TestNewRefusesWhatItCannotWrite: each bad argument is a filetxn.ErrInvalidArgument naming
// New and the argument.
func TestNewRefusesWhatItCannotWrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		project string
		stories []Row
		want    string
	}{
		{"empty project", "", nil, "project"},
		{"project with a comment", "a # b", nil, "project"},
		{"epic 0", "p", []Row{{Epic: 0, Number: 1, Slug: "x"}}, "0-1-x"},
		{"number 0", "p", []Row{{Epic: 1, Number: 0, Slug: "x"}}, "1-0-x"},
		{"empty slug", "p", []Row{{Epic: 1, Number: 1}}, "1-1-"},
		{"slug with a colon and space", "p", []Row{{Epic: 1, Number: 1, Slug: "a: b"}}, "1-1-a: b"},
		{"two-letter split", "p", []Row{{Epic: 1, Number: 1, Split: "ab", Slug: "x"}}, "split"},
		{"status outside the order", "p", []Row{{Epic: 1, Number: 1, Slug: "x", Status: "completed"}}, "completed"},
		{"a key twice", "p", []Row{{Epic: 1, Number: 1, Slug: "x"}, {Epic: 1, Number: 1, Slug: "x", Status: Done}}, "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(tc.project, newDate, tc.stories...)
			require.True(t, d == nil && errors.Is(err, filetxn.ErrInvalidArgument), "New(%q, %v) = %v, %v, want nil, filetxn.ErrInvalidArgument", tc.project, tc.stories, d, err)
			require.True(t, strings.HasPrefix(err.Error(), "board: New: "), "New(%q, %v) = %v, want it to name New", tc.project, tc.stories, err)
			require.Contains(t, err.Error(), tc.want, "New(%q, %v) = %v, want it to name %q", tc.project, tc.stories, err, tc.want)
		})
	}
}

// TestNewBoardIsCreatedThroughMutate: replacing the Doc of a missing board inside
// Store.Mutate creates the file with New's bytes, and the board then advances through the
// Store like any other.
func TestNewBoardIsCreatedThroughMutate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sprint-status.yaml")
	s, err := Open(path, filetxn.WithStateRoot(filepath.Join(dir, "state")))
	require.NoError(t, err)
	nd, err := New("p", newDate, Row{Epic: 1, Number: 1, Slug: "a"})
	require.NoError(t, err)
	ctx := context.Background()
	c, err := s.Mutate(ctx, func(d *Doc) error {
		require.Nil(t, d.Bytes(), "Doc of a missing board: Bytes() = %q, want nil", d.Bytes())
		*d = *nd
		return nil
	})
	require.True(t, err == nil && c.Written, "Mutate(replace with New) = %+v, %v, want written, nil", c, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(nd.Bytes()), string(got), "the created board = %q, want New's bytes", got)
	st, err := s.Advance(ctx, "1-1-a", InProgress)
	require.True(t, err == nil && st == InProgress, "Advance(1-1-a, in-progress) = %q, %v, want in-progress, nil", st, err)
	got, _ = os.ReadFile(path)
	require.True(t, strings.Contains(string(got), "  epic-1: in-progress\n  1-1-a: in-progress\n"), "board after Advance = %q, want story and epic in progress", got)
}

package ledger

import (
	"slices"
	"strings"
	"testing"
)

func TestMerge(t *testing.T) {
	entry := func(id, title string) string {
		return "### " + id + ": " + title + "\norigin: o-" + title + "\nstatus: open\n"
	}
	head := "# Deferred Work\n\n"
	snapshot := head + entry("DW-1", "one") + "\n" + entry("DW-2", "two") + "\n## Notes\n\nkeep me\n\n" + entry("DW-5", "ours")
	for _, tc := range []struct {
		name                        string
		current                     string
		want                        string
		carried, collide, remainder []string
	}{
		{
			name:    "unchanged",
			current: snapshot,
			want:    snapshot,
		},
		{
			// A reset dropped DW-5 and the notes; nothing else happened.
			name:      "lost entry carried back",
			current:   head + entry("DW-1", "one") + "\n" + entry("DW-2", "two"),
			want:      head + entry("DW-1", "one") + "\n" + entry("DW-2", "two") + "\n" + entry("DW-5", "ours"),
			carried:   []string{"DW-5"},
			remainder: []string{"## Notes\n\nkeep me"},
		},
		{
			// After the reset a rival minted its own DW-5: ours is a collision,
			// never a second DW-5, and the rival's is kept.
			name:      "rival reused the id",
			current:   head + entry("DW-1", "one") + "\n" + entry("DW-2", "two") + "\n" + entry("DW-5", "rival"),
			want:      head + entry("DW-1", "one") + "\n" + entry("DW-2", "two") + "\n" + entry("DW-5", "rival"),
			collide:   []string{"DW-5"},
			remainder: []string{"## Notes\n\nkeep me"},
		},
		{
			// Others appended meanwhile; a closed DW-1 differs from the snapshot.
			name:    "appends kept, changed entry is a collision",
			current: head + strings.Replace(entry("DW-1", "one"), "open", "done 2026-06-11", 1) + "\n" + entry("DW-2", "two") + "\n## Notes\n\nkeep me\n\n" + entry("DW-6", "new"),
			want:    head + strings.Replace(entry("DW-1", "one"), "open", "done 2026-06-11", 1) + "\n" + entry("DW-2", "two") + "\n## Notes\n\nkeep me\n\n" + entry("DW-6", "new") + "\n" + entry("DW-5", "ours"),
			carried: []string{"DW-5"},
			collide: []string{"DW-1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustParse(t, tc.current)
			rep := d.Merge(mustParse(t, snapshot))
			if d.textString() != tc.want {
				t.Errorf("merged = %q\nwant     %q", d.textString(), tc.want)
			}
			if !slices.Equal(rep.Carried, tc.carried) || !slices.Equal(rep.Collisions, tc.collide) || !slices.Equal(rep.Remainder, tc.remainder) {
				t.Errorf("report = %+v, want carried %v collisions %v remainder %q", rep, tc.carried, tc.collide, tc.remainder)
			}
			if len(d.duplicates()) != 0 {
				t.Errorf("merge published a duplicate id: %v", d.duplicates())
			}
			if again := d.Merge(mustParse(t, snapshot)); len(again.Carried) != 0 {
				t.Errorf("second merge carried %v", again.Carried)
			}
		})
	}
}

func TestMergeNeverPublishesADuplicate(t *testing.T) {
	snap := mustParse(t, "### DW-3: a\nstatus: open\n\n### DW-3: b\nstatus: open\n")
	d := mustParse(t, "")
	rep := d.Merge(snap)
	if !slices.Equal(rep.Carried, []string{"DW-3"}) || !slices.Equal(rep.Collisions, []string{"DW-3"}) || len(d.duplicates()) != 0 {
		t.Errorf("Merge = %+v into %q", rep, d.textString())
	}
}

func TestMergeRefusesAnEntryThatWouldNotReadBack(t *testing.T) {
	// In the snapshot DW-2's closing fence closes a block opened above it; in
	// the ledger it would open one and swallow whatever follows.
	snap := mustParse(t, "```\nx\n### DW-1: quoted\n```\n### DW-2: b\nstatus: open\n```\n")
	d := mustParse(t, "### DW-1: mine\nstatus: open\n")
	d.Merge(snap)
	if got := ids(d); !slices.Equal(got, []string{"DW-1", "DW-2"}) {
		t.Errorf("ids after merge = %v (%q)", got, d.textString())
	}
	snap2 := mustParse(t, "~~~\n### DW-1: quoted\n~~~\n### DW-7: opens a fence\nstatus: open\n```\n")
	d2 := mustParse(t, "### DW-8: after\nstatus: open\n```\n")
	rep := d2.Merge(snap2)
	if len(rep.Carried) != 0 || !slices.Equal(rep.Collisions, []string{"DW-7"}) {
		t.Errorf("Merge = %+v into %q; want DW-7 refused", rep, d2.textString())
	}
}

package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/internal/testkit"
)

// batchSeed is an open-less ledger whose DW-1 is done and carries the
// spec-batch.md marker (format section 1.8).
const batchSeed = "# Deferred Work\n\n### DW-1: already handled\norigin: code review of spec-batch.md\nlocation: n/a\nsource_spec: `spec-batch.md`\nreason: r0\nstatus: done 2026-06-01\n"

var batchSpecs = []Spec{
	{Title: "first", Origin: "code review of spec-x.md", SourceSpec: "spec-x.md", Reason: "r1"},
	{Title: "first", Origin: "code review of spec-x.md", SourceSpec: "spec-x.md", Reason: "r1"},
	{Title: "closed twin returns", Origin: "code review of spec-batch.md", SourceSpec: "spec-batch.md", Reason: "came back"},
}

func TestAppendBatchBytes(t *testing.T) {
	batch := mustParse(t, batchSeed)
	got, err := batch.Append(batchSpecs...)
	if err != nil || !slices.Equal(got, []string{"DW-2", "", "DW-3"}) {
		t.Fatalf("Append = %q, %v; want [DW-2 \"\" DW-3]", got, err)
	}
	want := batchSeed +
		"\n### DW-2: first\norigin: code review of spec-x.md\nlocation: n/a\nsource_spec: `spec-x.md`\nreason: r1\nstatus: open\n" +
		"\n### DW-3: closed twin returns\norigin: code review of spec-batch.md\nlocation: n/a\nsource_spec: `spec-batch.md`\nreason: came back\nstatus: open\n"
	if batch.textString() != want {
		t.Errorf("text = %q\nwant   %q", batch.textString(), want)
	}
	serial := mustParse(t, batchSeed)
	for _, s := range batchSpecs {
		serial.Append(s)
	}
	if serial.textString() != batch.textString() {
		t.Errorf("serial = %q\nbatch  = %q", serial.textString(), batch.textString())
	}
}

func TestAppendMintsPastTheHighestID(t *testing.T) {
	d := mustParse(t, ledgerFixture)
	specs := []Spec{
		{Title: "a", Origin: "o-a", SourceSpec: "s.md", Reason: "r"},
		{Title: "b", Origin: "o-b", SourceSpec: "s.md", Reason: "r", Severity: "low"},
		{Title: "c", Origin: "o-c", SourceSpec: "s.md", Reason: "r", Status: "done 2026-06-11", Location: "x.go:1"},
	}
	got, err := d.Append(specs...)
	if err != nil || !slices.Equal(got, []string{"DW-4", "DW-5", "DW-6"}) {
		t.Fatalf("Append = %v, %v; want DW-4..6", got, err)
	}
	if !strings.HasPrefix(d.textString(), ledgerFixture) {
		t.Errorf("existing bytes changed")
	}
	tail := d.textString()[len(ledgerFixture):]
	want := "\n### DW-4: a\norigin: o-a\nlocation: n/a\nsource_spec: `s.md`\nreason: r\nstatus: open\n" +
		"\n### DW-5: b\norigin: o-b\nlocation: n/a\nsource_spec: `s.md`\nseverity: low\nreason: r\nstatus: open\n" +
		"\n### DW-6: c\norigin: o-c\nlocation: x.go:1\nsource_spec: `s.md`\nreason: r\nstatus: done 2026-06-11\n"
	if tail != want {
		t.Errorf("appended %q\nwant     %q", tail, want)
	}
}

func TestAppendSeparator(t *testing.T) {
	for _, tc := range []struct{ text, sep string }{
		{"", ""},
		{"# Deferred Work\n\n", ""},
		{"# Deferred Work\n", "\n"},
		{"# Deferred Work", "\n\n"},
	} {
		d := mustParse(t, tc.text)
		d.Append(Spec{Title: "t", Origin: "o", SourceSpec: "s", Reason: "r"})
		want := tc.text + tc.sep + "### DW-1: t\norigin: o\nlocation: n/a\nsource_spec: `s`\nreason: r\nstatus: open\n"
		if d.textString() != want {
			t.Errorf("Append to %q = %q, want %q", tc.text, d.textString(), want)
		}
	}
}

func TestAppendDedupesAgainstOpenEntriesOnly(t *testing.T) {
	d := mustParse(t, "### DW-4: existing\norigin: test\nsource_spec: `spec-foo.md` \t\nstatus: open\n")
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Title: "t", Origin: "test", SourceSpec: "spec-foo.md"}, ""},
		{Spec{Title: "t", Origin: "test", SourceSpec: "spec-bar.md"}, "DW-5"},
		{Spec{Title: "t", Origin: "test", SourceSpec: "spec-baz.md", CrossSpecDedupe: true}, ""},
		{Spec{Title: "t", Origin: "tes", SourceSpec: "spec-foo.md"}, "DW-6"},
	} {
		got, _ := d.Append(tc.spec)
		if got[0] != tc.want {
			t.Errorf("Append(%+v) = %q, want %q", tc.spec, got[0], tc.want)
		}
	}
	// Multi-line values are made one line before the dedupe, so a replay dedupes.
	d = mustParse(t, "")
	s := Spec{Title: "a\nb", Origin: "line one\r\nline two", SourceSpec: "s", Reason: "x\u2028y"}
	first, _ := d.Append(s)
	second, _ := d.Append(s)
	if first[0] != "DW-1" || second[0] != "" {
		t.Errorf("replayed multi-line Append = %q, %q; want DW-1, \"\"", first[0], second[0])
	}
	if want := "### DW-1: a b\norigin: line one line two\nlocation: n/a\nsource_spec: `s`\nreason: x y\nstatus: open\n"; d.textString() != want {
		t.Errorf("text = %q, want %q", d.textString(), want)
	}
}

func TestAppendUntitled(t *testing.T) {
	for _, title := range []string{"\n\n", "  ", ""} {
		d := mustParse(t, "")
		d.Append(Spec{Title: title, Origin: "o", SourceSpec: "s", Reason: "r"})
		e, ok := d.Entry("DW-1")
		if !ok || e.Title != "(untitled DW-1)" {
			t.Errorf("Append(title %q) = %+v, %v; want (untitled DW-1)", title, e, ok)
		}
	}
}

func TestAppendValidatesEverySpecFirst(t *testing.T) {
	for _, tc := range []struct {
		spec  Spec
		field string
		err   error
	}{
		{Spec{Title: "b"}, "specs[1].Origin", filetxn.ErrInvalidArgument}, // no identity: every later one would be skipped as its duplicate
		{Spec{Title: "b", Origin: "o2", Severity: "urgent"}, "specs[1].Severity", filetxn.ErrInvalidArgument},
		{Spec{Title: "b", Origin: "o2", Severity: "High"}, "specs[1].Severity", filetxn.ErrInvalidArgument},
		{Spec{Title: "b", Origin: "o2", Status: "closed"}, "specs[1].Status", filetxn.ErrInvalidArgument},
		{Spec{Title: "b", Origin: "o2", Status: "done"}, "specs[1].Status", filetxn.ErrInvalidArgument},
		{Spec{Title: "b", Origin: "o2", Status: "done 2026-02-30"}, "specs[1].Status", filetxn.ErrInvalidArgument},
		{Spec{Title: "b", Origin: "o2", Status: "done  2026-02-03"}, "specs[1].Status", filetxn.ErrInvalidArgument},
		{Spec{Title: "b", Origin: "o2", Status: " open"}, "specs[1].Status", filetxn.ErrInvalidArgument},
	} {
		d := mustParse(t, ledgerFixture)
		_, err := d.Append(Spec{Title: "a", Origin: "o"}, tc.spec)
		bad := tc.spec.Severity + tc.spec.Status
		if !errors.Is(err, tc.err) || !isArg(err, "Append", tc.field, bad) || d.changed() {
			t.Errorf("Append(..., %+v) = %v, changed=%v; want %v on %s", tc.spec, err, d.changed(), tc.err, tc.field)
			continue
		}
	}
}

func TestEmptyBatchesChangeNothing(t *testing.T) {
	d := mustParse(t, ledgerFixture)
	if got, err := d.Append(); len(got) != 0 || err != nil {
		t.Errorf("Append() = %v, %v", got, err)
	}
	if got, err := d.MarkDone(nil, "2026-06-11", "n"); len(got) != 0 || err != nil {
		t.Errorf("MarkDone(nil) = %v, %v", got, err)
	}
	if got, err := d.MarkOpen(nil, "n", operationID); len(got) != 0 || err != nil {
		t.Errorf("MarkOpen(nil) = %v, %v", got, err)
	}
	if got, err := d.MarkSeenAgain(nil, "2026-06-11", "n"); len(got) != 0 || err != nil {
		t.Errorf("MarkSeenAgain(nil) = %v, %v", got, err)
	}
	if d.changed() {
		t.Errorf("an empty batch changed the text")
	}
	// Validation still runs for an empty batch.
	if _, err := d.MarkDone(nil, "2026-02-30", "n"); !errors.Is(err, filetxn.ErrInvalidArgument) {
		t.Errorf("MarkDone(nil, bad date) = %v, want filetxn.ErrInvalidArgument", err)
	}
	if _, err := d.MarkOpen(nil, "n", ""); !errors.Is(err, filetxn.ErrInvalidArgument) {
		t.Errorf("MarkOpen(nil, empty op) = %v, want filetxn.ErrInvalidArgument", err)
	}
}

// TestScriptedInterleaveLosesNoUpdate is bmad-loop's scripted interleave on
// one Doc: rival B appends (minting DW-4) just before A closes DW-1 on the
// version B published. Both effects survive.
func TestScriptedInterleaveLosesNoUpdate(t *testing.T) {
	d := mustParse(t, ledgerFixture)
	got, _ := d.Append(Spec{Title: "rival", Origin: "rival-origin", SourceSpec: "rival.md", Reason: "r"})
	if got[0] != "DW-4" {
		t.Fatalf("rival minted %q, want DW-4", got[0])
	}
	d2 := mustParse(t, d.textString())
	if got, _ := d2.MarkDone([]string{"DW-1"}, "2026-06-11", "by A"); len(got) != 1 {
		t.Fatalf("MarkDone = %v", got)
	}
	e4, _ := d2.Entry("DW-4")
	e1, _ := d2.Entry("DW-1")
	if len(d2.Entries()) != 4 || !e4.Open() || !strings.Contains(e4.Body, "origin: rival-origin") || e1.Status != "done 2026-06-11" || !strings.Contains(e1.Body, "resolution: by A") {
		t.Errorf("final text = %q", d2.textString())
	}
}

func TestNextID(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"", "DW-1"},
		{"# Deferred Work\n", "DW-1"},
		{"### DW-3: a\nstatus: open\n\n### DW-7: b\nstatus: done 2026-01-01\n", "DW-8"},
		{"prose mentions DW-41 and (DW-12).\n", "DW-42"},
		{"```\n### DW-90: fenced example\n```\n", "DW-91"},
		{"## DW-N1 — variant\n### DW-10 extension (Story 9.1c): x\n", "DW-11"},
		{"DW-007 and DW-7\n", "DW-8"},
		{"xDW-99 DW-99x DW-99_ _DW-99 DW-99é éDW-99 DW-5\n", "DW-6"},
		{"DW-99.", "DW-100"},
		{"DW-DW-5", "DW-6"},
		{"DW-99999999999999999999999", "DW-100000000000000000000000"},
		{"DW-\n", "DW-1"},
		{"DDW-5 D DW", "DW-1"},
		{"D\nDW-5 D", "DW-6"},
	} {
		d := mustParse(t, tc.text)
		if got := d.nextID(); got != tc.want {
			t.Errorf("NextID(%q) = %s, want %s", tc.text, got, tc.want)
		}
	}
	if got := mustParse(t, "DW-41").nextSeq(); got != 42 {
		t.Errorf("NextSeq() = %d, want 42", got)
	}
	if got := mustParse(t, "DW-99999999999999999999999").nextSeq(); got != 1<<64-1 {
		t.Errorf("NextSeq() of a huge id = %d, want MaxUint64", got)
	}
	// A close removes a reference in the status line: the next id follows the text.
	d := mustParse(t, "### DW-1: a\nstatus: open see DW-50\n")
	d.MarkDone([]string{"DW-1"}, "2026-06-11", "x")
	if got := d.nextID(); got != "DW-2" {
		t.Errorf("NextID after the close = %s, want DW-2", got)
	}
	// A title referring to a higher id raises the next one.
	d = mustParse(t, "")
	got, _ := d.Append(Spec{Title: "supersedes DW-40", Origin: "o1"}, Spec{Title: "b", Origin: "o2"})
	if !slices.Equal(got, []string{"DW-1", "DW-41"}) {
		t.Errorf("Append = %v, want [DW-1 DW-41]", got)
	}
}

// TestConcurrentAppendsShareOneWrite: seven Appends that arrive while a
// Mutate of the same Store holds the lock queue behind it and are published
// together by one write after the leader's own: two renames for eight
// calls, eight distinct ids, every entry in the file as a fresh Store reads
// it. Ablation: the engine's take() returning the leader's call alone (no
// group commit) makes eight renames, and this test goes red.
func TestConcurrentAppendsShareOneWrite(t *testing.T) {
	s := newStore(t, "# Deferred Work\n")
	var writes atomic.Int64
	queued := make(chan struct{}, 16) // the hook runs under the group's mutex: it must not block
	seam.Set(t, func(p seam.Point, path string) error {
		switch {
		case path != s.path:
		case p == seam.Replaced:
			writes.Add(1)
		case p == seam.Queued:
			queued <- struct{}{}
		}
		return nil
	})
	ctx := context.Background()
	spec := func(name string) Spec {
		return Spec{Title: name, Origin: "origin of " + name, SourceSpec: "s.md", Reason: "r"}
	}
	inside, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	leader := make(chan error, 1)
	go func() {
		_, err := s.Mutate(ctx, func(d *Doc) error {
			if _, err := d.Append(spec("leader")); err != nil {
				return err
			}
			once.Do(func() { close(inside) })
			<-release
			return nil
		})
		leader <- err
	}()
	testkit.Recv(t, inside, "the leader to hold the lock")
	type result struct {
		ids []string
		err error
	}
	results := make(chan result, 7)
	for i := range 7 {
		go func() {
			ids, err := s.Append(ctx, spec(fmt.Sprintf("follower %d", i)))
			results <- result{ids, err}
		}()
		testkit.Recv(t, queued, "an Append to queue")
	}
	close(release)
	require.NoError(t, testkit.Recv(t, leader, "the leader"), "leader's Mutate = got, want nil")
	seen := map[string]bool{"DW-1": true}
	for range 7 {
		r := testkit.Recv(t, results, "an Append")
		require.NoError(t, r.err, "Append = %v, want nil", r.err)
		require.Len(t, r.ids, 1, "Append = %q, want one id", r.ids)
		require.False(t, seen[r.ids[0]], "Append = %q, want an id nobody else got (seen %v)", r.ids, seen)
		seen[r.ids[0]] = true
	}
	require.Equal(t, int64(2), writes.Load(), "renames for 8 calls = %d, want 2 (the leader's, then one for the 7 queued)", writes.Load())
	d, err := must(Open(s.path, filetxn.WithStateRoot(t.TempDir()))).View(context.Background())
	require.NoError(t, err)
	require.Len(t, openIDs(d), 8, "open entries in the file = %v, want 8", openIDs(d))
	for _, id := range openIDs(d) {
		require.True(t, seen[id], "entry %s in the file, want only the ids returned %v", id, seen)
	}
}

// TestEncodeOfAGrowingDocCopiesOnlyWhatWasAdded: the codec's Encode of a Doc
// that only grew since its last Encode extends the same buffer, leaving the
// bytes it returned before as they were, and gives Bytes' bytes; after an
// edit in the middle it encodes afresh. Ablations: an encode that always
// extends its buffer (no prefix check) publishes stale bytes after the
// close; one that always copies afresh fails the shared-buffer check.
func TestEncodeOfAGrowingDocCopiesOnlyWhatWasAdded(t *testing.T) {
	d := mustParse(t, ledgerFixture)
	_, err := d.Append(Spec{Title: "a", Origin: "o-a", SourceSpec: "s.md", Reason: "r"})
	require.NoError(t, err)
	first, _ := new(codec).Encode(d)
	kept := string(first)
	require.Equal(t, string(d.Bytes()), kept, "Encode after one append = got, want Bytes()")

	_, err = d.Append(Spec{Title: "b", Origin: "o-b", SourceSpec: "s.md", Reason: "r"})
	require.NoError(t, err)
	second, _ := new(codec).Encode(d)
	require.Equal(t, string(d.Bytes()), string(second), "Encode after two appends = got, want Bytes()")
	require.Equal(t, kept, string(first), "the first Encode's bytes = got, want them unchanged by the second")
	require.Same(t, &first[0], &second[0], "second Encode = a new buffer, want the first one extended")

	_, err = d.MarkDone([]string{"DW-1"}, "2026-06-11", "n")
	require.NoError(t, err)
	third, _ := new(codec).Encode(d)
	require.Equal(t, string(d.Bytes()), string(third), "Encode after a close = got, want Bytes()")
	require.Equal(t, kept, string(first), "the first Encode's bytes = got, want them unchanged by the third")
}

// TestGroupedAppendsAcrossProcesses: 3 processes of 4 goroutines each make
// 20 Store.Appends per goroutine at once, so that appends group within each
// process while the processes exclude each other through the lock. The
// ledger ends with all 240 entries under 240 distinct ids, each id reported
// to its caller naming that caller's entry. Ablation: giving each process
// its own lock file (no exclusion between them) turns it red: appends fail
// (each process removes the others' temporary files as stale) or are lost.
func TestGroupedAppendsAcrossProcesses(t *testing.T) {
	const procs, goroutines, each = 3, 4, 20
	ctx := context.Background()
	open := func(dir string) *Store {
		return must(Open(filepath.Join(dir, "deferred-work.md"), filetxn.WithStateRoot(filepath.Join(dir, crossProcState)), filetxn.WithoutSync()))
	}
	origin := func(p, g, j int) string { return fmt.Sprintf("process %d goroutine %d item %d", p, g, j) }
	if c := testkit.Child(t); c != nil {
		s := open(c.Dir)
		ids := make([][]string, goroutines)
		var wg sync.WaitGroup
		c.Barrier()
		for g := range goroutines {
			wg.Go(func() {
				for j := range each {
					got, err := s.Append(ctx, Spec{Title: "grouped", Origin: origin(c.Index, g, j), SourceSpec: "spec-group.md", Reason: "r"})
					if err != nil || len(got) != 1 || got[0] == "" {
						t.Errorf("Append(%s) = %v, %v, want one id", origin(c.Index, g, j), got, err)
						return
					}
					ids[g] = append(ids[g], got[0])
				}
			})
		}
		wg.Wait()
		for g := range goroutines {
			writeLines(t, filepath.Join(c.Dir, fmt.Sprintf("ids-%d-%d", c.Index, g)), ids[g])
		}
		return
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deferred-work.md"), []byte("# Deferred Work\n"), 0o644))
	grp := testkit.Start(t, procs, dir)
	grp.Release()
	grp.Wait()

	d, err := open(dir).View(ctx)
	require.NoError(t, err)
	require.Empty(t, d.duplicates(), "duplicated ids = %v, want none", d.duplicates())
	entries := d.Entries()
	require.Len(t, entries, procs*goroutines*each, "entries after %d appends = %d, want %d", procs*goroutines*each, len(entries), procs*goroutines*each)
	byID := make(map[string]Entry, len(entries))
	for _, e := range entries {
		byID[e.ID] = e
	}
	for p := range procs {
		for g := range goroutines {
			ids := readLines(t, filepath.Join(dir, fmt.Sprintf("ids-%d-%d", p, g)))
			require.Len(t, ids, each, "ids reported to process %d goroutine %d = %d, want %d", p, g, len(ids), each)
			for j, id := range ids {
				e, ok := byID[id]
				require.True(t, ok && strings.Contains(e.Body, "origin: "+origin(p, g, j)+"\n"), "Append(%s) = %s, want the id of its entry in the file", origin(p, g, j), id)
			}
		}
	}
}

// TestAppendsToOneDocMatchFreshParses: Appends made one after another on one
// Doc (as a group commit makes them, one per caller) give the ids and text
// that each would give on a fresh parse of the text before it, also after
// an edit in the middle that adds an origin line the Doc's originSet (built
// once it has made more than originIndexAfter searches) has not seen.
// Ablation: replace keeping the Doc's originSet misses the new line,
// appends a spec already filed, and this test goes red.
func TestAppendsToOneDocMatchFreshParses(t *testing.T) {
	spec := func(origin string) Spec {
		return Spec{Title: "t", Origin: origin, SourceSpec: "s.md", Reason: "r"}
	}
	d := mustParse(t, ledgerFixture)
	check := func(sp Spec, want string) {
		t.Helper()
		fresh := mustParse(t, d.textString())
		wantIDs, err := fresh.Append(sp)
		require.NoError(t, err)
		require.Equal(t, want, wantIDs[0], "Append(%q) on a fresh parse = %q, want %q", sp.Origin, wantIDs[0], want)
		got, err := d.Append(sp)
		require.NoError(t, err)
		require.Equal(t, wantIDs, got, "Append(%q) on the same Doc = %q, want %q", sp.Origin, got, wantIDs)
		require.Equal(t, fresh.textString(), d.textString(), "text after Append(%q) on the same Doc = got, want a fresh parse's", sp.Origin)
	}
	// Enough appends that the Doc keeps its index of origin lines.
	for i := range originIndexAfter {
		check(spec(fmt.Sprintf("o-warm-%d", i)), fmt.Sprintf("DW-%d", 4+i))
	}
	check(spec("o-1"), fmt.Sprintf("DW-%d", 4+originIndexAfter))
	check(spec("o-2"), fmt.Sprintf("DW-%d", 5+originIndexAfter))
	check(spec("o-1"), "")
	// An edit in the middle: an open entry with a new origin before the rest.
	text := d.textString()
	at := strings.Index(text, "### ")
	d.setText(text[:at] + "### DW-90: inserted\norigin: o-inserted\nsource_spec: `s.md`\nstatus: open\n\n" + text[at:])
	check(spec("o-inserted"), "")
	check(spec("o-3"), "DW-91")
}

// TestContainsRareIsContains: containsRare agrees with strings.Contains on
// long texts of few letters (so that every byte of the value is common and
// hits fail often), with the value cut from anywhere in the text (its very
// end included) or made up, and on a text where the value comes only after
// thousands of near misses. Ablations: testing start+len(v) >= len(s) (a
// value at the very end missed), or the fallback answering false instead of
// searching the rest, each turn it red.
func TestContainsRareIsContains(t *testing.T) {
	nearMisses := strings.Repeat("ab", 4*rareSample) + "abb"
	require.True(t, containsRare([]byte(nearMisses), "abb"), "containsRare((ab)^n abb, abb) = false, want true")
	rapid.Check(t, func(t *rapid.T) {
		letters := rapid.SampledFrom([]byte("ab-`\n"))
		chunk := string(rapid.SliceOfN(letters, 1, 48).Draw(t, "chunk"))
		s := strings.Repeat(chunk, 2*rareSample/len(chunk)+rapid.IntRange(1, 64).Draw(t, "extra"))
		if rapid.Bool().Draw(t, "mutate") {
			at := rapid.IntRange(0, len(s)-1).Draw(t, "at")
			s = s[:at] + string(rapid.SliceOfN(letters, 1, 8).Draw(t, "insert")) + s[at:]
		}
		var v string
		switch rapid.IntRange(0, 2).Draw(t, "kind") {
		case 0: // cut from the text
			n := rapid.IntRange(2, 40).Draw(t, "len")
			at := rapid.IntRange(0, len(s)-n).Draw(t, "from")
			v = s[at : at+n]
		case 1: // the text's end
			v = s[len(s)-rapid.IntRange(2, 40).Draw(t, "tail"):]
		default:
			v = string(rapid.SliceOfN(letters, 2, 40).Draw(t, "made up"))
		}
		if got, want := containsRare([]byte(s), v), strings.Contains(s, v); got != want {
			t.Fatalf("containsRare(%d-byte text, %q) = %v, want %v", len(s), v, got, want)
		}
	})
}

package filetxn

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestALoggedLineIsAppendedOnce runs intentAppend.apply, the append of a
// line that a commit logs with its files (and that its recovery redoes), on
// every state a crash, a lock-free appender or a power cut can leave the
// log in, twice each: the line ends up in the log once, whole, on a line of
// its own, and the log's other bytes are kept.
//
// Ablations seen red: the search for the line dropped (every case, the
// second apply logging it again); the search not bound to a line start
// (the line found at the end of another, and not logged); the rest of a
// cut append not finished (the cut cases get the whole line after a broken
// one); no newline before the line on a log whose last line is not whole
// (the line joins it).
func TestALoggedLineIsAppendedOnce(t *testing.T) {
	const old = "{\"n\":1}\n"
	const line = "{\"n\":2,\"pid\":7}\n"
	const two = "{\"n\":2}\n{\"n\":3}\n" // a tick settled and the tick itself: two lines in one append
	const busy = "{\"skip\":\"busy\"}\n"
	for _, c := range []struct {
		name string
		log  string // the log before apply, "-" for none
		at   int64
		data string
		want string
	}{
		{name: "not made", log: old, at: int64(len(old)), data: line, want: old + line},
		{name: "no log", log: "-", data: line, want: line},
		{name: "empty log", log: "", data: line, want: line},
		{name: "made", log: old + line, at: int64(len(old)), data: line, want: old + line},
		{name: "a busy line first, not made", log: old + busy, at: int64(len(old)), data: line, want: old + busy + line},
		{name: "a busy line first, made", log: old + busy + line, at: int64(len(old)), data: line, want: old + busy + line},
		{name: "made, a busy line after", log: old + line + busy, at: int64(len(old)), data: line, want: old + line + busy},
		{name: "cut in the line", log: old + line[:5], at: int64(len(old)), data: line, want: old + line},
		{name: "cut between two lines", log: old + two[:8], at: int64(len(old)), data: two, want: old + two},
		{name: "cut in the second line", log: old + two[:11], at: int64(len(old)), data: two, want: old + two},
		{name: "a torn last line before it", log: old + "{\"n\":", at: int64(len(old)) + 5, data: line, want: old + "{\"n\":\n" + line},
		{name: "the end of another line", log: old + "x" + line, at: int64(len(old)), data: line, want: old + "x" + line + line},
		{name: "shorter than at (its end lost to a power cut)", log: old[:3], at: int64(len(old)), data: line, want: old[:3] + "\n" + line},
		{name: "shorter than at, made", log: line, at: int64(len(old)) + 40, data: line, want: line},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ticks.jsonl")
			if c.log != "-" {
				require.NoError(t, os.WriteFile(path, []byte(c.log), 0o644))
			}
			a := intentAppend{Path: path, At: c.at, Data: c.data, Durable: true}
			for range 2 {
				require.NoError(t, a.apply("Recover", false))
				got, err := os.ReadFile(path)
				require.NoError(t, err)
				require.Equal(t, c.want, string(got))
			}
		})
	}
}

// TestALoggedLineRefusesALogThatIsNoFile: a log that is a directory (or
// any file that is not regular), or one whose mode grants no write (for
// root too, as every append of the module refuses it), is refused with an
// error naming it and the step, and nothing is written.
func TestALoggedLineRefusesALogThatIsNoFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ticks.jsonl")
	require.NoError(t, os.Mkdir(path, 0o755))
	err := intentAppend{Path: path, Data: "{}\n", Durable: true}.apply("Recover", false)
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, "open the log")

	ro := filepath.Join(t.TempDir(), "ticks.jsonl")
	require.NoError(t, os.WriteFile(ro, []byte("{}\n"), 0o444))
	t.Cleanup(func() { _ = os.Chmod(ro, 0o644) }) // Windows removes no read-only file
	err = intentAppend{Path: ro, Data: "{\"n\":1}\n", Durable: true}.apply("Recover", false)
	require.ErrorIs(t, err, fs.ErrPermission)
	require.ErrorContains(t, err, ro)
	data, rerr := os.ReadFile(ro)
	require.NoError(t, rerr)
	require.Equal(t, "{}\n", string(data))
}

// TestARecordOfFormat1WithAppendsIsRefused: appends come only in records
// of format 2, which a version that does not know them refuses, and a
// record of format 2 always has some; a record that says 1 and has them,
// one that says 2 and has none, and an append with no whole line are not
// this version's to guess at.
func TestARecordOfFormat1WithAppendsIsRefused(t *testing.T) {
	dir := t.TempDir()
	for name, r := range map[string]intentRecord{
		"format 1":       {Format: 1, ID: "01", Locks: []string{"/l"}, Files: []intentFile{{Path: "/f"}}, Appends: []intentAppend{{Path: "/log", Data: "{}\n"}}},
		"no line":        {Format: 2, ID: "01", Locks: []string{"/l"}, Files: []intentFile{{Path: "/f"}}, Appends: []intentAppend{{Path: "/log", Data: "{}"}}},
		"no log":         {Format: 2, ID: "01", Locks: []string{"/l"}, Files: []intentFile{{Path: "/f"}}, Appends: []intentAppend{{Data: "{}\n"}}},
		"negative at":    {Format: 2, ID: "01", Locks: []string{"/l"}, Files: []intentFile{{Path: "/f"}}, Appends: []intentAppend{{Path: "/log", At: -1, Data: "{}\n"}}},
		"format 2 too":   {Format: 2, ID: "01", Locks: []string{"/l"}, Files: []intentFile{{Path: "/f"}}, Appends: []intentAppend{{Path: "/log", Data: "{}\n"}}},
		"format 2, none": {Format: 2, ID: "01", Locks: []string{"/l"}, Files: []intentFile{{Path: "/f"}}},
	} {
		path := filepath.Join(dir, name+".intent")
		require.NoError(t, os.WriteFile(path, r.encode(), 0o600))
		got, err := readIntent(path)
		if name == "format 2 too" {
			require.NoError(t, err)
			require.Equal(t, r.Appends, got.Appends)
			continue
		}
		var fe *FormatError
		require.ErrorAs(t, err, &fe, name)
		require.ErrorContains(t, err, path, name)
	}
}

package staletemp

import (
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/atomicstage"
	"github.com/filetxn/filetxn/internal/wine"
)

// stage makes a real temporary file of atomicfile's for target (staged as
// every write stages it), as a writer killed before its rename leaves it,
// and returns its name.
func stage(t *testing.T, target string) string {
	t.Helper()
	pf, err := atomicstage.Create("Write", target, 0o644, atomicstage.Options{})
	require.NoError(t, err, "atomicstage.Create(%q)", target)
	tmp := pf.TempPath()
	// What a killed writer leaves is the file without its descriptor: the
	// same name is made again after Cleanup, so no descriptor stays open
	// (Windows could not remove the file while one did).
	require.NoError(t, pf.Cleanup())
	require.NoError(t, os.WriteFile(tmp, []byte("half of a new version"), 0o644))
	return filepath.Base(tmp)
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var ns []string
	for _, e := range es {
		ns = append(ns, e.Name())
	}
	sort.Strings(ns)
	return ns
}

func TestIsTempMatchesAtomicfilesOwnNames(t *testing.T) {
	dir := t.TempDir()
	for _, base := range []string{"deferred-work.md", "state.json", "log2", strings.Repeat("é", 120) + ".md", strings.Repeat("x", 254)} {
		name := stage(t, filepath.Join(dir, base))
		require.True(t, isTemp(name, base), "isTemp(%q, %q) = false, want true", name, base)
		if len(base) <= maxTempBase { // longer names share their cut, which claimed() sorts out
			require.False(t, isTemp(name, base+"x"), "isTemp(%q, %q) = true, want false", name, base+"x")
		}
	}
}

func TestIsTempRefusesOtherNames(t *testing.T) {
	for _, tc := range []struct{ name, base string }{
		{"state.json123", "state.json"},                   // not hidden
		{".state.json", "state.json"},                     // no suffix
		{".state.json-1", "state.json"},                   // a sign
		{".state.json0123", "state.json"},                 // a leading zero
		{".state.json99999999999999999999", "state.json"}, // past int64
		{".state.json9223372036854775808", "state.json"},  // math.MaxInt64 + 1
		{".state.json12a", "state.json"},                  // not decimal
		{".state.json0", "state.json"},                    // too few digits for renameio's
		{".state.json20260101", "state.json"},             // a backup stamped with a date
		{".state.json1764547200", "state.json"},           // or with a time in seconds
		{".state.json999999999999", "state.json"},         // 12 digits
		{".state.json.tmp-", "state.json"},                // no random part
		{".state.json.tmp-ABC", "state.json"},             // upper case is not FormatUint's
		{".state.json.tmp-0z", "state.json"},              // a leading zero
		{".state.json.tmp-zzzzzzzzzzzzzz", "state.json"},  // past uint64
		{".state.json.tmp-3w5e11264sgsg", "state.json"},   // math.MaxUint64 + 1
		{".state.json.swp", "state.json"},                 // an editor's
		{".other123", "state.json"},
		{".x1", ""},
	} {
		require.False(t, isTemp(tc.name, tc.base), "isTemp(%q, %q) = true, want false", tc.name, tc.base)
		require.False(t, isTemp([]byte(tc.name), tc.base), "isTemp([]byte(%q), %q) = true, want false", tc.name, tc.base)
	}
}

// TestIsTempTakesTheLargestNumbers: the greatest int64 and uint64 that
// strconv writes are temporary names' numbers, in either form of the name,
// and so is the smallest number of the digits a renameio name is taken to
// have (a user's ".state.json20260101" is not: TestIsTempRefusesOtherNames).
// Ablation (run): without the digit count (minRenameioDigits), the date- and
// time-stamped names of TestIsTempRefusesOtherNames are temporary names, and
// the engine removed such a backup after every write of its file.
func TestIsTempTakesTheLargestNumbers(t *testing.T) {
	for _, name := range []string{
		".state.json" + strconv.FormatInt(math.MaxInt64, 10),
		".state.json1000000000000",
		".state.json.tmp-" + strconv.FormatUint(math.MaxUint64, 36),
		".state.json.tmp-0",
	} {
		require.True(t, isTemp(name, "state.json"), "isTemp(%q, %q) = false, want true", name, "state.json")
		require.True(t, isTemp([]byte(name), "state.json"), "isTemp([]byte(%q), %q) = false, want true", name, "state.json")
	}
}

// TestRemoveRemovesADeadWritersTempOnly: a stale temporary file of the
// target goes; the target, another file's temporary file, an editor's swap
// file, a directory of a temporary name and a temporary name another entry
// could own all stay. Ablation: with claimed() returning false,
// ".log21234567890123" (which "log2" could own) is removed and the test
// fails.
func TestRemoveRemovesADeadWritersTempOnly(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "log")
	require.NoError(t, os.WriteFile(target, []byte("v1\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "log2"), []byte("other\n"), 0o644))
	// A temporary name of atomicfile's (TestIsTempMatchesAtomicfilesOwnNames
	// checks the naming), fixed so that no other entry could own it: a random
	// one starting with 2 would be log2's too, and stay.
	stale := ".log9182736450123"
	require.NoError(t, os.WriteFile(filepath.Join(dir, stale), []byte("half"), 0o644))
	other := stage(t, filepath.Join(dir, "log2"))
	keep := []string{
		"log", "log2", other,
		".log.swp", "log123", ".log-7",
		".log21234567890123", // also a temporary name of "log2", which exists
		".log.tmp-zz9",       // own naming, but a directory
	}
	for _, n := range keep[3:7] {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o644))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, ".log.tmp-zz9"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".log.tmp-abc"), nil, 0o644)) // Windows' naming, stale

	n, err := Remove(target)
	require.NoError(t, err, "Remove(%q)", target)
	require.Equal(t, 2, n, "Remove(%q) = %d, want 2 (%s and .log.tmp-abc)", target, n, stale)
	want := append([]string(nil), keep...)
	sort.Strings(want)
	require.Equal(t, want, names(t, dir), "directory after Remove(%q)", target)
	require.NoFileExists(t, filepath.Join(dir, stale))
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, "v1\n", string(got), "the target after Remove")
}

// TestRemoveFollowsALinkToItsTarget: the temporary files are beside the
// file a link names, which is where atomicfile stages.
func TestRemoveFollowsALinkToItsTarget(t *testing.T) {
	real, links := t.TempDir(), t.TempDir()
	target := filepath.Join(real, "board.yaml")
	require.NoError(t, os.WriteFile(target, []byte("a: 1\n"), 0o644))
	link := filepath.Join(links, "board.yaml")
	wine.Skip(t, wine.NoSymlinks)
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	stale := stage(t, link)
	n, err := Remove(link)
	require.NoError(t, err)
	require.Equal(t, 1, n, "Remove(%q) = %d, want 1", link, n)
	require.NoFileExists(t, filepath.Join(real, stale))
	require.Equal(t, []string{"board.yaml"}, names(t, links))
}

func TestRemoveOfAMissingDirectoryFails(t *testing.T) {
	p := filepath.Join(t.TempDir(), "no", "f")
	n, err := Remove(p)
	require.Error(t, err, "Remove(%q) = %d, nil, want an error", p, n)
	require.Zero(t, n)
}

// TestRemoveLeavesATempTwoLongNamesShare: names longer than atomicfile keeps
// share the temporary names of their common first 200 bytes, so a stale one
// is left while the other long name exists, and removed once it is gone.
// Ablation: with claimed() returning false the first Remove takes it.
func TestRemoveLeavesATempTwoLongNamesShare(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("n", 240)
	a, b := filepath.Join(dir, long+"-a"), filepath.Join(dir, long+"-b")
	require.NoError(t, os.WriteFile(a, nil, 0o644))
	require.NoError(t, os.WriteFile(b, nil, 0o644))
	stale := stage(t, a)
	n, err := Remove(a)
	require.NoError(t, err)
	require.Zero(t, n, "Remove(%q) with %q present = %d, want 0", a, b, n)
	require.FileExists(t, filepath.Join(dir, stale))
	require.NoError(t, os.Remove(b))
	n, err = Remove(a)
	require.NoError(t, err)
	require.Equal(t, 1, n, "Remove(%q) alone = %d, want 1", a, n)
}

package fsys

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// shape is the form of every name: "." + the cut base + "." + 16 lower-case
// hexadecimal digits + "-0.tmp" or "-1.tmp".
func shape(base string) *regexp.Regexp {
	return regexp.MustCompile(`^\.` + regexp.QuoteMeta(Cut(base)) + `\.[0-9a-f]{16}-[01]\.tmp$`)
}

// TestNamesAreOfOneShapeAndFitInAName: both names of a target have the
// fixed shape, differ in their slot only, and stay within 255 bytes for a
// target name of 255 (cut at a character boundary, so still UTF-8).
func TestNamesAreOfOneShapeAndFitInAName(t *testing.T) {
	key := "i801:1f2e"
	for _, base := range []string{"deferred-work.md", "log", "b.yaml1", ".hidden", strings.Repeat("é", 120) + ".md", strings.Repeat("x", 255)} {
		ns := Names(base, key)
		for i, n := range ns {
			require.Regexp(t, shape(base), n, "Names(%q)[%d]", base, i)
			require.LessOrEqual(t, len(n), 255, "len(Names(%q)[%d])", base, i)
			require.True(t, strings.HasSuffix(n, []string{"-0.tmp", "-1.tmp"}[i]), "Names(%q)[%d] = %q", base, i, n)
		}
		require.Equal(t, ns[0][:len(ns[0])-len("0.tmp")], ns[1][:len(ns[1])-len("1.tmp")], "Names(%q) differ before the slot", base)
		require.Equal(t, ns, Names(base, key), "Names(%q) twice", base)
	}
}

// TestNamesAreNoOtherTargetsNorOtherLocks: no name of one target is a name
// of another, for the pairs whose temporary files the old sweep confused (a
// name and the name plus digits), for names that differ only past the cut,
// and for one target under two locks. Ablation: hashing the lock alone (not
// the name) makes the two long names share their names, and the test fails.
func TestNamesAreNoOtherTargetsNorOtherLocks(t *testing.T) {
	long := strings.Repeat("n", 240)
	bases := []string{"log", "log2", "log21", "b.yaml", "b.yaml1", "sprint-status.yaml", "sprint-status.yaml20260101", long + "-a", long + "-b", strings.Repeat("n", 200)}
	keys := []string{"i801:1f2e", "i801:1f2f", "i802:1f2e", "p/a/x.lock"}
	seen := map[string]string{}
	for _, key := range keys {
		for _, base := range bases {
			for _, n := range Names(base, key) {
				who := base + " under " + key
				require.NotContains(t, seen, n, "Names(%q, %q) gives %q, already %s's", base, key, n, seen[n])
				seen[n] = who
			}
		}
	}
}

// TestANameGivesItsTargetBack: up to the cut, the target's name is the
// name less its first byte and its fixed-length suffix, so no other target
// (of any lock) can have it: the proof that the names are the target's
// alone, whatever the hash.
func TestANameGivesItsTargetBack(t *testing.T) {
	const suffix = len(".0123456789abcdef-0.tmp")
	for _, base := range []string{"log", "log2", "b.yaml1", ".x", strings.Repeat("z", 200)} {
		for _, n := range Names(base, "i801:1f2e") {
			require.Equal(t, base, n[1:len(n)-suffix], "target of %q", n)
		}
	}
}

// TestNamesAreNoneOfTheOtherTemporaryNames: a user's dated backup, a
// renameio temporary file (atomicfile.WriteFile outside Windows), an
// atomicfile one of its own (".<name>.tmp-<random>") and a bmad-loop one
// ("<name>.<random>.tmp") never have the shape.
func TestNamesAreNoneOfTheOtherTemporaryNames(t *testing.T) {
	base := "sprint-status.yaml"
	for _, n := range []string{
		".sprint-status.yaml20260101",
		".sprint-status.yaml4982630124857716",
		".sprint-status.yaml.tmp-3w5e11264sgsf",
		"sprint-status.yaml.k2j4_x9a.tmp",
		".sprint-status.yaml.swp",
	} {
		require.NotRegexp(t, shape(base), n, "a file named %q", n)
	}
}

// TestNamesAllocatesItsTwoNamesOnly: the names of every write cost their
// two strings, no hash state or intermediate string. Ablation: building the
// names by concatenation through a hash.Hash, as first written, allocates
// three times.
func TestNamesAllocatesItsTwoNamesOnly(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() { Names("deferred-work.md", "i801:1f2e") })
	require.LessOrEqual(t, allocs, 2.0, "allocations of Names = %v, want at most 2", allocs)
}

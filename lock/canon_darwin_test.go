package lock

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCanonicalKeepsAHardLinksOwnName: F_GETPATH may answer, for a file with
// several hard links, the path of another link (the one the kernel looked up
// first), which would make one spelling's sidecar depend on what other
// processes opened; canonical keeps such a name as spelled. A name that
// differs only in case gets the recorded case, on a case-insensitive
// volume. Ablation: recorded without its base-name check turns the "link"
// case red when the kernel answers with the first link's path.
func TestCanonicalKeepsAHardLinksOwnName(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(dir, "First.md")
	link := filepath.Join(dir, "Link.md")
	if err := os.WriteFile(first, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(first, link); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(first) // the kernel now knows the file by its first name
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := canonical(link); got != link {
		t.Errorf("canonical(%q) = %q, want it as spelled", link, got)
	}
	if got := canonical(first); got != first {
		t.Errorf("canonical(%q) = %q, want it as spelled", first, got)
	}
	lower := filepath.Join(dir, "first.md")
	if _, err := os.Stat(lower); err != nil {
		t.Skipf("%s is on a case-sensitive volume", dir)
	}
	if got := canonical(lower); got != first {
		t.Errorf("canonical(%q) = %q, want %q (the recorded case)", lower, got, first)
	}
}

//go:build unix

package lock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResolveShortcutMatchesTheLongWay checks that resolve, which skips the
// walk when linkFree says there is no link on the way, names the same file as
// the walk (resolveAbs) for plain, dotted, relative, linked and missing
// paths, and that on Linux the shortcut is taken exactly for the paths with
// no link and nothing missing. Ablation: a linkFree that answers true for
// every path turns the linked cases red.
func TestResolveShortcutMatchesTheLongWay(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(base, "real", "sub"), 0o755))
	must(os.WriteFile(filepath.Join(base, "real", "sub", "f.yaml"), nil, 0o644))
	must(os.Symlink(filepath.Join(base, "real"), filepath.Join(base, "link")))
	must(os.Symlink("f.yaml", filepath.Join(base, "real", "sub", "flink.yaml")))
	t.Chdir(filepath.Join(base, "real"))
	raw := func(elem ...string) string { return strings.Join(elem, string(filepath.Separator)) } // no Clean

	for _, c := range []struct {
		path     string
		linkFree bool
	}{
		{raw(base, "real", "sub", "f.yaml"), true},
		{raw(base, "real", ".", "sub", "..", "sub", "f.yaml"), true},
		{raw("sub", "f.yaml"), true}, // relative to real
		{raw(base, "link", "sub", "f.yaml"), false},
		{raw(base, "link", "..", "real", "sub", "f.yaml"), false},
		{raw(base, "real", "sub", "flink.yaml"), false},
		{raw(base, "real", "sub", "missing.yaml"), false},
		{raw(base, "real", "missing", "..", "sub", "f.yaml"), false},
	} {
		abs := c.path
		if !filepath.IsAbs(abs) {
			abs = raw(base, "real", c.path)
		}
		got, err := resolve(c.path)
		want, werr := resolveAbs(abs, 0)
		if err != nil || werr != nil || got != want {
			t.Errorf("resolve(%q) = %q, %v; the walk gives %q, %v", c.path, got, err, want, werr)
		}
		if lf := linkFree(abs); lf != c.linkFree && linkFreeAnswers() {
			t.Errorf("linkFree(%q) = %v, want %v", abs, lf, c.linkFree)
		}
	}
}

//go:build windows || darwin

package lock_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// caseFiles makes base/Proj/X.md and returns its path, skipping the test on a
// case-sensitive file system (a macOS volume formatted so), where
// base/proj/x.md is another file.
func caseFiles(t *testing.T, base string) string {
	t.Helper()
	mkdirs(t, filepath.Join(base, "Proj"))
	file := filepath.Join(base, "Proj", "X.md")
	writeFiles(t, file)
	a, err1 := os.Stat(file)
	b, err2 := os.Stat(filepath.Join(base, "proj", "x.md"))
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		t.Skipf("%s is on a case-sensitive file system", base)
	}
	return file
}

// TestSidecarPathIsOneForEveryCaseOfAName: on a case-insensitive file system
// (Windows; macOS by default) every spelling of one file that differs only in
// case (Proj\X.md, proj\x.md, PROJ\X.MD, and on Windows c: for C:) names one
// sidecar, that of the name the file system records: the file's own for an
// existing file, its nearest existing directory's followed by the rest as
// spelled for a file yet to come. The want is computed independently: the
// spelling the test created (base is filepath.EvalSymlinks', which on
// Windows spells each element as its directory entry does). Ablation:
// canonical returning the path as spelled (as before) turns every miscased
// case red, under Wine too.
func TestSidecarPathIsOneForEveryCaseOfAName(t *testing.T) {
	base := realTempDir(t)
	root := filepath.Join(base, "state")
	file := caseFiles(t, base)
	spellings := []struct{ name, target, want string }{
		{"as created", file, file},
		{"lower case", filepath.Join(base, "proj", "x.md"), file},
		{"upper case", filepath.Join(base, "PROJ", "X.MD"), file},
		{"a new file in a miscased directory", filepath.Join(base, "proj", "New.md"), filepath.Join(base, "Proj", "New.md")},
		{"new directories in a miscased directory", filepath.Join(base, "PROJ", "a", "B", "n.md"), filepath.Join(base, "Proj", "a", "B", "n.md")},
	}
	if runtime.GOOS == "windows" {
		lower := strings.ToLower(file[:1]) + file[1:]
		spellings = append(spellings, struct{ name, target, want string }{"lower-case drive letter", lower, file})
	}
	for _, tc := range spellings {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lock.SidecarPath(root, tc.target)
			if want := sidecarOf(root, tc.want); err != nil || got != want {
				t.Errorf("SidecarPath(%q, %q) = %q, %v, want %q (the sidecar of %q)", root, tc.target, got, err, want, tc.want)
			}
		})
	}
}

// TestSidecarSpellingsInTwoCasesExcludeAcrossProcesses: a process that locks
// the sidecar of proj/x.md excludes another that asks for the sidecar of
// Proj/X.md, the same file: the second's TryAcquire fails with
// ErrWouldBlock while the first holds it. Ablation: canonical returning the
// path as spelled (as before) gives the two processes two lock files, and
// the TryAcquire succeeds (red under Wine).
func TestSidecarSpellingsInTwoCasesExcludeAcrossProcesses(t *testing.T) {
	if c := testkit.Child(t); c != nil {
		p, err := lock.SidecarPath(filepath.Join(c.Dir, "state"), filepath.Join(c.Dir, "proj", "x.md"))
		if err != nil {
			c.T.Fatalf("child: SidecarPath = %v", err)
		}
		h := childAcquire(c, p)
		c.Mark("held")
		waitToBeKilled(c)
		h.Release()
		return
	}
	dir := realTempDir(t)
	file := caseFiles(t, dir)
	g := testkit.Start(t, 1, dir)
	g.WaitMark("held")
	p, err := lock.SidecarPath(filepath.Join(dir, "state"), file)
	if err != nil {
		t.Fatal(err)
	}
	h, err := lock.TryAcquire(p)
	if err == nil {
		h.Release()
		t.Fatalf("TryAcquire(SidecarPath(%q)) = nil while another process holds the sidecar of %q, want ErrWouldBlock", file, filepath.Join(dir, "proj", "x.md"))
	}
	if !errors.Is(err, lock.ErrWouldBlock) {
		t.Fatalf("TryAcquire(SidecarPath(%q)) = %v, want ErrWouldBlock", file, err)
	}
}

package fsys

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestRenameNoReplaceNeverReplaces: whatever exists at the new path (a file,
// an empty directory, a full one), RenameNoReplace fails with fs.ErrExist and
// both paths are left as they were; with nothing there it renames. The
// fallback used where the kernel has no no-replace rename is checked the same
// way, except for the empty directory it documents it may replace.
func TestRenameNoReplaceNeverReplaces(t *testing.T) {
	for _, impl := range []struct {
		name string
		fn   func(string, string) error
	}{{"kernel", renameNoReplace}, {"fallback", renameFallback}} {
		for _, tc := range []struct {
			name     string
			srcDir   bool
			existing string // "", "file", "emptydir", "fulldir"
		}{
			{"file-to-free", false, ""},
			{"dir-to-free", true, ""},
			{"file-to-file", false, "file"},
			{"dir-to-file", true, "file"},
			{"dir-to-emptydir", true, "emptydir"},
			{"dir-to-fulldir", true, "fulldir"},
			{"file-to-fulldir", false, "fulldir"},
		} {
			if impl.name == "fallback" && tc.existing == "emptydir" {
				continue
			}
			t.Run(impl.name+"/"+tc.name, func(t *testing.T) {
				dir := t.TempDir()
				src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
				if tc.srcDir {
					mustMkdir(t, src)
					mustWrite(t, filepath.Join(src, "inside"), "src")
				} else {
					mustWrite(t, src, "src")
				}
				switch tc.existing {
				case "file":
					mustWrite(t, dst, "dst")
				case "emptydir":
					mustMkdir(t, dst)
				case "fulldir":
					mustMkdir(t, dst)
					mustWrite(t, filepath.Join(dst, "inside"), "dst")
				}
				err := impl.fn(src, dst)
				if tc.existing == "" {
					if err != nil {
						t.Fatalf("rename(%q, %q) = %v, want nil", src, dst, err)
					}
					if _, err := os.Lstat(src); !errors.Is(err, fs.ErrNotExist) {
						t.Fatalf("source after rename: Lstat = %v, want ErrNotExist", err)
					}
					return
				}
				if !errors.Is(err, fs.ErrExist) {
					t.Fatalf("rename(%q, %q) onto %s = %v, want fs.ErrExist", src, dst, tc.existing, err)
				}
				if _, err := os.Lstat(src); err != nil {
					t.Fatalf("source after a refused rename: %v", err)
				}
				switch tc.existing {
				case "file":
					assertTarget(t, dst, "dst")
				case "fulldir":
					assertTarget(t, filepath.Join(dst, "inside"), "dst")
				case "emptydir":
					if ents, err := os.ReadDir(dst); err != nil || len(ents) != 0 {
						t.Fatalf("empty target after a refused rename: %v, %v", ents, err)
					}
				}
			})
		}
	}
}

// TestRenameNoReplaceHasOneWinner: 8 goroutines rename 8 different files to
// one new name at the same moment; exactly one succeeds, the others get
// fs.ErrExist, and the name holds the winner's contents. Ablation: plain
// os.Rename in renameNoReplace lets every rename succeed (the last wins), and
// the test goes red on the winner count.
func TestRenameNoReplaceHasOneWinner(t *testing.T) {
	const n = 8
	for round := range 20 {
		dir := t.TempDir()
		dst := filepath.Join(dir, "claimed")
		var start sync.WaitGroup
		start.Add(1)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			src := filepath.Join(dir, fmt.Sprintf("src-%d", i))
			mustWrite(t, src, fmt.Sprint(i))
			wg.Go(func() {
				start.Wait()
				errs[i] = RenameNoReplace(src, dst, false)
			})
		}
		start.Done()
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: renames %d and %d both succeeded", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, fs.ErrExist):
				t.Fatalf("round %d: RenameNoReplace #%d = %v, want nil or fs.ErrExist", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no rename succeeded", round)
		}
		assertTarget(t, dst, fmt.Sprint(winner))
	}
}

// TestRenameNoReplaceErrors: a missing source gives an *fs.PathError with Op
// RenameNoReplace, the new path, and fs.ErrNotExist underneath.
func TestRenameNoReplaceErrors(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "dst")
	err := RenameNoReplace(filepath.Join(dir, "missing"), dst, true)
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "RenameNoReplace" || pe.Path != dst || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("RenameNoReplace(missing, %q) = %v, want *fs.PathError{RenameNoReplace, %q, ErrNotExist}", dst, err, dst)
	}
}

// TestPendingPublishesWholeOrNothing: a staged directory is invisible at
// its final name until Publish, then appears with all its files; a second
// stager that lost the race gets fs.ErrExist from Publish and its staging
// directory is gone; CreateDir on a taken name stages nothing.
func TestPendingPublishesWholeOrNothing(t *testing.T) {
	dir := t.TempDir()
	final := filepath.Join(dir, "loop")
	a, err := CreateDir(final, 0o755, true)
	if err != nil {
		t.Fatalf("CreateDir(%q) = %v", final, err)
	}
	defer a.Cleanup()
	b, err := CreateDir(final, 0o755, true)
	if err != nil {
		t.Fatalf("second CreateDir(%q) before any publish = %v", final, err)
	}
	defer b.Cleanup()
	if a.Path() == b.Path() || filepath.Dir(a.Path()) != dir || !strings.HasPrefix(filepath.Base(a.Path()), ".loop.tmp-") {
		t.Fatalf("staging paths %q and %q, want two distinct .loop.tmp-* in %s", a.Path(), b.Path(), dir)
	}
	for _, pd := range []*PendingDir{a, b} {
		if err := os.WriteFile(filepath.Join(pd.Path(), "state"), []byte(pd.Path()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Lstat(final); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("final name before Publish: Lstat = %v, want ErrNotExist", err)
	}
	if err := a.Publish(); err != nil {
		t.Fatalf("a.Publish() = %v", err)
	}
	assertTarget(t, filepath.Join(final, "state"), a.Path())
	err = b.Publish()
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrExist) || !errors.As(err, &pe) || pe.Op != "Publish" || pe.Path != final {
		t.Fatalf("b.Publish() after a won = %v, want *fs.PathError{Publish, %q, ErrExist}", err, final)
	}
	if _, err := os.Lstat(b.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("loser's staging directory after Publish: Lstat = %v, want ErrNotExist", err)
	}
	assertTarget(t, filepath.Join(final, "state"), a.Path())
	if err := a.Publish(); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("second a.Publish() = %v, want fs.ErrClosed", err)
	}
	if err := a.Cleanup(); err != nil {
		t.Fatalf("Cleanup after Publish = %v", err)
	}
	assertTarget(t, filepath.Join(final, "state"), a.Path())
	if _, err := CreateDir(final, 0o755, true); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("CreateDir on a published name = %v, want fs.ErrExist", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 || ents[0].Name() != "loop" {
		t.Fatalf("parent after the race holds %v (%v), want only loop", ents, err)
	}
}

// TestPendingCleanup: Cleanup removes the staging directory with its
// contents, is idempotent and nil-safe; Publish after it fails with
// fs.ErrClosed; a missing parent is reported by CreateDir.
func TestPendingCleanup(t *testing.T) {
	dir := t.TempDir()
	pd, err := CreateDir(filepath.Join(dir, "x"), 0o700, true)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(pd.Path(), "f"), "data")
	if err := pd.Cleanup(); err != nil {
		t.Fatalf("Cleanup() = %v", err)
	}
	if err := pd.Cleanup(); err != nil {
		t.Fatalf("second Cleanup() = %v", err)
	}
	if err := (*PendingDir)(nil).Cleanup(); err != nil {
		t.Fatalf("nil Cleanup() = %v", err)
	}
	if _, err := os.Lstat(pd.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("staging directory after Cleanup: %v", err)
	}
	if err := pd.Publish(); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("Publish after Cleanup = %v, want fs.ErrClosed", err)
	}
	if _, err := CreateDir(filepath.Join(dir, "no", "x"), 0o700, true); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("CreateDir under a missing parent = %v, want fs.ErrNotExist", err)
	}
	if _, err := CreateDir("", 0o700, true); !errors.Is(err, fs.ErrInvalid) {
		t.Fatalf(`CreateDir("") = %v, want fs.ErrInvalid`, err)
	}
}

func mustWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustMkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func assertTarget(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != want {
		t.Errorf("ReadFile(%q) = %q, %v; want %q, nil", path, b, err, want)
	}
}

package fsys

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// holdUnshared opens path with no sharing at all, as MoveFileEx holds a
// target while it replaces it, and returns the function that closes it.
func holdUnshared(t *testing.T, path string) (release func()) {
	t.Helper()
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ, 0, nil, windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		t.Fatalf("CreateFile(%q, no sharing) = %v", path, err)
	}
	var once bool
	release = func() {
		if !once {
			once = true
			windows.CloseHandle(h)
		}
	}
	t.Cleanup(release)
	return release
}

type readResult struct {
	data []byte
	err  error
}

// TestReadFileWaitsOutAReplace: a read whose open meets a sharing violation
// (another process replacing the file) waits for the holder to let go and
// then reads the file, instead of failing. Ablation: readFile without the
// retry (readFileOS alone) returns the sharing violation at once and turns
// it red, as it turned the engine's cross-process counting tests red under
// Wine ("Read ...: Sharing violation").
func TestReadFileWaitsOutAReplace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	release := holdUnshared(t, path)
	done := make(chan readResult, 1)
	go func() { data, err := ReadFile(path); done <- readResult{data, err} }()
	select {
	case r := <-done:
		t.Fatalf("ReadFile(held without sharing) = %q, %v while held, want it to wait", r.data, r.err)
	case <-time.After(100 * time.Millisecond): // quiescent: still retrying
	}
	release()
	select {
	case r := <-done:
		if r.err != nil || string(r.data) != "new" {
			t.Fatalf("ReadFile(released) = %q, %v, want %q, nil", r.data, r.err, "new")
		}
	case <-time.After(time.Minute):
		t.Fatal("ReadFile(released) did not return within a minute")
	}
}

// TestReadFileGivesUpOnAHeldFile: a file held longer than the retry budget
// fails with the sharing violation, as an *fs.PathError naming the path.
// Ablation: retrying without a deadline hangs it (the minute bound fails).
func TestReadFileGivesUpOnAHeldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	holdUnshared(t, path)
	done := make(chan readResult, 1)
	go func() { data, err := ReadFile(path); done <- readResult{data, err} }()
	select {
	case r := <-done:
		var pe *fs.PathError
		if !errors.Is(r.err, windows.ERROR_SHARING_VIOLATION) || !errors.As(r.err, &pe) || pe.Path != path {
			t.Fatalf("ReadFile(held) = %q, %v, want an *fs.PathError naming %s and matching ERROR_SHARING_VIOLATION", r.data, r.err, path)
		}
	case <-time.After(time.Minute):
		t.Fatal("ReadFile(held) did not give up within a minute")
	}
}

// TestAReadHandleLetsItsFileBeRenamedAndRemoved: a file that a read has open
// (the handle ReadFile and a lock-free View read through) can be renamed
// away and removed meanwhile, as on Unix, and the reader goes on reading
// what it opened: its handle shares delete access, so a reader never makes
// a writer's replace of the file (which needs delete access to the old
// file) fail with a sharing violation. Ablation: openFile as plain
// os.OpenFile (FILE_SHARE_READ|FILE_SHARE_WRITE only, as before) turns it red
// under Wine ("The process cannot access the file because it is being used
// by another process").
func TestAReadHandleLetsItsFileBeRenamedAndRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	moved := filepath.Join(dir, "moved")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("OpenFile(%q, O_RDONLY) = %v", path, err)
	}
	defer f.Close()
	if err := os.Rename(path, moved); err != nil {
		t.Fatalf("Rename(%q, %q) while a reader has it open = %v, want nil", path, moved, err)
	}
	if err := os.Remove(moved); err != nil {
		t.Fatalf("Remove(%q) while a reader has it open = %v, want nil", moved, err)
	}
	buf := make([]byte, 8)
	if n, err := f.Read(buf); err != nil || string(buf[:n]) != "old" {
		t.Fatalf("Read of the open file after its removal = %q, %v, want %q, nil", buf[:n], err, "old")
	}
}

// TestOpenReadFailsAsOsOpenDoes: a read of a missing file fails as os.Open's
// does, an *fs.PathError (Op "open") naming the path and matching
// fs.ErrNotExist, so that callers' errors.Is checks and messages are those of
// os; a directory opens (as with os.Open) and ReadFile refuses it as not
// regular.
func TestOpenReadFailsAsOsOpenDoes(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{filepath.Join(dir, "missing"), filepath.Join(dir, "no", "such"), ""} {
		_, err := OpenFile(p, os.O_RDONLY, 0)
		var pe *fs.PathError
		if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Op != "open" || pe.Path != p {
			t.Errorf("OpenFile(%q, O_RDONLY) = %v, want an *fs.PathError{Op: open, Path: %q} matching fs.ErrNotExist", p, err, p)
		}
	}
	d, err := OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("OpenFile(dir, O_RDONLY) = %v, want nil", err)
	}
	d.Close()
	if _, err := ReadFile(dir); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFile(dir) = %v, want an error matching ErrNotRegular", err)
	}
}

// TestLongPathPrefixesOnlyWhatNeedsIt: LongPath gives a path of 248 bytes or
// more the extended-length prefix, in absolute form (relative, slashed and
// dotted spellings included), \\?\UNC\ for a share, and leaves short,
// prefixed and device paths alone. Ablation: LongPath returning path as it
// is (the raw MoveFileEx of before) turns the long cases red.
func TestLongPathPrefixesOnlyWhatNeedsIt(t *testing.T) {
	long := strings.Repeat("d", 120) + `\` + strings.Repeat("e", 120) + `\f.yaml`
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{`C:\short\x.yaml`, `C:\short\x.yaml`},
		{`C:\` + long, `\\?\C:\` + long},
		{`C:/` + strings.ReplaceAll(long, `\`, `/`), `\\?\C:\` + long},
		{`C:\a\..\` + long, `\\?\C:\` + long},
		{`\\server\share\` + long, `\\?\UNC\server\share\` + long},
		{`\\?\C:\` + long, `\\?\C:\` + long},
		{`\??\C:\` + long, `\??\C:\` + long},
		{`\\.\pipe\` + long, `\\.\pipe\` + long},
		{long, `\\?\` + wd + `\` + long},
	} {
		if got := LongPath(tc.in); got != tc.want {
			t.Errorf("LongPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

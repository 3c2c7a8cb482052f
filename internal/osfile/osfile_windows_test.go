package osfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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

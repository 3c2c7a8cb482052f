package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/filetxn/filetxn/atomicfile"
)

// readFile returns the contents of path, failing the test if it cannot.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("ReadFile(%q) error: %v", path, err)
	}
	return string(b)
}

// writeFile creates path with contents, failing the test if it cannot.
func writeFile(t *testing.T, path, contents string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(contents), 0o644); err != nil {
		t.Fatalf("os.WriteFile(%q) error: %v", path, err)
	}
}

// listDir returns the sorted names in dir.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("ReadDir(%q) error: %v", dir, err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// isTemp reports whether name has the shape of a temporary file of this
// package: ".<base><random digits>", renameio's naming, or
// ".<base>.tmp-<random>", the naming on Windows and for long names.
func isTemp(name string) bool {
	return strings.HasPrefix(name, ".") && (strings.Contains(name, ".tmp-") || tempDigits.MatchString(name))
}

var tempDigits = regexp.MustCompile(`^\..+[0-9]$`)

// assertNoTemps fails the test if dir holds a temporary file of ours.
func assertNoTemps(t *testing.T, dir string) {
	t.Helper()
	for _, name := range listDir(t, dir) {
		if isTemp(name) {
			t.Errorf("temporary file %q left in %s", name, dir)
		}
	}
}

// assertPathError fails the test unless err is an *fs.PathError with op and path.
func assertPathError(t *testing.T, err error, op, path string) {
	t.Helper()
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not an *fs.PathError", err, err)
	}
	if pe.Op != op || pe.Path != path {
		t.Errorf("PathError{Op: %q, Path: %q}, want {Op: %q, Path: %q}", pe.Op, pe.Path, op, path)
	}
}

func TestWriteFileReplacesContents(t *testing.T) {
	tests := []struct {
		name     string
		existing *string // nil: no file before the write
		data     string
		opts     []atomicfile.Option
	}{
		{name: "new file", data: "hello\n"},
		{name: "new empty file", data: ""},
		{name: "existing file", existing: ptr("old contents\n"), data: "new\n"},
		{name: "shrinks", existing: ptr(strings.Repeat("x", 10000)), data: "short"},
		{name: "to empty", existing: ptr("old"), data: ""},
		{name: "without sync", existing: ptr("old"), data: "fast", opts: []atomicfile.Option{atomicfile.WithoutSync()}},
		{name: "without dir sync", existing: ptr("old"), data: "faster", opts: []atomicfile.Option{atomicfile.WithoutDirSync()}},
		{name: "nil option ignored", data: "x", opts: []atomicfile.Option{nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.json")
			if tt.existing != nil {
				writeFile(t, path, *tt.existing)
			}
			if err := atomicfile.WriteFile(path, []byte(tt.data), 0o644, tt.opts...); err != nil {
				t.Fatalf("WriteFile(%q) = %v, want nil", path, err)
			}
			if got := readFile(t, path); got != tt.data {
				t.Errorf("after WriteFile(%q, %q), contents = %q, want %q", path, tt.data, got, tt.data)
			}
			if got, want := listDir(t, dir), []string{"state.json"}; !slices.Equal(got, want) {
				t.Errorf("directory after WriteFile = %q, want %q", got, want)
			}
		})
	}
}

// TestRefusedTargetStagesNothing checks that a read-only or non-regular target is
// refused before any temporary file exists. Ablations: dropping the mode clause
// of checkWritable makes "read-only file" red when run as root (the rename would
// replace it), dropping the IsRegular check makes "directory" red (the error is
// no longer ErrNotRegular, and Create stages a temporary file).
func TestRefusedTargetStagesNothing(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		want  error
	}{
		{
			name: "read-only file",
			setup: func(t *testing.T, path string) {
				writeFile(t, path, "keep me")
				if err := os.Chmod(path, 0o444); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Chmod(path, 0o644) })
			},
			want: fs.ErrPermission,
		},
		{
			name: "directory",
			setup: func(t *testing.T, path string) {
				if err := os.Mkdir(path, 0o755); err != nil {
					t.Fatal(err)
				}
			},
			want: atomicfile.ErrNotRegular,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, call := range []struct {
				op string
				fn func(path string) error
			}{
				{"WriteFile", func(path string) error { return atomicfile.WriteFile(path, []byte("new"), 0o644) }},
				{"Create", func(path string) error {
					pf, err := atomicfile.Create(path, 0o644)
					if err == nil {
						pf.Cleanup()
						return errors.New("Create succeeded")
					}
					return err
				}},
			} {
				t.Run(call.op, func(t *testing.T) {
					dir := t.TempDir()
					path := filepath.Join(dir, "target")
					tt.setup(t, path)
					before := listDir(t, dir)
					err := call.fn(path)
					if !errors.Is(err, tt.want) {
						t.Fatalf("%s(%q) = %v, want an error wrapping %v", call.op, path, err, tt.want)
					}
					assertPathError(t, err, call.op, path)
					if got := listDir(t, dir); !slices.Equal(got, before) {
						t.Errorf("directory after refused %s = %q, want %q", call.op, got, before)
					}
					if fi, _ := os.Stat(path); fi.Mode().IsRegular() {
						if got := readFile(t, path); got != "keep me" {
							t.Errorf("refused target contents = %q, want %q", got, "keep me")
						}
					}
				})
			}
		})
	}
}

// TestWriteFileMissingParentNamesDirectory: the error must say which directory is
// missing, not just that some open failed. Ablation: returning the bare errno
// makes it red.
func TestWriteFileMissingParentNamesDirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "such")
	path := filepath.Join(missing, "state.json")
	err := atomicfile.WriteFile(path, []byte("x"), 0o644)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("WriteFile(%q) = %v, want an error wrapping fs.ErrNotExist", path, err)
	}
	assertPathError(t, err, "WriteFile", path)
	if !strings.Contains(err.Error(), "parent directory "+missing+":") {
		t.Errorf("WriteFile(%q) = %q, want it to name the parent directory %s", path, err, missing)
	}
}

func TestWriteFileRejectsEmptyPath(t *testing.T) {
	if err := atomicfile.WriteFile("", []byte("x"), 0o644); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf(`WriteFile("") = %v, want an error wrapping fs.ErrInvalid`, err)
	}
}

func TestCreateStagesBesideTargetUntilReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	writeFile(t, path, "old")

	pf, err := atomicfile.Create(path, 0o644)
	if err != nil {
		t.Fatalf("Create(%q) = %v", path, err)
	}
	defer pf.Cleanup()
	tmp := pf.TempPath()
	if got := filepath.Dir(tmp); got != dir {
		t.Errorf("TempPath() directory = %q, want %q", got, dir)
	}
	want := `^\.state\.json[0-9]+$` // renameio's naming
	if runtime.GOOS == "windows" {
		want = `^\.state\.json\.tmp-[0-9a-z]+$`
	}
	if base := filepath.Base(tmp); !regexp.MustCompile(want).MatchString(base) {
		t.Errorf("TempPath() name = %q, want a match for %s", base, want)
	}
	if _, err := pf.Write([]byte("new")); err != nil {
		t.Fatalf("Write = %v", err)
	}
	if got := readFile(t, path); got != "old" {
		t.Errorf("target before CloseAtomicallyReplace = %q, want %q", got, "old")
	}
	if err := pf.CloseAtomicallyReplace(); err != nil {
		t.Fatalf("CloseAtomicallyReplace() = %v", err)
	}
	if got := readFile(t, path); got != "new" {
		t.Errorf("target after CloseAtomicallyReplace = %q, want %q", got, "new")
	}
	if _, err := os.Stat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(TempPath()) after replace = %v, want not exist", err)
	}
}

// TestCleanup checks that Cleanup removes an unpublished temporary file, leaves the
// target alone, and is a no-op after success and when repeated. After a success,
// a stranger's file is put at the old temporary name: a Cleanup that still
// removed things would take it. Ablation: dropping the state check at the top of
// Cleanup makes "after success is a no-op" red.
func TestCleanup(t *testing.T) {
	tests := []struct {
		name    string
		replace bool   // call CloseAtomicallyReplace before Cleanup
		want    string // target contents afterwards
	}{
		{name: "after success is a no-op", replace: true, want: "new"},
		{name: "without replace discards", replace: false, want: "old"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			writeFile(t, path, "old")
			pf, err := atomicfile.Create(path, 0o644)
			if err != nil {
				t.Fatalf("Create(%q) = %v", path, err)
			}
			if _, err := pf.Write([]byte("new")); err != nil {
				t.Fatalf("Write = %v", err)
			}
			stranger := ""
			if tt.replace {
				if err := pf.CloseAtomicallyReplace(); err != nil {
					t.Fatalf("CloseAtomicallyReplace() = %v", err)
				}
				stranger = pf.TempPath()
				writeFile(t, stranger, "not yours")
			}
			for i := range 2 {
				if err := pf.Cleanup(); err != nil {
					t.Errorf("Cleanup() #%d = %v, want nil", i+1, err)
				}
			}
			if stranger != "" {
				if got := readFile(t, stranger); got != "not yours" {
					t.Errorf("Cleanup() after success touched %s", stranger)
				}
				os.Remove(stranger)
			}
			if got := readFile(t, path); got != tt.want {
				t.Errorf("target after Cleanup = %q, want %q", got, tt.want)
			}
			assertNoTemps(t, dir)
			if _, err := pf.Write([]byte("more")); !errors.Is(err, fs.ErrClosed) {
				t.Errorf("Write after Cleanup = %v, want fs.ErrClosed", err)
			}
			if err := pf.CloseAtomicallyReplace(); !errors.Is(err, fs.ErrClosed) {
				t.Errorf("CloseAtomicallyReplace after Cleanup = %v, want fs.ErrClosed", err)
			}
		})
	}
	t.Run("nil PendingFile", func(t *testing.T) {
		var pf *atomicfile.PendingFile
		if err := pf.Cleanup(); err != nil {
			t.Errorf("(*PendingFile)(nil).Cleanup() = %v, want nil", err)
		}
	})
}

// TestFailedReplaceLeavesOriginal breaks the staged state between Create and
// CloseAtomicallyReplace and checks that the replace fails, the target is what it
// was and no temporary file remains. Ablation: removing the Cleanup call after a
// failed rename in CloseAtomicallyReplace makes "target became a directory" red.
func TestFailedReplaceLeavesOriginal(t *testing.T) {
	tests := []struct {
		name     string
		sabotage func(t *testing.T, pf *atomicfile.PendingFile, path string)
		check    func(t *testing.T, path string)
	}{
		{
			name: "temporary file removed",
			sabotage: func(t *testing.T, pf *atomicfile.PendingFile, path string) {
				if runtime.GOOS == "windows" {
					t.Skip("an open file cannot be removed on Windows")
				}
				if err := os.Remove(pf.TempPath()); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, path string) {
				if got := readFile(t, path); got != "old" {
					t.Errorf("target = %q, want %q", got, "old")
				}
			},
		},
		{
			name: "target became a directory",
			sabotage: func(t *testing.T, pf *atomicfile.PendingFile, path string) {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(path, 0o755); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(path, "inside"), "x")
			},
			check: func(t *testing.T, path string) {
				if got := readFile(t, filepath.Join(path, "inside")); got != "x" {
					t.Errorf("file inside the directory = %q, want %q", got, "x")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			writeFile(t, path, "old")
			pf, err := atomicfile.Create(path, 0o644)
			if err != nil {
				t.Fatalf("Create(%q) = %v", path, err)
			}
			defer pf.Cleanup()
			if _, err := pf.Write([]byte("new")); err != nil {
				t.Fatalf("Write = %v", err)
			}
			tt.sabotage(t, pf, path)
			err = pf.CloseAtomicallyReplace()
			if err == nil {
				t.Fatalf("CloseAtomicallyReplace() = nil, want an error")
			}
			assertPathError(t, err, "CloseAtomicallyReplace", path)
			tt.check(t, path)
			assertNoTemps(t, dir)
			if err := pf.Cleanup(); err != nil {
				t.Errorf("Cleanup() after failed replace = %v, want nil", err)
			}
		})
	}
}

func TestCloseAtomicallyReplaceTwice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	pf, err := atomicfile.Create(path, 0o644)
	if err != nil {
		t.Fatalf("Create(%q) = %v", path, err)
	}
	defer pf.Cleanup()
	if err := pf.CloseAtomicallyReplace(); err != nil {
		t.Fatalf("CloseAtomicallyReplace() = %v", err)
	}
	if err := pf.CloseAtomicallyReplace(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("second CloseAtomicallyReplace() = %v, want fs.ErrClosed", err)
	}
	if _, err := pf.Write([]byte("x")); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Write after CloseAtomicallyReplace = %v, want fs.ErrClosed", err)
	}
	if got := readFile(t, path); got != "" {
		t.Errorf("target = %q, want empty", got)
	}
}

func ptr[T any](v T) *T { return &v }

// TestAppendFileAppendsWholeRecords: two appends give both records in order,
// on a file created with perm under the umask.
func TestAppendFileAppendsWholeRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ticks.jsonl")
	for _, rec := range []string{"{\"n\":1}\n", "{\"n\":2}\n"} {
		if err := atomicfile.AppendFile(path, []byte(rec), 0o600); err != nil {
			t.Fatalf("AppendFile(%q) = %v", rec, err)
		}
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "{\"n\":1}\n{\"n\":2}\n" {
		t.Fatalf("file = %q, %v", b, err)
	}
	if err := atomicfile.AppendFile(filepath.Join(path, "x"), nil, 0o600); err == nil {
		t.Fatal("AppendFile under a regular file = nil, want an error")
	}
}

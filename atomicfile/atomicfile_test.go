package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/internal/seam"
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
// no longer ErrNotRegular, and a temporary file is staged).
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
			dir := t.TempDir()
			path := filepath.Join(dir, "target")
			tt.setup(t, path)
			before := listDir(t, dir)
			err := atomicfile.WriteFile(path, []byte("new"), 0o644)
			if !errors.Is(err, tt.want) {
				t.Fatalf("WriteFile(%q) = %v, want an error wrapping %v", path, err, tt.want)
			}
			assertPathError(t, err, "WriteFile", path)
			if got := listDir(t, dir); !slices.Equal(got, before) {
				t.Errorf("directory after refused WriteFile = %q, want %q", got, before)
			}
			if fi, _ := os.Stat(path); fi.Mode().IsRegular() {
				if got := readFile(t, path); got != "keep me" {
					t.Errorf("refused target contents = %q, want %q", got, "keep me")
				}
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

// TestSyncOptions checks which fsyncs each option leaves on, by counting the
// fsyncs WriteFile and AppendFile make (each is a step of package fault):
// WithoutSync skips all, WithoutDirSync only the directory's after the
// rename (the file's data is still synced first, which is what keeps a power
// loss from leaving an empty file). Ablation: syncing the directory under
// pf.sync instead of pf.dsync, or skipping the data fsync under
// WithoutDirSync, turns it red.
func TestSyncOptions(t *testing.T) {
	for _, tt := range []struct {
		name        string
		opts        []atomicfile.Option
		files, dirs int // the fsyncs WriteFile makes, and AppendFile creating its file
	}{
		{"durable", nil, 1, 1},
		{"WithoutSync", []atomicfile.Option{atomicfile.WithoutSync()}, 0, 0},
		{"WithoutDirSync", []atomicfile.Option{atomicfile.WithoutDirSync()}, 1, 0},
		{"both", []atomicfile.Option{atomicfile.WithoutDirSync(), atomicfile.WithoutSync()}, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var synced [2]int // files, directories
			seam.Set(t, func(step seam.Point, path string) error {
				switch {
				case step == seam.Sync && filepath.Dir(path) == dir:
					synced[0]++
				case step == seam.SyncDir && path == dir:
					synced[1]++
				}
				return nil
			})
			path := filepath.Join(dir, "w")
			require.NoError(t, atomicfile.WriteFile(path, []byte("x"), 0o644, tt.opts...), "WriteFile(%q)", path)
			require.Equal(t, [2]int{tt.files, tt.dirs}, synced, "WriteFile(%q) fsyncs (files, directories) = %v, want %v", path, synced, [2]int{tt.files, tt.dirs})

			synced = [2]int{}
			path = filepath.Join(dir, "a")
			require.NoError(t, atomicfile.AppendFile(path, []byte("x\n"), 0o644, tt.opts...), "AppendFile(%q)", path)
			require.Equal(t, [2]int{tt.files, tt.dirs}, synced, "AppendFile(%q) fsyncs (files, directories) = %v, want %v", path, synced, [2]int{tt.files, tt.dirs})
		})
	}
}

// TestAppendFileThatCreatesItsLogSyncsTheDirectory: an AppendFile that
// creates its log fsyncs the log and then its directory, so that a power
// loss cannot take the new log away with the record AppendFile acknowledged;
// a later AppendFile to that log fsyncs the log alone. When only the
// directory fsync fails, the error matches the errno, names the log and says
// the directory was not synced, and the record is in the log.
// Ablations (run): AppendFile without the directory fsync after a creation
// records no "syncdir" on the first append; the fsync on every append, not
// only the creating one, records one on the second.
func TestAppendFileThatCreatesItsLogSyncsTheDirectory(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "ticks.jsonl")
	var steps []string
	var fail error
	seam.Set(t, func(step seam.Point, path string) error {
		if step == seam.Sync || step == seam.SyncDir {
			steps = append(steps, string(step)+" "+path)
			if step == seam.SyncDir {
				return fail
			}
		}
		return nil
	})
	require.NoError(t, atomicfile.AppendFile(log, []byte("one\n"), 0o644), "AppendFile(%q) creating it", log)
	want := []string{"sync " + log, "syncdir " + dir}
	require.Equal(t, want, steps, "AppendFile(new log) fsyncs = %v, want %v", steps, want)

	steps = nil
	require.NoError(t, atomicfile.AppendFile(log, []byte("two\n"), 0o644), "AppendFile(%q) to its log", log)
	want = []string{"sync " + log}
	require.Equal(t, want, steps, "AppendFile(existing log) fsyncs = %v, want %v", steps, want)

	fail = syscall.EIO
	other := filepath.Join(dir, "other.jsonl")
	err := atomicfile.AppendFile(other, []byte("first\n"), 0o644)
	require.ErrorIs(t, err, syscall.EIO, "AppendFile(new log) with the directory fsync failing = %v, want EIO", err)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe, "AppendFile(new log) error = %T, want *fs.PathError", err)
	require.Equal(t, "AppendFile", pe.Op, "AppendFile error's Op = %q, want AppendFile", pe.Op)
	require.Equal(t, other, pe.Path, "AppendFile error's Path = %q, want %q", pe.Path, other)
	require.Contains(t, err.Error(), "directory was not synced", "AppendFile(new log) error = %v, want it to say the directory was not synced", err)
	require.Equal(t, "first\n", readFile(t, other), "log after AppendFile whose directory fsync failed")
}

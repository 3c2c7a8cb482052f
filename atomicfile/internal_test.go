package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/filetxn/filetxn/internal/osfile"
)

// TestWriteErrorIsSticky checks that once a Write has failed, CloseAtomicallyReplace
// refuses to publish, even when every later step would succeed. The descriptor is
// swapped for a read-only one on the same temporary file, so writes fail but
// sync, close and rename would not. Ablation: not recording the Write error in
// pf.err makes this red (the half-written temporary file is published).
func TestWriteErrorIsSticky(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	pf, err := Create(path, 0o644)
	if err != nil {
		t.Fatalf("Create(%q) = %v", path, err)
	}
	defer pf.Cleanup()
	if _, err := pf.Write([]byte("half")); err != nil {
		t.Fatalf("Write = %v", err)
	}
	pf.f.Close()
	if pf.f, err = os.Open(pf.tmp); err != nil {
		t.Fatal(err)
	}
	if _, err := pf.Write([]byte(" and the rest")); err == nil {
		t.Fatalf("Write on a read-only descriptor = nil, want an error")
	}
	err = pf.CloseAtomicallyReplace()
	if err == nil {
		t.Fatalf("CloseAtomicallyReplace() after a failed Write = nil, want the Write error")
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "Write" || pe.Path != path {
		t.Errorf("CloseAtomicallyReplace() = %v, want the *fs.PathError of the failed Write", err)
	}
	assertTarget(t, path, "old")
	assertNoTemps(t, dir)
}

// TestWriteFileOnClosedFileLeavesOriginal checks that a temporary file whose
// descriptor has gone bad is discarded by every step after it, in both sync
// modes. (With sync, fsync fails first; without it, close does.)
func TestWriteFileOnClosedFileLeavesOriginal(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []Option
	}{
		{"durable", nil},
		{"without sync", []Option{WithoutSync()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			pf, err := Create(path, 0o644, tt.opts...)
			if err != nil {
				t.Fatalf("Create(%q) = %v", path, err)
			}
			defer pf.Cleanup()
			pf.f.Close()
			if _, err := pf.Write([]byte("new")); !errors.Is(err, fs.ErrClosed) {
				t.Errorf("Write on a closed file = %v, want fs.ErrClosed", err)
			}
			if err := pf.CloseAtomicallyReplace(); err == nil {
				t.Errorf("CloseAtomicallyReplace() = nil, want an error")
			}
			assertTarget(t, path, "old")
			assertNoTemps(t, dir)
		})
	}
}

func TestDirRaw(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix path syntax")
	}
	tests := []struct{ in, want string }{
		{"f", "."},
		{"/f", "/"},
		{"//f", "/"},
		{"a/b", "a"},
		{"a//b", "a"},
		{"/a/b/c", "/a/b"},
		{"a/../b", "a/.."}, // not cleaned to "."
		{"./f", "."},
		{"a/./../f", "a/./.."},
	}
	for _, tt := range tests {
		if got := dirRaw(tt.in); got != tt.want {
			t.Errorf("dirRaw(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestJoinRaw(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix path syntax")
	}
	tests := []struct{ dir, name, want string }{
		{"a", "b", "a/b"},
		{"/", "b", "/b"},
		{"a/..", "../f", "a/../../f"},
		{".", "f", "./f"},
	}
	for _, tt := range tests {
		if got := joinRaw(tt.dir, tt.name); got != tt.want {
			t.Errorf("joinRaw(%q, %q) = %q, want %q", tt.dir, tt.name, got, tt.want)
		}
	}
}

// TestTempName checks the shape of temporary names and that a long target name
// still yields a name within the usual 255-byte limit, cut on a rune boundary.
func TestTempName(t *testing.T) {
	tests := []struct {
		name string
		base string
	}{
		{"short", "state.json"},
		{"255 bytes", strings.Repeat("x", 255)},
		{"multibyte at the cut", strings.Repeat("x", osfile.MaxTempBase-1) + strings.Repeat("é", 20)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := osfile.TempName(tt.base)
			if len(got) > 255 {
				t.Errorf("TempName(%d-byte base) = %d bytes, want <= 255", len(tt.base), len(got))
			}
			if !utf8.ValidString(got) {
				t.Errorf("TempName(%q) = %q, not valid UTF-8", tt.base, got)
			}
			i := strings.LastIndex(got, ".tmp-")
			if i < 0 || !strings.HasPrefix(got, ".") || !strings.HasPrefix(tt.base, got[1:i]) {
				t.Errorf("TempName(%q) = %q, want .<prefix of base>.tmp-<random>", tt.base, got)
			}
			if other := osfile.TempName(tt.base); other == got {
				t.Errorf("TempName(%q) twice = %q both times, want different names", tt.base, got)
			}
		})
	}
}

func assertTarget(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != want {
		t.Errorf("ReadFile(%q) = %q, %v; want %q, nil", path, b, err, want)
	}
}

func assertNoTemps(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(name, ".") && (strings.Contains(name, ".tmp-") || strings.ContainsAny(name[len(name)-1:], "0123456789")) {
			t.Errorf("temporary file %q left in %s", e.Name(), dir)
		}
	}
}

// TestSyncOptions checks which fsyncs each option leaves on, by watching the
// fsyncs WriteFile and AppendFile make: WithoutSync skips all, WithoutDirSync
// only the directory's after the rename (the file's data is still synced
// first, which is what keeps a power loss from leaving an empty file).
// Ablation: syncing the directory under pf.sync instead of pf.dsync, or
// skipping the data fsync under WithoutDirSync, turns it red.
func TestSyncOptions(t *testing.T) {
	for _, tt := range []struct {
		name            string
		opts            []Option
		file, directory bool
	}{
		{"durable", nil, true, true},
		{"WithoutSync", []Option{WithoutSync()}, false, false},
		{"WithoutDirSync", []Option{WithoutDirSync()}, true, false},
		{"both", []Option{WithoutDirSync(), WithoutSync()}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var files, dirs int
			synced = func(path string) {
				if path == dir {
					dirs++
				} else {
					files++
				}
			}
			defer func() { synced = nil }()
			if err := WriteFile(filepath.Join(dir, "w"), []byte("x"), 0o644, tt.opts...); err != nil {
				t.Fatal(err)
			}
			if (files == 1) != tt.file || (dirs == 1) != tt.directory || files > 1 || dirs > 1 {
				t.Errorf("WriteFile synced %d files and %d directories; want file %v, directory %v", files, dirs, tt.file, tt.directory)
			}
			files, dirs = 0, 0
			if err := AppendFile(filepath.Join(dir, "a"), []byte("x\n"), 0o644, tt.opts...); err != nil {
				t.Fatal(err)
			}
			if (files == 1) != tt.file || dirs != 0 || files > 1 {
				t.Errorf("AppendFile synced %d files and %d directories; want file %v", files, dirs, tt.file)
			}
			synced = nil

			pf, err := Create(filepath.Join(dir, "f"), 0o644, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer pf.Cleanup()
			if pf.sync != tt.file || pf.dsync != tt.directory {
				t.Errorf("Create: syncs file %v, directory %v; want %v, %v", pf.sync, pf.dsync, tt.file, tt.directory)
			}
		})
	}
}

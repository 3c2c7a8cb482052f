package fsys

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestReadFileMatchesOS checks ReadFile, and the *os.File version that other
// systems use, against os.ReadFile: files of sizes around the first guess, a
// file whose size fstat does not know (Linux's /proc), a missing file and a
// directory.
func TestReadFileMatchesOS(t *testing.T) {
	dir := t.TempDir()
	for _, rf := range []struct {
		name string
		read func(string) ([]byte, error)
	}{
		{"ReadFile", ReadFile},
		{"readFileOS", func(p string) ([]byte, error) { return readFileOS(p, nil, 1) }},
		{"ReadFileInto small buffer", func(p string) ([]byte, error) { return ReadFileInto(p, make([]byte, 3, 10), 1) }},
		{"ReadFileInto large buffer", func(p string) ([]byte, error) { return ReadFileInto(p, make([]byte, 0, 2<<20), 4096) }},
		{"readFileOS large buffer", func(p string) ([]byte, error) { return readFileOS(p, make([]byte, 0, 2<<20), 4096) }},
	} {
		t.Run(rf.name, func(t *testing.T) {
			for _, size := range []int{0, 1, 511, 512, 513, 4096, 1 << 20} {
				path := filepath.Join(dir, "f")
				want := bytes.Repeat([]byte("x"), size)
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				got, err := rf.read(path)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s(%d bytes) = %d bytes, %v", rf.name, size, len(got), err)
				}
			}
			if want, err := os.ReadFile("/proc/self/limits"); err == nil {
				got, err := rf.read("/proc/self/limits")
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s(/proc/self/limits) = %q, %v; want %q", rf.name, got, err, want)
				}
			}
			if _, err := rf.read(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s(missing) = %v, want fs.ErrNotExist", rf.name, err)
			}
			var pe *fs.PathError
			if _, err := rf.read(dir); !errors.Is(err, ErrNotRegular) || !errors.As(err, &pe) || pe.Path != dir {
				t.Errorf("%s(directory) = %v, want an *fs.PathError naming it and wrapping ErrNotRegular", rf.name, err)
			}
		})
	}
	var pe *fs.PathError
	if _, err := OpenFile(filepath.Join(dir, "f"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); !errors.Is(err, fs.ErrExist) || !errors.As(err, &pe) {
		t.Errorf("OpenFile(existing, O_EXCL) = %v, want an *fs.PathError matching fs.ErrExist", err)
	}
}

// TestReadFileIntoReusesBuffer checks that ReadFileInto reads into the
// caller's buffer when the file and the spare room fit, and into a new one,
// with the spare room, when they do not.
func TestReadFileIntoReusesBuffer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 64)
	got, err := ReadFileInto(path, buf, 16)
	if err != nil || string(got) != "0123456789" || &got[:1][0] != &buf[:1][0] {
		t.Errorf("ReadFileInto(10 bytes, cap 64, spare 16) = %q, %v, same array %v; want the caller's array", got, err, err == nil && &got[:1][0] == &buf[:1][0])
	}
	got, err = ReadFileInto(path, buf, 60)
	if err != nil || string(got) != "0123456789" || &got[:1][0] == &buf[:1][0] || cap(got) < 70 {
		t.Errorf("ReadFileInto(10 bytes, cap 64, spare 60) = %q (cap %d), %v; want a new array of at least 70", got, cap(got), err)
	}
}

// TestReadFileIntoKeepsSpareRoom checks the room promised after the bytes
// when fstat cannot tell the size (Linux's /proc files say 0), so that the
// first guess is filled and the read must grow. Ablation: returning the bytes
// without withSpare turns it red.
func TestReadFileIntoKeepsSpareRoom(t *testing.T) {
	const path = "/proc/self/maps" // several KiB on any running process
	if _, err := os.Stat(path); err != nil {
		t.Skip("no", path)
	}
	for _, rf := range []struct {
		name string
		read func(string, []byte, int) ([]byte, error)
	}{{"ReadFileInto", ReadFileInto}, {"readFileOS", readFileOS}} {
		got, err := rf.read(path, nil, 4097)
		if err != nil || len(got) == 0 || cap(got)-len(got) < 4096 {
			t.Errorf("%s(%s, nil, 4097) = %d bytes with %d to spare, %v; want at least 4096 to spare", rf.name, path, len(got), cap(got)-len(got), err)
		}
	}
}

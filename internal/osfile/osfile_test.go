package osfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestReadFileMatchesOS(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 511, 512, 513, 4096, 1 << 20} {
		path := filepath.Join(dir, "f")
		want := bytes.Repeat([]byte("x"), size)
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("ReadFile(%d bytes) = %d bytes, %v", size, len(got), err)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v, want fs.ErrNotExist", err)
	}
	var pe *fs.PathError
	if _, err := OpenFile(filepath.Join(dir, "f"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); !errors.Is(err, fs.ErrExist) || !errors.As(err, &pe) {
		t.Errorf("OpenFile(existing, O_EXCL) = %v, want an *fs.PathError matching fs.ErrExist", err)
	}
}

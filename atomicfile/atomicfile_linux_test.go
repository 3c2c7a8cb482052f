package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/filetxn/filetxn/atomicfile"
)

// fsAppendFL is FS_APPEND_FL from linux/fs.h: the file can only be opened for
// appending, by anyone, root included.
const fsAppendFL = 0x20

// TestCreateRefusesUnopenableTargetAsRoot exercises the open clause of the
// read-only check where the mode clause cannot help: an append-only file has
// write bits, yet opening it O_WRONLY fails with EPERM even for root. Ablation:
// dropping the open probe from checkWritable makes this red (Create stages a
// temporary file; only the rename would fail later).
func TestCreateRefusesUnopenableTargetAsRoot(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	writeFile(t, path, "old")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	flags, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags|fsAppendFL)
	}
	if err != nil {
		f.Close()
		t.Skipf("cannot make %s append-only: %v", path, err)
	}
	t.Cleanup(func() {
		unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags)
		f.Close()
	})

	before := listDir(t, dir)
	pf, err := atomicfile.Create(path, 0o644)
	if err == nil {
		pf.Cleanup()
	}
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Create(%q) on an append-only file = %v, want an error wrapping fs.ErrPermission", path, err)
	}
	assertPathError(t, err, "Create", path)
	if got := listDir(t, dir); !slices.Equal(got, before) {
		t.Errorf("directory after refused Create = %q, want %q", got, before)
	}
}

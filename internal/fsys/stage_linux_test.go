package fsys

import (
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
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
	path := oldFile(t, dir)
	f, err := os.Open(path)
	require.NoError(t, err)
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

	pf, err := Create("Create", path, 0o644, Options{})
	if err == nil {
		pf.Cleanup()
	}
	require.ErrorIs(t, err, fs.ErrPermission, "Create(%q) on an append-only file = %v, want an error wrapping fs.ErrPermission", path, err)
	var pe *fs.PathError
	require.True(t, errors.As(err, &pe) && pe.Op == "Create" && pe.Path == path, "Create(%q) = %v, want an *fs.PathError with Op Create and Path the path", path, err)
	requireFiles(t, dir, "old", "f")
}

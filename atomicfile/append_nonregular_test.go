package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/internal/testkit"
)

// TestAppendFileRefusesNonRegularFiles puts a named pipe nobody reads, a
// directory, a unix socket and a device at the log's path (those this
// system can make): AppendFile returns at once an *fs.PathError with Op
// "AppendFile" naming the path and wrapping ErrNotRegular, leaves the same
// kind of file there, and keeps no descriptor open. Ablation: opening with
// os.OpenFile, as before, hangs on the pipe (waiting for a reader, forever:
// the guard fails the test), writes the record to the device and gives the
// directory's EISDIR instead of ErrNotRegular.
func TestAppendFileRefusesNonRegularFiles(t *testing.T) {
	for kind, path := range testkit.Make(t) {
		t.Run(kind, func(t *testing.T) {
			before, err := os.Lstat(path)
			require.NoError(t, err)
			fds := openFDs()
			err = testkit.Within(t, func() error { return atomicfile.AppendFile(path, []byte("x\n"), 0o644) })
			require.ErrorIs(t, err, atomicfile.ErrNotRegular, "AppendFile(%s) = %v, want an error wrapping ErrNotRegular", kind, err)
			var pe *fs.PathError
			require.True(t, errors.As(err, &pe) && pe.Op == "AppendFile" && pe.Path == path,
				"AppendFile(%s) = %v, want an *fs.PathError with Op AppendFile naming %s", kind, err, path)
			after, err := os.Lstat(path)
			require.True(t, err == nil && after.Mode().Type() == before.Mode().Type() && os.SameFile(before, after),
				"AppendFile(%s) left %v, %v at the path, want the %s untouched", kind, after, err, kind)
			require.Equal(t, fds, openFDs(), "AppendFile(%s): open descriptors = %d after, want %d as before", kind, openFDs(), fds)
		})
	}
}

// openFDs counts this process's open descriptors where /proc/self/fd lists
// them (Linux), and is 0 elsewhere.
func openFDs() int {
	if testkit.Detected() {
		return 0 // /proc/self/fd is the Linux side of Wine, not this program's handles
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents)
}

// TestAppendFileRefusesAReadOnlyFile: a log whose mode grants no write bit
// (0444) is refused with an error wrapping fs.ErrPermission that names it,
// and keeps its contents, whoever the caller is: "read-only" is decided on
// the file's mode, as WriteFile decides it (see the package doc), so root,
// for whom the open succeeds, is refused too. A log that AppendFile itself
// creates with a perm that grants no write bit still gets its first record.
// Ablation: appending without the mode check, as before, is red when run as
// root (CI's case): the record lands in the read-only log.
func TestAppendFileRefusesAReadOnlyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	writeFile(t, path, "keep me\n")
	require.NoError(t, os.Chmod(path, 0o444))
	t.Cleanup(func() { os.Chmod(path, 0o644) })
	err := atomicfile.AppendFile(path, []byte("x\n"), 0o644)
	require.ErrorIs(t, err, fs.ErrPermission, "AppendFile(read-only log) = %v, want an error wrapping fs.ErrPermission", err)
	assertPathError(t, err, "AppendFile", path)
	require.Equal(t, "keep me\n", readFile(t, path), "AppendFile(read-only log) changed it")

	fresh := filepath.Join(t.TempDir(), "fresh")
	t.Cleanup(func() { os.Chmod(fresh, 0o644) })
	require.NoError(t, atomicfile.AppendFile(fresh, []byte("first\n"), 0o444), "AppendFile(new log, perm 0444)")
	require.Equal(t, "first\n", readFile(t, fresh), "AppendFile(new log, perm 0444): contents")
}

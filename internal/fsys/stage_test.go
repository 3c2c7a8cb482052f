package fsys

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/internal/seam"
)

// The tests of this file are those of the PendingFile's own steps; what
// WriteFile guarantees through them (modes, symbolic links, refusals, the
// fsyncs each option leaves) is tested in package atomicfile.

// create is Create with Op "Create" for a test that must succeed.
func create(t *testing.T, path string, o Options) *PendingFile {
	t.Helper()
	pf, err := Create("Create", path, 0o644, o)
	require.NoError(t, err, "Create(%q)", path)
	t.Cleanup(func() { pf.Cleanup() })
	return pf
}

// oldFile makes dir/f holding "old" and returns its path.
func oldFile(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	return path
}

// requireFiles fails the test unless dir holds exactly the files want, in
// the order os.ReadDir gives (by name), and, if contents is not "", unless
// its file "f" holds contents.
func requireFiles(t *testing.T, dir string, contents string, want ...string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	got := []string{}
	for _, e := range es {
		got = append(got, e.Name())
	}
	require.Equal(t, append([]string{}, want...), got, "files in %s", dir)
	if contents != "" {
		b, err := os.ReadFile(filepath.Join(dir, "f"))
		require.NoError(t, err)
		require.Equal(t, contents, string(b), "contents of %s", filepath.Join(dir, "f"))
	}
}

// TestCreateStagesBesideTheTargetUntilTheReplace: the temporary file is in
// the target's directory under renameio's name (this package's own on
// Windows), the target keeps its old contents until the rename, and the
// temporary name is gone after it.
func TestCreateStagesBesideTheTargetUntilTheReplace(t *testing.T) {
	dir := t.TempDir()
	path := oldFile(t, dir)
	pf := create(t, path, Options{})
	tmp := pf.TempPath()
	require.Equal(t, dir, filepath.Dir(tmp), "Create(%q).TempPath() directory", path)
	want := `^\.f[0-9]+$` // renameio's naming
	if runtime.GOOS == "windows" {
		want = `^\.f\.tmp-[0-9a-z]+$`
	}
	require.Regexp(t, regexp.MustCompile(want), filepath.Base(tmp), "Create(%q).TempPath() name", path)

	_, err := pf.Write([]byte("new"))
	require.NoError(t, err, "Write")
	requireFiles(t, dir, "old", filepath.Base(tmp), "f")
	require.NoError(t, pf.CloseAtomicallyReplace(), "CloseAtomicallyReplace()")
	requireFiles(t, dir, "new", "f")
}

// TestErrorsNameTheCallersOp: every error of Create and of the PendingFile's
// methods is an *fs.PathError with the Op the caller gave and the caller's
// path, whichever step fails. Ablation: Create not recording op in the
// PendingFile makes it red.
func TestErrorsNameTheCallersOp(t *testing.T) {
	const op = "Write"
	dir := t.TempDir()
	staged := func(t *testing.T, name string) (*PendingFile, string) {
		path := filepath.Join(dir, name)
		pf, err := Create(op, path, 0o644, Options{})
		require.NoError(t, err, "Create(%q)", path)
		return pf, path
	}
	for _, tt := range []struct {
		step string
		fail func(t *testing.T) (path string, err error)
	}{
		{"Create", func(t *testing.T) (string, error) {
			path := filepath.Join(dir, "none", "f")
			_, err := Create(op, path, 0o644, Options{})
			return path, err
		}},
		{"Write", func(t *testing.T) (string, error) {
			pf, path := staged(t, "w")
			pf.Cleanup()
			_, err := pf.Write(nil)
			return path, err
		}},
		{"CloseAtomicallyReplace", func(t *testing.T) (string, error) {
			pf, path := staged(t, "c")
			require.NoError(t, pf.CloseAtomicallyReplace())
			return path, pf.CloseAtomicallyReplace()
		}},
	} {
		path, err := tt.fail(t)
		var pe *fs.PathError
		require.ErrorAs(t, err, &pe, "%s failing = %v, want an *fs.PathError", tt.step, err)
		require.Equal(t, [2]string{op, path}, [2]string{pe.Op, pe.Path}, "%s failing = %v: Op and Path", tt.step, err)
	}
}

// TestCleanup checks that Cleanup removes an unpublished temporary file, leaves the
// target alone, and is a no-op after success and when repeated. After a success,
// a stranger's file is put at the old temporary name: a Cleanup that still
// removed things would take it. Ablation: dropping the state check at the top of
// Cleanup makes "after success is a no-op" red.
func TestCleanup(t *testing.T) {
	for _, tt := range []struct {
		name    string
		replace bool   // call CloseAtomicallyReplace before Cleanup
		want    string // target contents afterwards
	}{
		{name: "after success is a no-op", replace: true, want: "new"},
		{name: "without replace discards", replace: false, want: "old"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			pf := create(t, oldFile(t, dir), Options{})
			_, err := pf.Write([]byte("new"))
			require.NoError(t, err, "Write")
			files := []string{"f"}
			if tt.replace {
				require.NoError(t, pf.CloseAtomicallyReplace(), "CloseAtomicallyReplace()")
				require.NoError(t, os.WriteFile(pf.TempPath(), []byte("not yours"), 0o644))
				files = []string{filepath.Base(pf.TempPath()), "f"}
			}
			for i := range 2 {
				require.NoError(t, pf.Cleanup(), "Cleanup() #%d", i+1)
			}
			requireFiles(t, dir, tt.want, files...)
			_, err = pf.Write([]byte("more"))
			require.ErrorIs(t, err, fs.ErrClosed, "Write after Cleanup = %v, want fs.ErrClosed", err)
			err = pf.CloseAtomicallyReplace()
			require.ErrorIs(t, err, fs.ErrClosed, "CloseAtomicallyReplace after Cleanup = %v, want fs.ErrClosed", err)
		})
	}
	t.Run("nil PendingFile", func(t *testing.T) {
		var pf *PendingFile
		require.NoError(t, pf.Cleanup(), "(*PendingFile)(nil).Cleanup()")
	})
}

// TestFailedReplaceLeavesOriginal breaks the staged state between Create and
// CloseAtomicallyReplace and checks that the replace fails, the target is what it
// was and no temporary file remains. Ablation: removing the Cleanup call after a
// failed rename in publish makes "target became a directory" red.
func TestFailedReplaceLeavesOriginal(t *testing.T) {
	for _, tt := range []struct {
		name     string
		sabotage func(t *testing.T, pf *PendingFile, path string)
		contents string // of the target's directory's "f" afterwards, if a file
	}{
		{
			name: "temporary file removed",
			sabotage: func(t *testing.T, pf *PendingFile, path string) {
				if runtime.GOOS == "windows" {
					t.Skip("an open file cannot be removed on Windows")
				}
				require.NoError(t, os.Remove(pf.TempPath()))
			},
			contents: "old",
		},
		{
			name: "target became a directory",
			sabotage: func(t *testing.T, pf *PendingFile, path string) {
				require.NoError(t, os.Remove(path))
				require.NoError(t, os.Mkdir(path, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(path, "inside"), []byte("x"), 0o644))
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := oldFile(t, dir)
			pf := create(t, path, Options{})
			_, err := pf.Write([]byte("new"))
			require.NoError(t, err, "Write")
			tt.sabotage(t, pf, path)
			err = pf.CloseAtomicallyReplace()
			var pe *fs.PathError
			require.ErrorAs(t, err, &pe, "CloseAtomicallyReplace() = %v, want an *fs.PathError", err)
			require.Equal(t, [2]string{"Create", path}, [2]string{pe.Op, pe.Path}, "CloseAtomicallyReplace() = %v: Op and Path", err)
			requireFiles(t, dir, tt.contents, "f")
			if tt.contents == "" {
				requireFiles(t, path, "", "inside")
			}
			require.NoError(t, pf.Cleanup(), "Cleanup() after a failed replace")
		})
	}
}

// TestCloseAtomicallyReplacePublishesOnce: a second CloseAtomicallyReplace,
// and a Write after the first, fail with fs.ErrClosed, and the target holds
// what the first published.
func TestCloseAtomicallyReplacePublishesOnce(t *testing.T) {
	dir := t.TempDir()
	pf := create(t, oldFile(t, dir), Options{})
	require.NoError(t, pf.CloseAtomicallyReplace(), "CloseAtomicallyReplace()")
	err := pf.CloseAtomicallyReplace()
	require.ErrorIs(t, err, fs.ErrClosed, "second CloseAtomicallyReplace() = %v, want fs.ErrClosed", err)
	_, err = pf.Write([]byte("x"))
	require.ErrorIs(t, err, fs.ErrClosed, "Write after CloseAtomicallyReplace = %v, want fs.ErrClosed", err)
	b, err := os.ReadFile(filepath.Join(dir, "f"))
	require.NoError(t, err)
	require.Empty(t, b, "target after CloseAtomicallyReplace of nothing written")
}

// TestWriteErrorIsSticky checks that once a Write has failed, CloseAtomicallyReplace
// refuses to publish, even when every later step would succeed. The descriptor is
// swapped for a read-only one on the same temporary file, so writes fail but
// sync, close and rename would not. Ablation: not recording the Write error in
// pf.err makes this red (the half-written temporary file is published).
func TestWriteErrorIsSticky(t *testing.T) {
	dir := t.TempDir()
	path := oldFile(t, dir)
	pf := create(t, path, Options{})
	_, err := pf.Write([]byte("half"))
	require.NoError(t, err, "Write")
	pf.f.Close()
	pf.f, err = os.Open(pf.tmp)
	require.NoError(t, err)
	_, err = pf.Write([]byte(" and the rest"))
	require.Error(t, err, "Write on a read-only descriptor = nil, want an error")
	err = pf.CloseAtomicallyReplace()
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe, "CloseAtomicallyReplace() after a failed Write = %v, want the Write's *fs.PathError", err)
	require.Equal(t, path, pe.Path, "CloseAtomicallyReplace() after a failed Write = %v: Path", err)
	require.NotErrorIs(t, err, fs.ErrClosed, "CloseAtomicallyReplace() after a failed Write = %v, want the Write's error", err)
	requireFiles(t, dir, "old", "f")
}

// TestClosedDescriptorPublishesNothing checks that a temporary file whose
// descriptor has gone bad is discarded by every step after it, in both sync
// modes. (With sync, fsync fails first; without it, close does.)
func TestClosedDescriptorPublishesNothing(t *testing.T) {
	for _, o := range []Options{{}, {NoSync: true}} {
		t.Run(map[bool]string{false: "durable", true: "without sync"}[o.NoSync], func(t *testing.T) {
			dir := t.TempDir()
			pf := create(t, oldFile(t, dir), o)
			pf.f.Close()
			_, err := pf.Write([]byte("new"))
			require.ErrorIs(t, err, fs.ErrClosed, "Write on a closed file = %v, want fs.ErrClosed", err)
			require.Error(t, pf.CloseAtomicallyReplace(), "CloseAtomicallyReplace() on a closed file = nil, want an error")
			requireFiles(t, dir, "old", "f")
		})
	}
}

// TestCheckRunsBeforeTheRenameAndStopsIt: Options.Check runs after the
// temporary file's fsync and before the rename; its error is returned as it
// is, nothing is published and the temporary file is gone. Ablation:
// calling the check after pf.rename makes it red (the target is replaced).
func TestCheckRunsBeforeTheRenameAndStopsIt(t *testing.T) {
	dir := t.TempDir()
	errLost := errors.New("lock lost")
	var pub Published
	var renamed bool
	pf := create(t, oldFile(t, dir), Options{Published: &pub, Check: func() error {
		b, err := os.ReadFile(filepath.Join(dir, "f"))
		renamed = err != nil || string(b) != "old"
		return errLost
	}})
	_, err := pf.Write([]byte("new"))
	require.NoError(t, err, "Write")
	err = pf.CloseAtomicallyReplace()
	require.Same(t, errLost, err, "CloseAtomicallyReplace() with a failing Check = %v, want its error as it is", err)
	require.False(t, renamed, "the target had been replaced when Check ran")
	require.Equal(t, Published{}, pub, "Published after a failing Check")
	requireFiles(t, dir, "old", "f")
}

// TestPublishedLeavesTheDirectoryFsyncToTheCaller: with Options.Published,
// CloseAtomicallyReplace renames and records the target and the directory
// fsync still to make, without making it; without the directory fsync
// (NoDirSync) the recorded fsync is nil. Ablations: recording no SyncDir
// makes it red (the engine would then never make the directory durable),
// and so does syncing the directory before recording it (the engine would
// make it under its lock).
func TestPublishedLeavesTheDirectoryFsyncToTheCaller(t *testing.T) {
	for _, o := range []Options{{}, {NoDirSync: true}} {
		dir := t.TempDir()
		path := oldFile(t, dir)
		dirSyncs := 0
		seam.Set(t, func(step seam.Point, p string) error {
			if step == seam.SyncDir && p == dir {
				dirSyncs++
			}
			return nil
		})
		o.Published = &Published{}
		pf := create(t, path, o)
		_, err := pf.Write([]byte("new"))
		require.NoError(t, err, "Write")
		require.NoError(t, pf.CloseAtomicallyReplace(), "CloseAtomicallyReplace()")
		requireFiles(t, dir, "new", "f")
		require.Equal(t, path, o.Published.Target, "CloseAtomicallyReplace() with %+v: Published.Target", o)
		require.Zero(t, dirSyncs, "CloseAtomicallyReplace() with Published: directory fsyncs made")
		if o.NoDirSync {
			require.Nil(t, o.Published.SyncDir, "CloseAtomicallyReplace() with NoDirSync: Published.SyncDir")
			continue
		}
		require.NotNil(t, o.Published.SyncDir, "CloseAtomicallyReplace(): Published.SyncDir")
		require.NoError(t, o.Published.SyncDir(), "Published.SyncDir()")
		require.Equal(t, 1, dirSyncs, "Published.SyncDir(): directory fsyncs made")
	}
}

// TestCheckRefusesWhatCreateRefusesAndCreatesNothing: Check answers as
// Create would about the target (a new file and a writable one pass, a
// read-only one and a directory do not), with Create's errors under the
// caller's op, and leaves no file behind.
func TestCheckRefusesWhatCreateRefusesAndCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	rw := filepath.Join(dir, "rw")
	ro := filepath.Join(dir, "ro")
	require.NoError(t, os.WriteFile(rw, []byte("a"), 0o644))
	require.NoError(t, os.WriteFile(ro, []byte("a"), 0o444))
	t.Cleanup(func() { os.Chmod(ro, 0o644) })
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))

	require.NoError(t, Check("Archive", filepath.Join(dir, "new")), "Check(a new file)")
	require.NoError(t, Check("Archive", rw), "Check(a writable file)")
	err := Check("Archive", ro)
	var pe *fs.PathError
	require.ErrorIs(t, err, fs.ErrPermission, "Check(a read-only file) = %v, want fs.ErrPermission", err)
	require.True(t, errors.As(err, &pe) && pe.Op == "Archive" && pe.Path == ro, "Check(a read-only file) = %v, want an *fs.PathError with Op Archive naming it", err)
	_, createErr := Create("Archive", ro, 0o644, Options{})
	require.Equal(t, createErr.Error(), err.Error(), "Check and Create disagree on a read-only file")
	require.Error(t, Check("Archive", sub), "Check(a directory)")

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{"rw", "ro", "sub"}, names, "files after Check, want no temporary file")
}

// TestStartSyncChangesNothingButWhenTheWorkIsDone: StartSync between two
// Writes leaves the file as if it had not been called (the later Write is
// published too), and on a file already published or cleaned up it does
// nothing, without panicking. Its effect (one journal commit for the
// fsyncs of a multi-file commit) is a matter of timing, measured in
// BENCHMARKS.md. Ablation: a StartSync that detaches or closes the file
// makes it red.
func TestStartSyncChangesNothingButWhenTheWorkIsDone(t *testing.T) {
	for _, o := range []Options{{}, {NoSync: true}} {
		t.Run(map[bool]string{false: "durable", true: "without sync"}[o.NoSync], func(t *testing.T) {
			dir := t.TempDir()
			pf := create(t, oldFile(t, dir), o)
			_, err := pf.Write([]byte("ne"))
			require.NoError(t, err, "Write")
			pf.StartSync()
			_, err = pf.Write([]byte("w"))
			require.NoError(t, err, "Write after StartSync")
			require.NoError(t, pf.Sync(), "Sync after StartSync")
			require.NoError(t, pf.CloseAtomicallyReplace(), "CloseAtomicallyReplace after StartSync")
			pf.StartSync()
			requireFiles(t, dir, "new", "f")
		})
	}
}

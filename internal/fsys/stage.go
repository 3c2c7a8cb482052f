package fsys

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/filetxn/filetxn/internal/seam"
)

// A PendingFile is a temporary file that will atomically replace a target when
// [PendingFile.CloseAtomicallyReplace] is called, or be removed by
// [PendingFile.Cleanup]. Until then the target is untouched and readers see the
// old contents. It is created by [Create]; the usual shape is
//
//	pf, err := fsys.Create(op, path, perm, o)
//	if err != nil {
//		return err
//	}
//	defer pf.Cleanup() // no-op once replaced
//	... write to pf ...
//	return pf.CloseAtomicallyReplace()
//
// A PendingFile is not safe for concurrent use, and its zero value is not
// usable: get one from Create.
type PendingFile struct {
	f         *os.File
	path      string       // as the caller gave it; the Path of every error
	target    string       // path with the symlinks of its last element resolved; what is replaced
	staging                // the temporary file, in target's directory (per OS: how it was made)
	stale     string       // a locked write's other temporary name, removed after the rename (see stageLocked)
	sync      bool         // fsync the file before the rename
	dsync     bool         // fsync the directory after the rename
	check     func() error // the engine's, called between the fsync and the rename (see Options)
	published *Published   // the engine's: where the directory fsync is left for it to make
	op        string       // the Op of every error
	err       error        // the first Write error: sticky, so a short temp is never published
	closed    bool         // f has been closed
	state     state
}

// state is where a PendingFile is in its life.
type state int

const (
	pending  state = iota // temp exists, target untouched
	replaced              // the rename happened; nothing left to clean
	cleaned               // temp removed (by Cleanup or a failed replace)
)

// Create makes a temporary file beside path (beside the file it finally points
// to, if path is a symbolic link) and returns it as a [PendingFile]: write the
// contents to it, then call [PendingFile.CloseAtomicallyReplace] to publish them,
// and always [PendingFile.Cleanup], for instance deferred.
//
// With [Options.LockKey] the temporary file has one of the two names that
// Names gives for the target and the lock, and a file of the other
// name, a dead writer's, is removed once the rename is done; Create and
// CloseAtomicallyReplace read no directory. Without it, the name is a fresh
// random one, as renameio names it (see package atomicfile), which nobody
// can tell from a live writer's, and which a writer killed before its
// rename leaves behind for good.
//
// Create checks the target before creating anything: a target that exists
// and is read-only is refused with an error wrapping [fs.ErrPermission], one
// that is not a regular file with [ErrNotRegular], and a missing
// parent directory gives an error wrapping [fs.ErrNotExist] that names the
// directory. The temporary file gets perm minus the umask when the target is
// new, and the target's exact mode (and owner, on Unix as root) when it
// exists. Every error of Create and of the PendingFile's methods is an
// [*fs.PathError] with Op op (the caller's own name, such as "WriteFile") and
// Path path.
func Create(op, path string, perm fs.FileMode, o Options) (*PendingFile, error) {
	pf := &PendingFile{path: path, op: op, sync: !o.NoSync, dsync: !o.NoSync && !o.NoDirSync, check: o.Check, published: o.Published}
	fi, err := pf.checkTarget()
	if err != nil {
		return nil, err
	}
	target := pf.target

	// The create is where the umask applies to a new file's perm. An existing
	// target's mode is made exact below by keepMeta (with fchmod, which the
	// umask does not touch, when needed).
	dir := dirRaw(target)
	createPerm := perm
	if fi != nil {
		createPerm = tempPerm(fi)
	}
	err = seam.At(seam.Create, target)
	if err == nil && o.TempName != "" {
		pf.tmp = joinRaw(dir, o.TempName)
		pf.f, err = OpenFile(pf.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, createPerm)
	} else if err == nil && o.LockKey != "" {
		err = pf.stageLocked(dir, createPerm, Names(filepath.Base(target), o.LockKey))
	} else if err == nil {
		err = pf.stage(dir, createPerm)
	}
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok && errors.Is(err, fs.ErrNotExist) {
			return nil, pf.fail(fmt.Errorf("parent directory %s: %w", dir, pe.Err))
		}
		return nil, pf.fail(UnwrapOS(err))
	}
	if fi != nil {
		if err := keepMeta(pf.f, fi); err != nil {
			pf.Cleanup()
			return nil, pf.fail(UnwrapOS(err))
		}
	}
	return pf, nil
}

// Check makes the checks Create makes of the target at path, and creates
// nothing: nil when a Create would get as far as staging a temporary file.
// A caller that publishes several files, one after another, checks the later
// ones first, so that a target refused for what it is (read-only, not a
// regular file) fails the whole change before any file is replaced. Its
// errors are Create's, with Op op.
func Check(op, path string) error {
	_, err := (&PendingFile{path: path, op: op}).checkTarget()
	return err
}

// checkTarget resolves pf.path into pf.target and refuses a target that
// Create must not replace; it returns the target's FileInfo, nil for a new
// file.
func (pf *PendingFile) checkTarget() (fs.FileInfo, error) {
	if pf.path == "" {
		return nil, &fs.PathError{Op: pf.op, Path: pf.path, Err: fs.ErrInvalid}
	}
	target, fi, err := resolve(pf.path)
	if err != nil {
		return nil, &fs.PathError{Op: pf.op, Path: pf.path, Err: err}
	}
	pf.target = target
	if fi == nil && os.IsPathSeparator(target[len(target)-1]) {
		// "dir/" or a link to "dir/": there is no file name to create.
		return nil, pf.fail(fmt.Errorf("names a directory: %w", fs.ErrInvalid))
	}
	if fi != nil {
		if !fi.Mode().IsRegular() {
			return nil, pf.fail(NotRegular(fi.Mode()))
		}
		// A rename never asks about the target's own permissions (only the
		// directory's count), so without this a 0444 file would be silently
		// replaced. The mode comes first and is what refuses for root, whose
		// open succeeds whatever the mode says; checkWritable then asks the
		// system.
		if fi.Mode().Perm()&0o222 == 0 {
			return nil, pf.fail(fmt.Errorf("read-only file (mode %v): %w", fi.Mode().Perm(), fs.ErrPermission))
		}
		if err := checkWritable(target, fi); err != nil {
			return nil, pf.fail(err)
		}
	}
	return fi, nil
}

// Write writes p to the temporary file, as [io.Writer]. The first error is
// sticky: every later Write and CloseAtomicallyReplace return it, so a file
// that was not completely written can never be published. After
// CloseAtomicallyReplace or Cleanup, Write returns an error wrapping
// [fs.ErrClosed].
func (pf *PendingFile) Write(p []byte) (int, error) {
	if pf.state != pending {
		return 0, pf.fail(fs.ErrClosed)
	}
	if pf.err != nil {
		return 0, pf.err
	}
	n, err := 0, seam.At(seam.Write, pf.target)
	if err == nil {
		n, err = pf.f.Write(p)
	}
	if err != nil {
		pf.err = pf.fail(UnwrapOS(err))
		return n, pf.err
	}
	return n, nil
}

// CloseAtomicallyReplace publishes what was written: it fsyncs the temporary
// file, closes it, renames it over the target and fsyncs the directory (the two
// fsyncs are skipped under [Options.NoSync], the second under
// [Options.NoDirSync]). With [Options.Check], the check runs between the
// file's fsync and the rename; with [Options.Published], the directory fsync
// is left to the caller.
// Readers see the old file until the rename and the new one after it, never a
// mix.
//
// If any step up to and including the rename fails, or a Write failed earlier,
// the temporary file is removed, the target is untouched and the error is
// returned. If only the directory fsync fails, the target has already been
// replaced (readers see the new file, the temporary file is gone) but the
// replacement may not survive a crash; the error is returned so that the caller
// can tell, and writing the same bytes again is the way to retry.
//
// Calling it again, or after Cleanup, returns an error wrapping [fs.ErrClosed].
func (pf *PendingFile) CloseAtomicallyReplace() error {
	syncDir, err := pf.publish()
	switch {
	case err != nil:
		return err
	case pf.published != nil:
		*pf.published = Published{Target: pf.target, SyncDir: syncDir}
		return nil
	case syncDir != nil:
		return syncDir()
	}
	return nil
}

// publish is CloseAtomicallyReplace up to the rename: it fsyncs the
// temporary file (unless NoSync), calls the engine's check (when there
// is one), and publishes only if that returns nil: it closes the temporary
// file and renames it over the target. It returns the directory fsync that
// makes the rename durable (nil under NoSync or NoDirSync; on
// Windows it does nothing, the rename's write-through having done that
// work). On any error, the check's included (returned as it is), the
// temporary file is removed and the target is untouched.
//
// The engine checks its lock there, after the slow fsync, so that only the
// rename follows the check, and runs the directory fsync itself, after it
// has released the lock (see Options).
func (pf *PendingFile) publish() (func() error, error) {
	if pf.state != pending {
		return nil, pf.fail(fs.ErrClosed)
	}
	if pf.err != nil {
		pf.Cleanup()
		return nil, pf.err
	}

	// The data must reach the disk before the name does: without an fsync
	// before the rename, a crash soon after it can leave the target empty or
	// partial on file systems that commit the rename before the data (ext4
	// without auto_da_alloc, XFS, btrfs in some modes; renameio cites Ted
	// Ts'o on ext4's data=ordered, which does not make the fsync
	// unnecessary). Then the temporary file is closed (Windows cannot rename
	// an open file, and on NFS close is what flushes to the server) and
	// renamed over the target, the atomic step.
	if pf.sync {
		if err := syncFile(pf.f, pf.target); err != nil {
			pf.Cleanup()
			return nil, pf.fail(UnwrapOS(err))
		}
	}
	if pf.check != nil {
		if err := pf.check(); err != nil {
			pf.Cleanup()
			return nil, err
		}
	}
	if err := pf.rename(); err != nil {
		pf.Cleanup()
		return nil, pf.fail(UnwrapOS(err))
	}
	pf.state = replaced
	if pf.stale != "" {
		removeStale(pf.stale)
	}

	// The rename is a change to the directory, and it is durable only once
	// the directory is fsynced (rename(2) promises atomicity, not durability).
	// The temporary and the target share the directory, so one fsync covers
	// both the new name and the old temporary name's removal.
	if !pf.dsync {
		return nil, nil
	}
	dir := dirRaw(pf.target)
	return func() error {
		if err := SyncDir(dir); err != nil {
			return pf.fail(UnwrapOS(err))
		}
		return nil
	}, nil
}

// Cleanup closes and removes the temporary file if it has not been published.
// It is a no-op after a successful [PendingFile.CloseAtomicallyReplace], after an
// earlier Cleanup, and on a nil *PendingFile, so `defer pf.Cleanup()` is always
// right. The target is never touched. Its error reports a temporary file that
// could not be removed.
func (pf *PendingFile) Cleanup() error {
	if pf == nil || pf.state != pending {
		return nil
	}
	pf.state = cleaned
	if !pf.closed {
		pf.closed = true
		_ = pf.f.Close() // the file is being discarded; only the removal matters
	}
	if err := pf.discard(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return pf.fail(UnwrapOS(err))
	}
	return nil
}

// stageOwn creates the temporary file pf.tmp in dir under a fresh
// ".<base>.tmp-<random>" name, with O_EXCL so that the name is ours alone. It
// is the staging of the systems and names renameio does not serve (see
// stage).
func (pf *PendingFile) stageOwn(dir string, perm fs.FileMode) error {
	var err error
	for range 100 {
		pf.tmp = joinRaw(dir, TempName(filepath.Base(pf.target)))
		pf.f, err = OpenFile(pf.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	return err
}

// stageLocked creates the temporary file of a write under the lock whose
// names (Names) are names: the first of them that no file has,
// with O_EXCL, so that no other writer has ever had it open; the other name
// goes into pf.stale, for the removal after the rename.
//
// Under the lock, a file of either name is a dead writer's: only holders of
// that lock file make them, one at a time. This writer still never opens
// such a file: it takes the other name, and removes the file after its own
// rename, so that the most a writer it was wrong about can suffer is a
// rename that finds no file, never the publication of another writer's
// half-written one (the case is a writer whose lock file was replaced
// before it named its file, see Key: it finds its lock lost and
// publishes nothing). When both names are taken (two writers killed in a
// row, the second while the first's file was still there), the first is
// removed and made afresh, but only if the engine's check (Options.Check)
// finds the lock still held: a writer whose lock file was replaced before it
// named its file has the new lock file's names, and the first may be the
// staged file of that file's live holder, whose rename would then publish
// this writer's bytes. If the check fails, or the file cannot be removed
// (on Windows, a file still open), the write is staged under a random name
// instead, which a kill would leave behind for good.
func (pf *PendingFile) stageLocked(dir string, perm fs.FileMode, names [2]string) error {
	for i, name := range names {
		pf.tmp = joinRaw(dir, name)
		f, err := OpenFile(pf.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err == nil {
			pf.f, pf.stale = f, joinRaw(dir, names[1-i])
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	pf.tmp = joinRaw(dir, names[0])
	if (pf.check == nil || pf.check() == nil) && removeStale(pf.tmp) {
		f, err := OpenFile(pf.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err == nil {
			pf.f, pf.stale = f, joinRaw(dir, names[1])
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return pf.stageOwn(dir, perm)
}

// removeStale removes the file at path, a locked write's temporary name, if
// it is a regular file, and reports whether nothing is left there. It is
// best effort: a file that cannot go now can go at the next write.
func removeStale(path string) bool {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true
	case err != nil || !fi.Mode().IsRegular():
		return false
	}
	err = os.Remove(path)
	return err == nil || errors.Is(err, fs.ErrNotExist)
}

// rename closes the temporary file (fsynced already, unless NoSync)
// and renames it over the target.
func (pf *PendingFile) rename() error {
	pf.closed = true
	if err := pf.f.Close(); err != nil {
		return err
	}
	if err := seam.At(seam.Rename, pf.target); err != nil {
		return err
	}
	return replace(pf.tmp, pf.target, pf.dsync)
}

// TempPath returns the path of the temporary file: where the contents are
// staged until CloseAtomicallyReplace renames them over the target. It exists
// from Create until CloseAtomicallyReplace or Cleanup.
func (pf *PendingFile) TempPath() string { return pf.tmp }

// TargetPath returns the path that CloseAtomicallyReplace replaces: the
// caller's path with the symbolic links of its last element followed.
func (pf *PendingFile) TargetPath() string { return pf.target }

// fail returns err as an *fs.PathError for the caller's path, with the
// caller's Op. When the path was a symbolic link, the error also names the
// file it resolved to.
func (pf *PendingFile) fail(err error) error {
	if pf.target != "" && pf.target != pf.path {
		err = &resolvedError{target: pf.target, err: err}
	}
	return &fs.PathError{Op: pf.op, Path: pf.path, Err: err}
}

// resolvedError names the file a symbolic link resolved to.
type resolvedError struct {
	target string
	err    error
}

func (e *resolvedError) Error() string { return "via link to " + e.target + ": " + e.err.Error() }
func (e *resolvedError) Unwrap() error { return e.err }

// syncFile fsyncs f ([os.File.Sync]: EINTR retried, F_FULLFSYNC on Darwin).
func syncFile(f *os.File, target string) error {
	if err := seam.At(seam.Sync, target); err != nil {
		return err
	}
	return f.Sync()
}

// Sync fsyncs the temporary file now (unless NoSync), so that a later
// CloseAtomicallyReplace or Detach has no fsync left to make. A caller that
// stages several files syncs them at once (on several goroutines), so that
// the file system can commit them together. An error is sticky, as Write's.
func (pf *PendingFile) Sync() error {
	if pf.state != pending {
		return pf.fail(fs.ErrClosed)
	}
	if pf.err != nil {
		return pf.err
	}
	if pf.sync {
		if err := syncFile(pf.f, pf.target); err != nil {
			pf.err = pf.fail(UnwrapOS(err))
			return pf.err
		}
		pf.sync = false
	}
	return nil
}

// StartSync starts writing the temporary file's data back without waiting
// (unless NoSync), so that a Sync made at once with other files' finds the
// file system's work for it under way; on Linux it is sync_file_range(2),
// elsewhere nothing. It makes nothing durable and never fails: Sync does.
func (pf *PendingFile) StartSync() {
	if pf.state == pending && pf.err == nil && pf.sync {
		startWriteback(pf.f)
	}
}

// StartSync is PendingFile.StartSync for a file of one's own.
func StartSync(f *os.File) { startWriteback(f) }

// Detach closes the temporary file, leaves it where it is and hands it over
// to the caller, who renames it over the target itself ([Replace]) or
// removes it: Cleanup no longer touches it. It returns the temporary file's
// path and the target's (the caller's path with the symbolic links of its
// last element followed). If it fails, the temporary file is closed and
// removed, as by Cleanup. A multi-file commit detaches its staged files, so
// that a failure after the commit point leaves them for recovery.
func (pf *PendingFile) Detach() (tmp, target string, err error) {
	if pf.state != pending {
		return "", "", pf.fail(fs.ErrClosed)
	}
	if pf.err != nil {
		pf.Cleanup()
		return "", "", pf.err
	}
	if err := seam.At(seam.Close, pf.target); err != nil {
		pf.Cleanup()
		return "", "", pf.fail(UnwrapOS(err))
	}
	pf.closed = true
	if err := pf.f.Close(); err != nil {
		pf.Cleanup()
		return "", "", pf.fail(UnwrapOS(err))
	}
	pf.state = replaced
	return pf.tmp, pf.target, nil
}

// Replace renames the file at tmp over target (no directory fsync: see
// SyncDir), as CloseAtomicallyReplace does, for a staged file that was
// detached. On Windows durable asks for a write-through move.
func Replace(tmp, target string, durable bool) error {
	if err := seam.At(seam.Rename, target); err != nil {
		return err
	}
	return replace(tmp, target, durable)
}

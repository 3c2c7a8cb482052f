package filetxn

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/filetxn/filetxn/internal/fsys"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/lock"
)

// The intent record of a multi-file commit (docs/formats/commit.md): one
// copy beside each of the commit's lock files, at the lock file's path with
// intentSuffix after it, so that a transaction that holds any one of the
// locks finds it with one open of a path it knows, and no directory read.
// A copy is two lines: the record as one line of JSON, then the SHA-256 of
// that line in hexadecimal, which tells a whole copy from a torn one.
const intentSuffix = ".intent"

// intentFormat is the record's format version; a record of another is
// refused, never completed or removed. A record that logs lines with its
// files (Appends) is of intentFormatAppends, so that a version that does
// not know them refuses it rather than complete its files without them.
const (
	intentFormat        = 1
	intentFormatAppends = 2
)

// commitKey tells a commit's staged files from a single write's temporary
// files in fsys.Names: a single write never removes them, and a commit never
// takes a single write's.
const commitKey = "\x00commit"

// recoverLockOpts are the options of a lock taken only to complete or undo
// an unfinished commit: its file exists (the commit's writer held it).
var recoverLockOpts = []lock.Option{lock.WithPurpose("recover")}

// intentPath returns the path of the copy beside the lock file at
// lockPath: lockPath with intentSuffix, or, for a lock file whose name
// leaves no room for the suffix within the usual 255-byte limit, the name
// cut as temporary names are (fsys.Cut) with a hash of the whole name.
func intentPath(lockPath string) string {
	dir, base := filepath.Split(lockPath)
	if len(base)+len(intentSuffix) <= 255 {
		return lockPath + intentSuffix
	}
	return dir + fsys.Cut(base) + "-" + digestHex([]byte(base))[:16] + intentSuffix
}

// intentRecord is the commit's decision: the files it replaces, each with
// its staged version and the digests before and after, in the order of the
// renames, and the locks that guard them.
type intentRecord struct {
	Format  int            `json:"filetxn_commit"`
	ID      string         `json:"id"`
	Locks   []string       `json:"locks"`
	Files   []intentFile   `json:"files"`
	Appends []intentAppend `json:"appends,omitempty"`
}

// An intentAppend is a line (or several) that the commit logs once its
// files are published: appended to Path, whose size was At when the commit
// was decided. Only lock-free appends (a scheduled tick's busy line) can
// have grown it since, so the line is found, if it was made, among the
// lines after At.
type intentAppend struct {
	Path    string `json:"path"`    // the log, absolute, its last element's links followed
	At      int64  `json:"at"`      // the log's size when the commit was decided
	Data    string `json:"data"`    // whole lines, each ending in a newline
	Durable bool   `json:"durable"` // fsynced once appended
}

type intentFile struct {
	Path    string `json:"path"`    // the target, absolute, its last element's links followed
	Staged  string `json:"staged"`  // the staged file, in the target's directory
	Old     string `json:"old"`     // the SHA-256 of the bytes replaced, hex; "" for no file
	New     string `json:"new"`     // the SHA-256 of the staged bytes, hex
	Durable bool   `json:"durable"` // fsynced: the rename's directory is fsynced too
}

func digestHex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// encode returns a copy's bytes.
func (r *intentRecord) encode() []byte {
	line, err := json.Marshal(r)
	if err != nil {
		panic("filetxn: intent record: " + err.Error()) // strings and ints only
	}
	return fmt.Appendf(nil, "%s\n%s\n", line, digestHex(line))
}

// errTorn is a copy cut short or voided: its writer died before the record
// was durable, or a power loss cut its fsync, so the commit never reached
// its commit point; or an undo voided it.
var errTorn = errors.New("torn intent record")

// readIntent reads the copy at path: nil when there is none; errTorn for a
// torn one; an error naming it for one of another format.
func readIntent(path string) (*intentRecord, error) {
	data, err := fsys.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, &fs.PathError{Op: "Recover", Path: path, Err: underlying(err)}
	}
	// A copy never fsynced may come back from a power cut with its length
	// but not its bytes (zeros, on file systems that write metadata
	// first): a record, JSON and hexadecimal, holds no NUL byte, so such a
	// copy is torn, not of another format.
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, errTorn
	}
	const magic = `{"filetxn_commit":`
	if !bytes.HasPrefix(data, []byte(magic)) {
		if len(data) < len(magic) && bytes.HasPrefix([]byte(magic), data) {
			return nil, errTorn
		}
		return nil, &fs.PathError{Op: "Recover", Path: path, Err: &FormatError{Line: 1, Err: errors.New("not an intent record of a multi-file commit")}}
	}
	line, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok || string(rest) != digestHex(line)+"\n" {
		return nil, errTorn
	}
	var r intentRecord
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, &fs.PathError{Op: "Recover", Path: path, Err: &FormatError{Line: 1, Err: fmt.Errorf("intent record: %w", err)}}
	}
	if r.Format != intentFormat && r.Format != intentFormatAppends {
		return nil, &fs.PathError{Op: "Recover", Path: path, Err: &FormatError{Line: 1, Key: "filetxn_commit",
			Err: fmt.Errorf("intent record of format %d, written by a newer version of filetxn: complete it with that version", r.Format)}}
	}
	if (r.Format == intentFormat) != (len(r.Appends) == 0) {
		return nil, &fs.PathError{Op: "Recover", Path: path, Err: &FormatError{Line: 1, Key: "appends",
			Err: fmt.Errorf("intent record of format %d with %d appends: format 1 has none, format 2 some", r.Format, len(r.Appends))}}
	}
	for _, a := range r.Appends {
		if a.Path == "" || a.At < 0 || a.Data == "" || !strings.HasSuffix(a.Data, "\n") {
			return nil, &fs.PathError{Op: "Recover", Path: path, Err: &FormatError{Line: 1, Key: "appends",
				Err: errors.New("intent record with an append of no log, a negative size or no whole line")}}
		}
	}
	if len(r.Files) == 0 || len(r.Locks) == 0 || r.ID == "" {
		return nil, &fs.PathError{Op: "Recover", Path: path, Err: &FormatError{Line: 1, Err: errors.New("intent record names no file or no lock")}}
	}
	return &r, nil
}

// loadIntent is readIntent that removes a torn copy (the lock beside it is
// held: nobody else writes it), and then reports none.
func loadIntent(path string) (*intentRecord, error) {
	r, err := readIntent(path)
	if err == errTorn {
		if err := removeIntent(path); err != nil {
			return nil, err
		}
		return nil, nil
	}
	return r, err
}

func removeIntent(path string) error {
	err := seam.At(seam.Retire, path)
	if err == nil {
		err = os.Remove(path)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return stepError("Commit", path, "remove the intent record", err)
	}
	return nil
}

// stepError names the file and the step of a multi-file commit that failed.
func stepError(op, path, step string, err error) error {
	return &fs.PathError{Op: op, Path: path, Err: fsys.StepError{Step: step, Err: underlying(err)}}
}

// parallel runs tasks at once, the first on the calling goroutine, and
// returns the first error in their order. fsyncs issued together let the
// file system commit them in one journal transaction (ext4's jbd2 joins
// every fsync that arrives while it commits), where one after another each
// pays its own.
func parallel(tasks []func() error) error {
	if len(tasks) == 0 {
		return nil
	}
	errs := make([]error, len(tasks))
	var wg sync.WaitGroup
	for i := 1; i < len(tasks); i++ {
		wg.Go(func() { errs[i] = tasks[i]() })
	}
	errs[0] = tasks[0]()
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// syncDirs returns the tasks that fsync each directory of paths once.
func syncDirs(paths []string) []func() error {
	var dirs []string
	for _, p := range paths {
		if d := filepath.Dir(p); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	tasks := make([]func() error, len(dirs))
	for i, d := range dirs {
		tasks[i] = func() error {
			if err := fsys.SyncDir(d); err != nil {
				return stepError("Commit", d, "fsync the directory", err)
			}
			return nil
		}
	}
	return tasks
}

// publish commits the changed parts (two or more) under the held locks: it
// stages each new version beside its target and writes the intent record
// beside each lock, fsyncs all of them and their directories at once, checks
// the locks, renames in order, fsyncs the targets' directories and removes
// the records. Up to the first rename a failure undoes everything (or, if
// the undo cannot be made durable, says ErrUndecided); after it, the commit
// stands and the rest is left to recovery (errSplit).
func (c *multi) publish(changed []int, outs [][]byte, commits []Commit, appends []pendingAppend) ([]Commit, error) {
	// pfs[k] stages rec.Files[k], the file of part changed[k]; once
	// detached, the record names it (Staged) and its target (Path).
	var rnd [8]byte
	rand.Read(rnd[:])
	rec := intentRecord{Format: intentFormat, ID: hex.EncodeToString(rnd[:]), Locks: c.locks}
	for _, a := range appends {
		ia, err := c.appendLog(a)
		if err != nil {
			return nil, err
		}
		rec.Format, rec.Appends = intentFormatAppends, append(rec.Appends, ia)
	}
	pfs := make([]*fsys.PendingFile, 0, len(changed))
	detached := 0 // pfs[:detached] are detached: Cleanup no longer removes them
	var intents []string
	var infos []os.FileInfo // infos[k] is intents[k]'s file as made, to tell it from another's
	var files []*os.File    // the copies of the record, open until they are fsynced
	closeRecords := func() {
		for _, f := range files {
			f.Close()
		}
		files = nil
	}
	defer closeRecords()
	// undo closes the copies before it removes them: Windows removes no
	// file that a handle without FILE_SHARE_DELETE (os.OpenFile's) holds
	// open. Once the fsyncs of the commit point began (synced), any copy
	// and staged file may be durable, even if one fsync failed: then the
	// staged files' removal is made durable (their directories fsynced)
	// before the copies go, since a record beside a staged file gone, its
	// targets old, is undone by the rules, where one beside every staged
	// file would be completed after a power cut, and its caller was told
	// that nothing was published. The copies are then voided too (emptied
	// and fsynced), for Windows, where directories are not fsynced. A
	// process that dies at any point of it leaves what recovery undoes, and
	// no staged file that no record names. If the fsyncs fail, the copies
	// stay, and the error says that the commit is not undone.
	synced := false
	undo := func() error {
		closeRecords()
		// Only the copies this commit made: once a lock is lost, the
		// holder of the lock file now at its path may have removed one
		// (torn, while this commit wrote it) and made its own there.
		var own []string
		for k, ip := range intents {
			if fi, err := os.Lstat(ip); err == nil && os.SameFile(fi, infos[k]) {
				own = append(own, ip)
			}
		}
		var staged []string
		for k, pf := range pfs {
			staged = append(staged, pf.TempPath())
			if k < detached {
				_ = os.Remove(rec.Files[k].Staged)
			} else {
				_ = pf.Cleanup()
			}
		}
		if synced {
			err := parallel(syncDirs(staged))
			if err == nil {
				err = voidIntents("Commit", own)
			}
			if err != nil {
				return fmt.Errorf("%w: %w", ErrUndecided, err)
			}
		}
		for _, ip := range own {
			if seam.At(seam.Retire, ip) == nil {
				_ = os.Remove(ip)
			}
		}
		return nil
	}
	fail := func(err error) ([]Commit, error) {
		if uerr := undo(); uerr != nil {
			return nil, fmt.Errorf("%w; %w", err, uerr)
		}
		return nil, err
	}
	// Each staged file's name is chosen, and every copy of the record
	// written, before any staged file exists: a crash leaves no staged file
	// that no whole record names.
	durable := false
	opts := make([]fsys.Options, len(changed))
	for k, i := range changed {
		p := c.parts[i]
		o := fsys.Collect(p.opts().writeOptions(nil))
		key, ok := fsys.Key(c.held[c.of[i]].Path())
		if !ok {
			return nil, c.lostError(i, nil)
		}
		target, dir, err := fsys.Target(p.path())
		if err != nil {
			return nil, stepError("Commit", p.path(), "resolve the file", err)
		}
		name, err := freeName(dir, fsys.Names(filepath.Base(target), key+commitKey))
		if err != nil {
			return nil, stepError("Commit", p.path(), "name the staged file", err)
		}
		tmp, err1 := filepath.Abs(filepath.Join(dir, name))
		abs, err2 := filepath.Abs(target)
		if err := errors.Join(err1, err2); err != nil {
			return nil, stepError("Commit", p.path(), "name the staged file", err)
		}
		// Two members whose paths differ may name one file through a
		// symbolic link: both renames would publish, the second over the
		// first, and a recovery between them would find the file diverged.
		if j := slices.IndexFunc(rec.Files, func(f intentFile) bool { return f.Path == abs }); j >= 0 {
			return nil, fmt.Errorf("filetxn: MutateAll: %s and %s are one file, %s: %w", c.parts[changed[j]].path(), p.path(), abs, ErrInvalidArgument)
		}
		old := ""
		if data := p.readBytes(); data != nil {
			old = digestHex(data)
		}
		rec.Files = append(rec.Files, intentFile{Path: abs, Staged: tmp, Old: old, New: digestHex(outs[i]), Durable: !o.NoSync})
		o.TempName = name
		opts[k] = o
		durable = durable || !o.NoSync
	}
	record := rec.encode()

	// The commit point: every staged file and every copy of the record
	// durable, with their names. All are fsynced at once.
	var tasks []func() error
	for k, lp := range c.locks {
		ip := intentPath(lp)
		err := seam.At(seam.Intent, ip)
		var f *os.File
		if err == nil {
			// Exclusive: under the lock, with every record beside it
			// settled, a copy there is another commit's, made since by the
			// holder of a lock file that replaced this one. It is left
			// alone, and this commit publishes nothing.
			f, err = fsys.OpenFile(ip, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if errors.Is(err, fs.ErrExist) {
				return fail(c.lostError(slices.Index(c.of, k), nil))
			}
		}
		if err == nil {
			var fi os.FileInfo
			if fi, err = f.Stat(); err == nil {
				intents, infos = append(intents, ip), append(infos, fi)
				files = append(files, f)
				_, err = f.Write(record)
			} else {
				f.Close()
				_ = os.Remove(ip)
			}
		}
		if err != nil {
			return fail(stepError("Commit", ip, "write the intent record", err))
		}
		if durable {
			tasks = append(tasks, func() error {
				err := seam.At(seam.Intent, ip)
				if err == nil {
					err = f.Sync()
				}
				if err != nil {
					return stepError("Commit", ip, "fsync the intent record", err)
				}
				return nil
			})
		}
	}
	for k, i := range changed {
		pf, err := fsys.Create("Commit", c.parts[i].path(), filePerm, opts[k])
		if err != nil {
			return fail(stepError("Commit", c.parts[i].path(), "create the staged file", err))
		}
		pfs = append(pfs, pf)
		if _, err := pf.Write(outs[i]); err != nil {
			return fail(stepError("Commit", c.parts[i].path(), "write the staged file", err))
		}
	}
	var names []string
	for k, pf := range pfs {
		path := c.parts[changed[k]].path()
		tasks = append(tasks, func() error {
			if err := pf.Sync(); err != nil {
				return stepError("Commit", path, "fsync the staged file", err)
			}
			return nil
		})
		names = append(names, pf.TempPath())
	}
	if durable {
		tasks = append(tasks, syncDirs(append(names, intents...))...)
		// Every file's writeback started before any fsync, so that the
		// fsyncs find all of their allocations in one journal transaction
		// (fsys.StartSync).
		for _, f := range files {
			fsys.StartSync(f)
		}
		for _, pf := range pfs {
			pf.StartSync()
		}
	}
	synced = durable
	if err := parallel(tasks); err != nil {
		return fail(err)
	}
	closeRecords() // before their removal, which Windows refuses while they are open
	_ = seam.At(seam.Committed, intents[0])

	for k, h := range c.held {
		if ok, err := h.Current(); !ok || err != nil {
			return fail(c.lostError(slices.Index(c.of, k), err))
		}
	}
	for k, pf := range pfs {
		if _, _, err := pf.Detach(); err != nil { // a failed Detach removed its own staged file
			return fail(stepError("Commit", c.parts[changed[k]].path(), "close the staged file", err))
		}
		detached++
	}
	for k, f := range rec.Files {
		i := changed[k]
		if err := fsys.Replace(f.Staged, f.Path, f.Durable); err != nil {
			err = stepError("Commit", c.parts[i].path(), "rename the staged file", err)
			if k == 0 {
				return fail(err)
			}
			return commits, fmt.Errorf("%w: %w", errSplit, err)
		}
		_ = seam.At(seam.Published, f.Path)
		commits[i] = Commit{Written: true, published: outs[i]}
	}
	if err := rec.syncTargets(); err != nil {
		return commits, fmt.Errorf("published, but not yet durable: %w", err)
	}
	if len(appends) > 0 {
		// Past the renames the commit stands: a lock lost now leaves the
		// lines to the next transaction, which finds the record.
		for _, a := range appends {
			if ok, err := c.held[c.of[a.part]].Current(); !ok || err != nil {
				return commits, fmt.Errorf("%w: %w", errSplit, c.lostError(a.part, err))
			}
		}
		if err := rec.applyAppends("Commit", true); err != nil {
			return commits, fmt.Errorf("%w: %w", errSplit, err)
		}
	}
	for _, ip := range intents {
		if err := removeIntent(ip); err != nil {
			return commits, fmt.Errorf("published: %w", err)
		}
	}
	return commits, nil
}

// settleHeld completes or undoes the unfinished commits recorded beside
// the lock files at paths, which the caller holds (hs). A commit that names
// a lock the caller does not hold is left alone: its locks come back in
// need, for the caller to take them all, in order, and call again.
func settleHeld(paths []string, hs []*lock.Handle) (need []string, err error) {
	for _, lp := range paths {
		ip := intentPath(lp)
		r, err := loadIntent(ip)
		if err != nil {
			return nil, err
		}
		if r == nil {
			continue
		}
		var missing []string
		for _, l := range r.Locks {
			if !lock.Held(l) {
				missing = append(missing, l)
			}
		}
		if len(missing) > 0 {
			need = append(need, missing...)
			continue
		}
		if err := r.settle(ip, hs); err != nil {
			return nil, err
		}
	}
	return need, nil
}

// settle completes an unfinished commit recorded beside the lock h holds,
// before its caller reads: it takes the commit's other locks (without
// waiting while it holds h; if one is busy, it releases h and takes them
// all in order), completes or undoes the commit, and releases them. It
// returns the handle to go on with, h or one taken anew on the same lock
// file (opts are its options); on an error it has released h. It costs one
// failed open when there is no record.
func settle(ctx context.Context, h *lock.Handle, opts []lock.Option, noWait bool) (*lock.Handle, error) {
	for {
		ip := intentPath(h.Path())
		r, err := loadIntent(ip)
		if err == nil && r == nil {
			return h, nil
		}
		if err != nil {
			h.Release()
			return nil, err
		}
		_ = seam.At(seam.Recovering, ip)
		var others []string
		for _, l := range r.Locks {
			if !lock.Held(l) {
				others = append(others, l)
			}
		}
		hs := []*lock.Handle{h}
		busy := false
		for _, l := range others {
			o, err := lock.TryAcquire(l, recoverLockOpts...)
			if errors.Is(err, lock.ErrWouldBlock) && noWait {
				releaseAll(hs)
				return nil, err
			}
			if errors.Is(err, lock.ErrWouldBlock) {
				busy = true
				break
			}
			if err != nil {
				releaseAll(hs)
				return nil, err
			}
			hs = append(hs, o)
		}
		if busy {
			releaseAll(hs)
			all := append([]string{h.Path()}, others...)
			aopts := []lock.Option{lock.ForPath(h.Path(), opts...)}
			for _, l := range others {
				aopts = append(aopts, lock.ForPath(l, recoverLockOpts...))
			}
			if hs, err = lock.AcquireAll(ctx, all, aopts...); err != nil {
				return nil, err
			}
			h = hs[0]
			// The record may have been settled, or replaced by another,
			// while no lock was held: start again unless it is still one
			// whose every lock is held now.
			r, err = loadIntent(ip)
			if err != nil || r == nil || slices.ContainsFunc(r.Locks, func(l string) bool { return !lock.Held(l) }) {
				releaseAll(hs[1:])
				if err != nil {
					h.Release()
					return nil, err
				}
				continue
			}
		}
		err = r.settle(ip, hs)
		releaseAll(hs[1:])
		if err != nil {
			h.Release()
			return nil, err
		}
	}
}

func releaseAll(hs []*lock.Handle) {
	for _, h := range hs {
		h.Release()
	}
}

// settle completes the commit r (found at ip), or undoes it if it never
// reached its commit point, under all of its locks (hs among them).
//
// Every copy of the record must be there first. The commit point is every
// copy durable, nothing is renamed before it (nor here, unless every copy is
// there), and the copies are removed only once every file is published; so a
// copy missing, torn or of another commit means that the commit never
// reached its point, or that its retirement began. Either way no rename is
// left to do, and the commit is undone (undoUnsure says which staged files
// go); the targets are not looked at, since a transaction on a file whose
// copy was gone may have changed that file, and read it, meanwhile.
//
// Then each rename consumes its staged file, so a file whose staged
// version is gone and whose target holds the new one was renamed: the
// commit point was passed, and every file still staged whose target is old
// is renamed (see the switch for the rest). A target that holds neither
// version where the decision needs one was written by a program that does
// not know these records (an older filetxn, bmad-loop): then nothing is
// done, and the error names it, wrapping ErrDiverged.
func (r *intentRecord) settle(ip string, hs []*lock.Handle) error {
	cps, err := r.readCopies()
	if err != nil {
		return err
	}
	if slices.ContainsFunc(cps, func(c copyAt) bool { return !c.ours(r) }) {
		return r.undoUnsure(cps)
	}
	n := len(r.Files)
	stagedOK := make([]bool, n)
	target := make([]string, n)
	for j, f := range r.Files {
		sd, err := fileDigest(f.Staged)
		if err != nil {
			return err
		}
		stagedOK[j] = sd == f.New
		if target[j], err = fileDigest(f.Path); err != nil {
			return err
		}
	}
	diverged := func(j int) error {
		return &fs.PathError{Op: "Recover", Path: r.Files[j].Path, Err: fmt.Errorf(
			"unfinished commit %s: the file was changed by a program that does not complete commits, so the commit can neither be completed nor undone: %w", ip, ErrDiverged)}
	}
	// A file whose staged version is gone and whose target holds the new
	// one was renamed, so the commit point was passed. The renames need not
	// reach the disk in their order (no directory fsync runs between them),
	// so a power cut may keep a later one and lose an earlier one, whose
	// staged file is then back: the decision looks at every file.
	renamed, missingOld := false, true
	for j, f := range r.Files {
		if !stagedOK[j] {
			renamed = renamed || target[j] == f.New
			missingOld = missingOld && target[j] == f.Old
		}
	}
	var rename []int
	switch whole := !slices.Contains(stagedOK, false); {
	case whole && allOld(r, target):
		for j := range n {
			rename = append(rename, j)
		}
	case whole:
		return r.undo(cps, false) // nothing renamed; a target was written meanwhile
	case !slices.Contains(stagedOK, true):
		// No staged file is whole: either the commit never reached its
		// point (its targets are old), or every rename was made: nothing
		// to rename either way. The writer may have died before its
		// directory fsyncs, or have failed one, so they are made below
		// before the copies go: a power cut must not keep the removal and
		// lose a rename.
		if allOld(r, target) {
			return r.undo(cps, false)
		}
	case renamed:
		for j, f := range r.Files {
			switch {
			case stagedOK[j] && target[j] == f.Old:
				rename = append(rename, j)
			case !stagedOK[j] && target[j] == f.New:
			default:
				return diverged(j)
			}
		}
	case missingOld:
		return r.undo(cps, false) // a staged file missing, never renamed: no commit point
	default:
		for j, f := range r.Files {
			if !stagedOK[j] && target[j] != f.Old {
				return diverged(j) // gone, and neither old nor new
			}
		}
	}
	for _, h := range hs {
		if ok, err := h.Current(); !ok || err != nil {
			if err == nil {
				err = lock.ErrLockLost
			}
			return &fs.PathError{Op: "Recover", Path: ip, Err: fmt.Errorf("lock file %s: %w", h.Path(), err)}
		}
	}
	for _, j := range rename {
		f := r.Files[j]
		if err := fsys.Replace(f.Staged, f.Path, f.Durable); err != nil {
			return stepError("Recover", f.Path, "rename the staged file", err)
		}
		_ = seam.At(seam.Published, f.Path)
	}
	if err := r.syncTargets(); err != nil {
		return err
	}
	// The lines go with a commit that was published: one rename to make,
	// or one made (a target new). With no staged file whole and no target
	// new, the targets were all written since: either the commit finished
	// (and logged its lines, fsynced, before its records could go) and a
	// power cut brought its records back, or it never staged its files and
	// a program that does not know the records wrote one. Neither is owed
	// a line.
	published := len(rename) > 0
	for j, f := range r.Files {
		published = published || target[j] == f.New
	}
	if published {
		if err := r.applyAppends("Recover", false); err != nil {
			return err
		}
	}
	return r.retire(cps)
}

// applyAppends logs the lines of a published commit, in order: fresh, the
// commit's own, or those not in their logs yet, recovery's (see apply).
func (r *intentRecord) applyAppends(op string, fresh bool) error {
	for _, a := range r.Appends {
		if err := a.apply(op, fresh); err != nil {
			return err
		}
	}
	return nil
}

// apply appends a.Data to its log, and fsyncs the log if a is durable.
// A fresh apply, the commit's own (which knows that it has made none),
// only appends. Recovery's looks for the lines first, starting a line, in
// the whole log (one shorter than a.At, cut by a power loss before its
// earlier lines were fsynced, gets them at its end, where a later
// recovery must find them too); a log that ends, at a.At or after it, with
// the first part of them, starting a line (an append cut short), gets the
// rest. A log whose last line is not whole gets a newline first, so that
// the lines stay lines. Recovery may so run any number of times and log
// the lines once. The lines must be unique in their log, as a tick's are
// (its number, its start and its runner).
func (a intentAppend) apply(op string, fresh bool) error {
	data := []byte(a.Data)
	f, created, err := fsys.OpenLog(a.Path, os.O_RDWR, filePerm)
	if err != nil {
		return stepError(op, a.Path, "open the log", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return stepError(op, a.Path, "stat the log", err)
	}
	size := fi.Size()
	var log []byte // the whole log for recovery; its last byte for a fresh apply
	if size > 0 {
		from := int64(0)
		if fresh {
			from = size - 1
		}
		log = make([]byte, size-from)
		if _, err := f.ReadAt(log, from); err != nil {
			return stepError(op, a.Path, "read the log", err)
		}
	}
	rest := data
	if !fresh {
		atLine := func(p int) bool { return p == 0 || log[p-1] == '\n' }
		for i := 0; ; {
			j := bytes.Index(log[i:], data)
			if j < 0 {
				break
			}
			if atLine(i + j) {
				// Logged already, by a commit that may have died
				// before its fsync (or whose fsync failed), or before
				// the fsync of the directory of a log it created: both
				// are made here, before the records go.
				return a.sync(op, f, true)
			}
			i += j + 1
		}
		for n := len(data) - 1; n > 0; n-- {
			if p := len(log) - n; int64(p) >= a.At && bytes.HasSuffix(log, data[:n]) && atLine(p) {
				rest = data[n:]
				break
			}
		}
	}
	if len(rest) == len(data) && len(log) > 0 && log[len(log)-1] != '\n' {
		rest = append([]byte{'\n'}, data...)
	}
	err = seam.At(seam.Append, a.Path)
	if err == nil {
		_, err = f.Write(rest)
	}
	if err != nil {
		return stepError(op, a.Path, "append to the log", err)
	}
	return a.sync(op, f, created)
}

// sync fsyncs the log f of a durable append, and its directory if the
// append created it.
func (a intentAppend) sync(op string, f *os.File, created bool) error {
	if !a.Durable {
		return nil
	}
	err := seam.At(seam.Append, a.Path)
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		return stepError(op, a.Path, "fsync the log", err)
	}
	if created {
		if err := fsys.SyncDir(filepath.Dir(a.Path)); err != nil {
			return stepError(op, filepath.Dir(a.Path), "fsync the directory", err)
		}
	}
	return nil
}

// syncTargets fsyncs, at once, the directory of each of r's durable
// targets, once: the renames over them are durable when it returns.
func (r *intentRecord) syncTargets() error {
	var targets []string
	for _, f := range r.Files {
		if f.Durable {
			targets = append(targets, f.Path)
		}
	}
	return parallel(syncDirs(targets))
}

// copyAt is what the path beside one of a record's locks holds: a whole
// record (rec), a torn one, or nothing.
type copyAt struct {
	path string
	rec  *intentRecord
	torn bool
}

// ours reports whether c is a whole copy of r.
func (c copyAt) ours(r *intentRecord) bool { return c.rec != nil && c.rec.ID == r.ID }

// readCopies reads the copy beside each of r's locks, once for the whole
// settling: nobody else writes them while their locks are held.
func (r *intentRecord) readCopies() ([]copyAt, error) {
	cps := make([]copyAt, len(r.Locks))
	for k, lp := range r.Locks {
		ip := intentPath(lp)
		cp, err := readIntent(ip)
		switch {
		case err == errTorn:
			cps[k] = copyAt{path: ip, torn: true}
		case err != nil:
			return nil, err
		default:
			cps[k] = copyAt{path: ip, rec: cp}
		}
	}
	return cps, nil
}

func allOld(r *intentRecord, target []string) bool {
	for j, f := range r.Files {
		if target[j] != f.Old {
			return false
		}
	}
	return true
}

// undo removes the staged files of a commit that never reached its commit
// point (or whose point cannot have been reached), and then its records. A
// staged file that another commit's copy beside one of the locks names is
// left alone: after a retirement cut short, a later commit over one of the
// files may have staged a file of the same name. With onlyMine, a staged
// file is removed only if it holds the version this record names (see
// undoUnsure).
func (r *intentRecord) undo(cps []copyAt, onlyMine bool) error {
	var theirs, mine, remove []string
	for _, c := range cps {
		switch {
		case c.ours(r):
			mine = append(mine, c.path)
		case c.rec != nil:
			for _, f := range c.rec.Files {
				theirs = append(theirs, f.Staged)
			}
		}
	}
	for _, f := range r.Files {
		if slices.Contains(theirs, f.Staged) {
			continue
		}
		if onlyMine {
			if d, err := fileDigest(f.Staged); err != nil || d != f.New {
				continue
			}
		}
		remove = append(remove, f.Staged)
	}
	// The staged files' removal is made durable (their directories
	// fsynced) before the copies go, and the copies are voided, durably,
	// for Windows, where directories are not fsynced: else a power cut could
	// bring the record back beside the staged files after transactions on
	// the files that this undo let run, and the record would then decide
	// otherwise (ErrDiverged, for good). A process that dies between the two
	// leaves a record beside fewer staged files, which the rules undo.
	removed := false
	for _, p := range remove {
		switch err := os.Remove(p); {
		case err == nil:
			removed = true
		case !errors.Is(err, fs.ErrNotExist):
			return stepError("Recover", p, "remove the staged file", err)
		}
	}
	if removed {
		if err := parallel(syncDirs(remove)); err != nil {
			return err
		}
		if err := voidIntents("Recover", mine); err != nil {
			return err
		}
	}
	return r.retire(cps)
}

// voidIntents empties each copy of a record at paths and fsyncs it, all at
// once, through its own handle: an empty copy reads as torn, which recovery
// can only undo, so that a power cut cannot bring back a commit being
// undone. It needs no directory fsync (the names stay until they are
// removed), so it is durable on Windows too, where directories are not
// fsynced. A copy that is not there is skipped. op names the operation in
// the error.
func voidIntents(op string, paths []string) error {
	tasks := make([]func() error, len(paths))
	for i, ip := range paths {
		tasks[i] = func() error {
			err := seam.At(seam.Intent, ip)
			if err == nil {
				err = voidFile(ip)
			}
			if err != nil {
				return stepError(op, ip, "void the intent record", err)
			}
			return nil
		}
	}
	return parallel(tasks)
}

func voidFile(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// undoUnsure undoes a commit some of whose copies are gone. Most often
// there is no staged file left: a commit writes every copy before it
// creates one, and retires its copies only once every staged file is
// renamed. But after a power cut during the commit's fsyncs a staged file
// may have reached the disk while a copy did not, and is then removed; and
// after a retirement that was cut short, another commit over a file whose
// copy was gone may have staged a file of the same name since, which must
// stay (its own copies name it, or, once they are gone, its bytes differ).
func (r *intentRecord) undoUnsure(cps []copyAt) error { return r.undo(cps, true) }

// retire removes every copy of the record, and a torn one (this commit's,
// or an older dead one's); a copy of another commit, made since, is left
// alone.
func (r *intentRecord) retire(cps []copyAt) error {
	for _, c := range cps {
		if c.torn || c.ours(r) {
			if err := removeIntent(c.path); err != nil {
				return err
			}
		}
	}
	return nil
}

// fileDigest returns the SHA-256 in hex of the file at path, "" when there
// is none.
func fileDigest(path string) (string, error) {
	data, err := fsys.ReadState(path, "Recover", nil, 1)
	if err != nil || data == nil {
		return "", err
	}
	return digestHex(data), nil
}

// freeName returns the first of names that no file in dir has. When both
// are taken, the first is removed and returned: under the commit's locks,
// with no record left unsettled, a file of these names is one that a
// commit killed before it wrote a whole record left behind.
func freeName(dir string, names [2]string) (string, error) {
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(dir, n)); errors.Is(err, fs.ErrNotExist) {
			return n, nil
		} else if err != nil {
			return "", err
		}
	}
	if err := os.Remove(filepath.Join(dir, names[0])); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	return names[0], nil
}

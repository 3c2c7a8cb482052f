package ledger

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/osfile"
)

// Store is a ledger file, with its archive sibling, shared between goroutines
// and processes through the filetxn engine: every write takes the ledger's
// lock, reads the file afresh, applies the operation and replaces the file
// atomically. It holds no data in memory and is safe for concurrent use.
//
// Each operation method first decides on a lock-free read, as
// [Store.MutateProbed] does: if the operation would write nothing (an empty
// batch, a missing ledger, every spec already filed, every id already closed,
// nothing eligible) it returns without taking the lock, so such calls succeed
// even where the lock cannot be taken. Otherwise it takes the lock and decides
// again on fresh data; a batch of N changes costs one lock, one read and one
// write. Arguments are validated before any I/O. A Store whose lock lives
// under a state root that cannot be derived fails every write with an error
// wrapping [ErrNoStateRoot].
//
// As in the engine: ctx bounds the wait for the lock and nothing else (a done
// ctx on a free lock still runs the operation; on a busy one it fails at
// once); a lock file deleted or replaced while held makes a write publish
// nothing and fail with an error matching lock.ErrLockLost; and a ledger or
// archive path that holds anything but a regular file (a named pipe, a
// directory) is refused without blocking, with an error wrapping
// atomicfile.ErrNotRegular.
type Store struct {
	path    string
	archive string
	eng     *filetxn.Store[*Doc]
	rootErr error // the lock's state root could not be derived: writes fail with this

	afterArchiveWrite func()       // tests: called between the archive and the ledger write
	probeFault        func() error // tests: a non-nil error fails the next lock-free read
}

// probe is the lock-free read that lets an operation that writes nothing
// skip the lock. Its failure decides nothing: the caller goes to the lock.
func (s *Store) probe(ctx context.Context) ([]byte, error) {
	if s.probeFault != nil {
		if err := s.probeFault(); err != nil {
			return nil, err
		}
	}
	return osfile.ReadState(s.path, "Read", nil, 1)
}

// unplaced is the lock path that Open puts first to learn whether the
// caller's options place the lock: no real path contains a NUL byte.
const unplaced = "\x00ledger: the lock is not placed"

// Open returns the Store for the ledger at path; the archive is
// deferred-work-archive.md in the same directory. opts are the engine's options
// (filetxn.WithStateRoot, filetxn.WithLockPath, filetxn.WithoutSync,
// filetxn.WithLockOptions, ...), applied after the ledger's default, so that
// the caller's win. The default lock is bmad-loop's sidecar under
// [BmadLoopStateRoot], so that a Go process and a bmad-loop process exclude
// each other without configuration; a lock beside the ledger
// (filetxn.WithLockPath(path+".lock")) would end up in a "git add -A" of its
// directory, and bmad-loop does not take it.
//
// Open refuses an empty path and invalid options (a relative state root, an
// empty lock path) with an error matching filetxn.ErrInvalidArgument. It does
// no I/O and creates nothing; a missing ledger is an empty one, created by
// the first append. When the caller does not place the lock and no state
// root can be derived, Open still succeeds: the Store reads and answers
// operations that write nothing, and a write fails with an error wrapping
// [ErrNoStateRoot].
func Open(path string, opts ...filetxn.Option) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("ledger: Open: empty path: %w", filetxn.ErrInvalidArgument)
	}
	eng, err := filetxn.NewStore[*Doc](path, codec{}, append([]filetxn.Option{filetxn.WithLockPath(unplaced)}, opts...)...)
	if err != nil {
		return nil, err
	}
	s := &Store{path: path, archive: filepath.Join(filepath.Dir(path), archiveName), eng: eng}
	if lp, _ := eng.LockPath(); lp != unplaced {
		return s, nil
	}
	root, err := BmadLoopStateRoot()
	if err != nil {
		s.rootErr = err
		return s, nil
	}
	if s.eng, err = filetxn.NewStore[*Doc](path, codec{}, append([]filetxn.Option{filetxn.WithStateRoot(root)}, opts...)...); err != nil {
		return nil, err
	}
	return s, nil
}

// ArchivePath returns the path of the archive file.
func (s *Store) ArchivePath() string { return s.archive }

// LockPath returns the path of the lock file that guards the ledger (and its
// archive). It creates nothing.
func (s *Store) LockPath() (string, error) {
	if s.rootErr != nil {
		return "", s.noRoot()
	}
	return s.eng.LockPath()
}

func (s *Store) noRoot() error {
	return &fs.PathError{Op: "Lock", Path: s.path, Err: s.rootErr}
}

// View reads and parses the ledger without taking the lock. It sees one whole
// version, which may be replaced right after; decide under Mutate. A missing
// ledger is an empty Doc.
func (s *Store) View(ctx context.Context) (*Doc, error) { return s.eng.View(ctx) }

// Mutate runs fn on the ledger under its lock, as filetxn.Store.Mutate: it
// waits for the lock (or ctx), reads and parses the ledger, calls fn once, and
// writes the result atomically if its bytes changed. fn's error is returned
// unchanged and nothing is written; a panic in fn releases the lock and
// propagates. Calling the Store from inside fn fails with an error matching
// lock.ErrReentrant. The Commit's Digest proves which bytes this call
// published, if it published any (see [Store.Restore]).
func (s *Store) Mutate(ctx context.Context, fn func(*Doc) error) (filetxn.Commit, error) {
	if s.rootErr != nil {
		return filetxn.Commit{}, s.noRoot()
	}
	return s.eng.Mutate(ctx, fn)
}

// Restore puts snapshot back as the whole ledger, under the lock, only if the
// ledger's current bytes are a version the caller owns (their digest is among
// owned: the Commit.Digest of the caller's own writes) or already equal
// snapshot; otherwise it writes nothing and returns an error matching
// filetxn.ErrDiverged. It never merges; see [Store.Merge] for that.
func (s *Store) Restore(ctx context.Context, snapshot []byte, owned ...filetxn.Digest) (filetxn.Commit, error) {
	if s.rootErr != nil {
		return filetxn.Commit{}, s.noRoot()
	}
	return s.eng.Restore(ctx, snapshot, owned...)
}

// A Report is what a Store operation did with the ids it was given, decided on
// the version of the ledger it changed (or found needed no change): Changed
// lists, in the order given, the ids whose entry the call changed (closed by
// MarkDone, reopened by MarkOpen, given a decision by RecordDecision), and the
// Classification is that of the ids on that version before the call. An id
// in Open but not in Changed after MarkOpen, say, was open already.
type Report struct {
	Changed []string
	Classification
}

// MarkDone closes the open entries among ids (see [Doc.MarkDone]) and reports
// them in Changed. An id already closed is a replay: it is skipped (it is in
// AlreadyDone), and when every id is, nothing is written and no lock is
// taken. An id that no entry carries is an error matching [ErrNotFound] that
// names it, and nothing is written (a typo is not a replay); the Report's
// Unknown then lists every such id, so that a caller may close the others.
func (s *Store) MarkDone(ctx context.Context, ids []string, date, note string, opts ...CloseOption) (Report, error) {
	if _, err := closeConfig(ids, date, opts); err != nil || len(ids) == 0 {
		return Report{}, err
	}
	return s.report(ctx, "MarkDone", ids, func(d *Doc) ([]string, error) { return d.MarkDone(ids, date, note, opts...) })
}

// MarkOpen undoes this operation's reopenable closes (see [Doc.MarkOpen]) and
// reports them in Changed; an id among AlreadyDone but not in Changed was not
// closed by this operation with this note. When none is eligible, nothing is
// written and no lock is taken. Unknown ids are an error matching
// [ErrNotFound], as for MarkDone.
func (s *Store) MarkOpen(ctx context.Context, ids []string, note, operationID string) (Report, error) {
	if err := checkOperationID(operationID); err != nil || len(ids) == 0 {
		return Report{}, err
	}
	return s.report(ctx, "MarkOpen", ids, func(d *Doc) ([]string, error) { return d.MarkOpen(ids, note, operationID) })
}

// RecordDecision records a decision on an entry, and with [CloseWith] closes
// it, in one write (see [Doc.RecordDecision]); Changed is [id] when the
// decision was recorded, and the entry was closed too when it was among Open
// and CloseWith was given. An id no entry carries is an error matching
// [ErrNotFound], decided without the lock; with [RequireOpen] an entry that
// is not open gets no decision, and nothing is written.
func (s *Store) RecordDecision(ctx context.Context, id, date, label, detail string, opts ...DecisionOption) (Report, error) {
	if err := checkDate("RecordDecision", "date", date); err != nil {
		return Report{}, err
	}
	return s.report(ctx, "RecordDecision", []string{id}, func(d *Doc) ([]string, error) {
		if ok, err := d.RecordDecision(id, date, label, detail, opts...); !ok || err != nil {
			return nil, err
		}
		return []string{id}, nil
	})
}

// report runs op on the ledger as the engine's MutateProbed does, for an
// operation on ids: an unknown id changes nothing, so the lock-free read
// decides it, and the call then fails with ErrNotFound naming it.
func (s *Store) report(ctx context.Context, name string, ids []string, op func(*Doc) ([]string, error)) (Report, error) {
	var rep Report
	err := s.mutateProbed(ctx, func(d *Doc) (err error) {
		rep = Report{Classification: d.Classify(ids...)}
		if len(rep.Unknown) > 0 {
			return nil
		}
		rep.Changed, err = op(d)
		return err
	})
	switch {
	case err != nil:
		return Report{}, err
	case len(rep.Unknown) > 0:
		return Report{Classification: Classification{Unknown: rep.Unknown}}, fmt.Errorf("ledger: %s %s: %w: %s", name, s.path, ErrNotFound, strings.Join(rep.Unknown, ", "))
	}
	return rep, nil
}

// mutateProbed is the engine's MutateProbed, except that without a state root
// for the default lock a change fails with that error once the lock-free read
// has shown that fn changes the ledger.
func (s *Store) mutateProbed(ctx context.Context, fn func(*Doc) error) error {
	if s.rootErr == nil {
		_, err := s.eng.MutateProbed(ctx, fn)
		return err
	}
	d, err := s.eng.View(ctx)
	if err != nil {
		return err
	}
	if err := fn(d); err != nil {
		return err
	}
	if d.Changed() {
		return s.noRoot()
	}
	return nil
}

// MarkSeenAgain records a recurrence on each open entry among ids (see
// [Doc.MarkSeenAgain]); the ids whose entry is missing or no longer open come
// back in Stale and must be filed afresh.
func (s *Store) MarkSeenAgain(ctx context.Context, ids []string, date, note string) (SeenAgain, error) {
	if err := checkDate("MarkSeenAgain", "date", date); err != nil || len(ids) == 0 {
		return SeenAgain{Applied: []bool{}}, err
	}
	var res SeenAgain
	err := s.mutateProbed(ctx, func(d *Doc) (err error) { res, err = d.MarkSeenAgain(ids, date, note); return err })
	return res, err
}

// Merge carries back into the ledger the entries of snapshot (an earlier
// version's bytes) that it lost, without touching anything else (see
// [Doc.Merge]). When nothing is missing, nothing is written and no lock is
// taken.
func (s *Store) Merge(ctx context.Context, snapshot []byte) (MergeReport, error) {
	snap, err := Parse(snapshot)
	if err != nil {
		return MergeReport{}, err
	}
	var rep MergeReport
	err = s.mutateProbed(ctx, func(d *Doc) error { rep = d.Merge(snap); return nil })
	return rep, err
}

// Archive moves the ledger's closed entries, closed before before ("" for
// all), into the archive file and leaves stubs (see [Doc.ArchiveInto]), and
// returns the ids moved in ledger order. stamp is the date written on the
// stubs and blocks; "" means today in local time. To see what it would move
// without moving it, call [Doc.Archivable] on [Store.View]'s Doc: that takes
// no lock and writes nothing.
//
// Both files are written under one hold of the ledger's lock, the archive
// first: a crash between the two writes leaves the ledger as it was and the
// bodies in the archive, and the next run completes the stubs without
// appending those bodies again. When nothing is eligible (or the ledger is
// missing) Archive returns without taking the lock.
func (s *Store) Archive(ctx context.Context, before, stamp string) ([]string, error) {
	if err := checkArchiveArgs(before, stamp); err != nil {
		return nil, err
	}
	if data, err := s.probe(ctx); err == nil {
		if data == nil {
			return nil, nil
		}
		if d, err := Parse(data); err == nil {
			if ids, err := d.Archivable(before); err == nil && len(ids) == 0 {
				return nil, nil
			}
		}
	}
	if s.rootErr != nil {
		return nil, s.noRoot()
	}
	if stamp == "" {
		stamp = time.Now().Format(time.DateOnly)
	}
	var moved []string
	err := s.eng.Locked(ctx, func(tx *filetxn.Tx) error {
		data, err := tx.Read(s.path)
		if err != nil || data == nil {
			return err
		}
		d, err := Parse(data)
		if err != nil {
			return &fs.PathError{Op: "Decode", Path: s.path, Err: err}
		}
		adata, err := tx.Read(s.archive)
		if err != nil {
			return err
		}
		a, err := Parse(adata)
		if err != nil {
			return &fs.PathError{Op: "Decode", Path: s.archive, Err: err}
		}
		ids, err := d.ArchiveInto(a, before, stamp)
		if err != nil || len(ids) == 0 {
			return err
		}
		if a.Changed() {
			if _, err := tx.Write(s.archive, a.Bytes()); err != nil {
				return err
			}
		}
		if s.afterArchiveWrite != nil {
			s.afterArchiveWrite()
		}
		if _, err := tx.Write(s.path, d.Bytes()); err != nil {
			return fmt.Errorf("ledger: archive %s written, ledger not: %w", s.archive, err)
		}
		moved = ids
		return nil
	})
	return moved, err
}

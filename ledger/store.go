package ledger

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/fsys"
)

// Store is a ledger file, with its archive sibling, shared between goroutines
// and processes through the filetxn engine: every write takes the ledger's
// lock, reads the file afresh, applies the change and replaces the file
// atomically. It is safe for concurrent use. It keeps in memory only the text
// it last wrote or decided on (about the file's size) and an index of its
// origin lines, which spare the next call a parse of those very bytes (or of
// them with more after them); any other bytes are parsed afresh.
//
// [Store.Mutate] runs a batch of Doc operations in one write, fn once under
// the lock; with [Store.MutateProbed] a batch that writes nothing (a replayed
// close, ids already done, a missing ledger) needs no lock, so it succeeds
// even where the lock cannot be taken. [Store.Append] (which also creates a
// missing directory) and [Store.Archive] (which commits two files as one) do the same
// for appending and archiving. If the lock's state root cannot be derived,
// every write fails with an *fs.PathError naming the ledger whose message
// says what to set ([BmadLoopStateRoot]). As in the engine, ctx bounds only
// the wait for the lock (a done ctx still takes a free one), a lock file
// deleted or replaced while held makes a write publish nothing (an error
// matching lock.ErrLockLost), and a path that is not a regular file is
// refused without blocking (an error wrapping atomicfile.ErrNotRegular).
type Store struct {
	membership // a member of filetxn.MutateAll, through eng
	path       string
	archive    string
	eng        *filetxn.Store[*Doc]
	opts       []filetxn.Option // eng's options, for the archive's store
	rootErr    error            // the lock's state root could not be derived: writes fail with this
}

// probe is the lock-free read that lets an operation that writes nothing
// skip the lock. Its failure decides nothing: the caller goes to the lock.
func (s *Store) probe(ctx context.Context) ([]byte, error) {
	if b := s.eng.Backend(); b != nil {
		return b.Get(ctx, s.eng.Name())
	}
	return fsys.ReadState(s.path, "Read", nil, 1)
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
// each other without configuration (with filetxn.WithBackend the lock is the
// backend's, named for the ledger, and no state root is needed); a lock beside the ledger
// (filetxn.WithLockPath(path+".lock")) would end up in a "git add -A" of its
// directory, and bmad-loop does not take it.
//
// Open refuses an empty path and invalid options (a relative state root, an
// empty lock path) with an error matching filetxn.ErrInvalidArgument. It does
// no I/O and creates nothing; a missing ledger is an empty one, created by
// the first append. When the caller does not place the lock and no state
// root can be derived, Open still succeeds: the Store reads and answers
// operations that write nothing, and a write fails with
// [BmadLoopStateRoot]'s error, which says what to set.
func Open(path string, opts ...filetxn.Option) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("ledger: Open: empty path: %w", filetxn.ErrInvalidArgument)
	}
	eng, err := filetxn.NewStore[*Doc](path, new(codec), append([]filetxn.Option{filetxn.WithLockPath(unplaced)}, opts...)...)
	if err != nil {
		return nil, err
	}
	s := &Store{path: path, archive: filepath.Join(filepath.Dir(path), archiveName), eng: eng}
	if eng.Backend() != nil {
		// A backend's lock is its own, named for the ledger: no state root.
		if s.eng, err = filetxn.NewStore[*Doc](path, new(codec), opts...); err != nil {
			return nil, err
		}
		s.membership, s.opts = filetxn.Join(s.eng, nil, nil), opts
		return s, nil
	}
	if lp, _ := eng.LockPath(); lp != unplaced {
		s.membership, s.opts = filetxn.Join(s.eng, nil, nil), opts
		return s, nil
	}
	root, err := BmadLoopStateRoot()
	if err != nil {
		s.rootErr = err
		// The engine store of a ledger without a lock fails what needs the
		// lock with rootErr: MutateAll, before any lock is taken.
		if s.eng, err = filetxn.NewStore[*Doc](path, new(codec), append([]filetxn.Option{filetxn.WithLockPath(unplaced)}, append(opts, filetxn.WithNoLock(err))...)...); err != nil {
			return nil, err
		}
		s.membership = filetxn.Join(s.eng, nil, nil)
		return s, nil
	}
	s.opts = append([]filetxn.Option{filetxn.WithStateRoot(root)}, opts...)
	if s.eng, err = filetxn.NewStore[*Doc](path, new(codec), s.opts...); err != nil {
		return nil, err
	}
	s.membership = filetxn.Join(s.eng, nil, nil)
	return s, nil
}

// membership makes a Store a filetxn.Member.
type membership = filetxn.Membership

// In returns the ledger's Doc in m, for the fn of a filetxn.MutateAll that
// has s among its members: read under the ledger's lock, changed in place,
// published with the other members' changes or not at all. It panics if s
// is not a member of m, or if m's fn has returned.
func (s *Store) In(m *filetxn.Multi) *Doc { return filetxn.In(m, s.eng) }

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

// Mutate runs fn once on the ledger under its lock and publishes what fn
// leaves in the Doc, as filetxn.Store.Mutate does: it waits for the lock (or
// ctx), reads the ledger, runs fn and, if the bytes changed, replaces the
// file atomically, so a batch of Doc operations costs one lock, one read and
// one write. Mutate calls made at once on one Store share a write.
//
// fn's error is returned and nothing is written. A refusal that comes from
// the ledger's content, an error wrapping filetxn.ErrNotFound or a
// *filetxn.FormatError, is returned inside an *fs.PathError naming the
// ledger (unless it names a file already); any other error of fn is
// returned unchanged. An argument a Doc operation refuses is refused after
// the wait for the lock and the read, so check arguments first when that
// matters. A panic in fn releases the lock and propagates. fn must not call
// the Store: that fails with an error matching lock.ErrReentrant. A missing
// ledger is an empty Doc, and the file (not its directory) is created when
// fn adds to it. A Store without a lock (see [Open]) fails without running
// fn. The Commit's Digest proves which bytes this call published, if it
// published any (see [Store.Restore]). For a fn that usually changes
// nothing and must then not wait for the lock, use [Store.MutateProbed].
func (s *Store) Mutate(ctx context.Context, fn func(*Doc) error) (filetxn.Commit, error) {
	if fn == nil {
		return filetxn.Commit{}, fmt.Errorf("ledger: Mutate %s: nil fn: %w", s.path, filetxn.ErrInvalidArgument)
	}
	if s.rootErr != nil {
		return filetxn.Commit{}, s.noRoot()
	}
	c, err := s.eng.Mutate(ctx, fn)
	return c, s.named(err)
}

// MutateProbed is Mutate for a fn that often changes nothing (a replayed
// close, ids already done, nothing eligible), which must then succeed even
// where the lock cannot be taken, as filetxn.Store.MutateProbed does: when
// the lock is busy or cannot be taken, fn first runs on a version read
// without the lock, and if it leaves the ledger unchanged, MutateProbed
// returns that answer with Commit.Written false, never having locked;
// otherwise it waits for the lock and runs fn again on fresh data. A Store
// without a lock answers the same way, and fails only a change.
//
// fn may therefore run more than once: it must only decide on and change
// the Doc, and assign what its operations return (the last run's values are
// the answer), never accumulate them. Errors and panics are Mutate's.
func (s *Store) MutateProbed(ctx context.Context, fn func(*Doc) error) (filetxn.Commit, error) {
	if fn == nil {
		return filetxn.Commit{}, fmt.Errorf("ledger: MutateProbed %s: nil fn: %w", s.path, filetxn.ErrInvalidArgument)
	}
	if s.rootErr == nil {
		c, err := s.eng.MutateProbed(ctx, fn)
		return c, s.named(err)
	}
	// Without a state root for the default lock, only a change fails.
	d, err := s.eng.View(ctx)
	if err != nil {
		return filetxn.Commit{}, err
	}
	if err := fn(d); err != nil {
		return filetxn.Commit{}, s.named(err)
	}
	if d.changed() {
		return filetxn.Commit{}, s.noRoot()
	}
	return filetxn.Commit{}, nil
}

// named returns err inside an *fs.PathError naming the ledger when it is a
// refusal that comes from the ledger's content (it wraps
// filetxn.ErrNotFound or a *filetxn.FormatError) and names no file;
// otherwise it returns err.
func (s *Store) named(err error) error {
	var pe *fs.PathError
	if err == nil || !errors.Is(err, filetxn.ErrNotFound) && !errors.As(err, new(*filetxn.FormatError)) || errors.As(err, &pe) {
		return err
	}
	return &fs.PathError{Op: "Mutate", Path: s.path, Err: err}
}

// Restore puts snapshot back as the whole ledger, under the lock, only if the
// ledger's current bytes are a version the caller owns (their digest is among
// owned: the Commit.Digest of the caller's own writes) or already equal
// snapshot; otherwise it writes nothing and returns an error matching
// filetxn.ErrDiverged. It never merges; [Doc.Merge] in [Store.Mutate] does.
func (s *Store) Restore(ctx context.Context, snapshot []byte, owned ...filetxn.Digest) (filetxn.Commit, error) {
	if s.rootErr != nil {
		return filetxn.Commit{}, s.noRoot()
	}
	return s.eng.Restore(ctx, snapshot, owned...)
}

// Archive moves the ledger's closed entries, closed before before ("" for
// all), into the archive file and leaves stubs (see [Doc.ArchiveInto]), and
// returns the ids moved in ledger order. stamp is the date written on the
// stubs and blocks; "" means today in local time. [Doc.Archivable] on
// [Store.View]'s Doc previews it without a lock.
//
// The two files are one commit (filetxn.MutateAll) under the ledger's lock:
// both published or neither, whatever the crash, full disk or lost lock. A
// lock-free reader may see the archive new and the ledger old between the
// two renames, and after a crash there until the next transaction on either
// file completes the commit. An error after the commit point comes with the
// ids: the move stands. Bodies the archive already holds (an older version's
// or bmad-loop's crash between its two writes) are not appended again.
//
// With nothing eligible (or no ledger) Archive takes no lock. An eligible
// entry whose id several entries carry fails the call, writing nothing, with
// an *fs.PathError naming the ledger around a *filetxn.FormatError keyed by
// the id. A ledger a write would refuse (read-only, not a regular file)
// fails it too, before anything is staged.
func (s *Store) Archive(ctx context.Context, before, stamp string) ([]string, error) {
	if err := checkArchiveArgs("Archive", before, stamp); err != nil {
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
	arch, err := s.archiveStore()
	if err != nil {
		return nil, err
	}
	var moved []string
	// The archive is renamed first: a reader between the renames finds
	// every body in the archive, or in the ledger, or in both.
	commits, err := filetxn.MutateAll(ctx, []filetxn.Member{arch, s}, func(m *filetxn.Multi) error {
		d, a := s.In(m), filetxn.In(m, arch)
		ids, err := d.ArchiveInto(a, before, stamp)
		if err != nil {
			return &fs.PathError{Op: "Archive", Path: s.path, Err: err}
		}
		if len(ids) == 0 {
			return nil
		}
		// A ledger a write would refuse fails the call here, named as
		// Archive's, before anything is staged.
		if s.eng.Backend() == nil {
			if err := fsys.Check("Archive", s.path); err != nil {
				return err
			}
		}
		moved = ids
		return nil
	})
	if err != nil {
		if commits != nil && (commits[0].Written || commits[1].Written) {
			return moved, fmt.Errorf("ledger: archive of %s into %s: %w", s.path, s.archive, err)
		}
		return nil, err
	}
	return moved, nil
}

// archiveStore returns an engine store of the archive under the ledger's
// lock, taken with the ledger's options, so that MutateAll takes that one
// lock for both files.
func (s *Store) archiveStore() (*filetxn.Store[*Doc], error) {
	lp, err := s.eng.LockPath()
	if err != nil {
		return nil, err
	}
	return filetxn.NewStore[*Doc](s.archive, new(codec), append(slices.Clip(s.opts), filetxn.WithLockPath(lp))...)
}

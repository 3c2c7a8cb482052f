package board

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/fsys"
)

// Store is a sprint-status board on disk, read and written through the filetxn engine:
// every change is made under a cross-process lock, on bytes read under that lock, and
// published atomically. A Store is safe for concurrent use by multiple goroutines.
//
// As in the engine: a lock file deleted or replaced while held makes a write publish
// nothing and fail with an error matching lock.ErrLockLost, and a board path that holds
// anything but a regular file (a named pipe, a directory) is refused without blocking,
// with an error wrapping atomicfile.ErrNotRegular.
type Store struct {
	membership // a member of filetxn.MutateAll, through s
	path       string
	codec      codec
	s          *filetxn.Store[*Doc]
	rootErr    error // the default lock's state root could not be derived: writes fail with this
}

// unplaced is the lock path that Open puts first to learn whether the caller's options
// place the lock: no real path contains a NUL byte.
const unplaced = "\x00board: the lock is not placed"

// Open returns the Store for the board at path. opts are the engine's options
// (filetxn.WithStateRoot, filetxn.WithLockPath, filetxn.WithoutSync,
// filetxn.WithLockOptions, ...), applied after the board's default, so that the caller's
// win. The default lock is bmad-loop's sidecar under bmad-loop's state root (as for the
// ledger: $BMAD_LOOP_STATE_DIR, else $XDG_STATE_HOME/bmad-loop, else
// ~/.local/state/bmad-loop; on Windows %LOCALAPPDATA%\bmad-loop\state), so that a Go
// process and a bmad-loop process exclude each other without configuration. With
// filetxn.WithBackend the lock is the backend's, named for the board.
//
// Open refuses an empty path and invalid options (a relative state root, an empty lock
// path) with an error matching filetxn.ErrInvalidArgument. It touches no file: the board
// may be missing (it then reads as empty). When the caller does not place the lock and no
// state root can be derived, Open still succeeds: the Store reads and answers advances
// that write nothing, and a write fails with an *fs.PathError naming the board whose
// message says which environment variable to set (ledger.BmadLoopStateRoot reports the
// same).
func Open(path string, opts ...filetxn.Option) (*Store, error) {
	if path == "" {
		return nil, invalid("Open", "empty path")
	}
	s, err := openWith(path, newCodec(), append([]filetxn.Option{filetxn.WithLockPath(unplaced)}, opts...)...)
	if err != nil {
		return nil, err
	}
	if s.s.Backend() != nil {
		// A backend's lock is its own, named for the board: no state root.
		return openWith(path, s.codec, opts...)
	}
	if lp, _ := s.s.LockPath(); lp != unplaced {
		s.membership = filetxn.Join(s.s, nil, nil)
		return s, nil
	}
	root, err := fsys.StateRoot()
	if err != nil {
		s.rootErr = &fs.PathError{Op: "Lock", Path: path, Err: err}
		// The engine store of a board without a lock fails what needs the
		// lock with err: MutateAll, before any lock is taken.
		if s.s, err = filetxn.NewStore[*Doc](path, s.codec, append([]filetxn.Option{filetxn.WithLockPath(unplaced)}, append(opts, filetxn.WithNoLock(err))...)...); err != nil {
			return nil, err
		}
		s.membership = filetxn.Join(s.s, nil, nil)
		return s, nil
	}
	if s.s, err = filetxn.NewStore[*Doc](path, s.codec, append([]filetxn.Option{filetxn.WithStateRoot(root)}, opts...)...); err != nil {
		return nil, err
	}
	s.membership = filetxn.Join(s.s, nil, nil)
	return s, nil
}

// membership makes a Store a filetxn.Member.
type membership = filetxn.Membership

// In returns the board's Doc in m, for the fn of a filetxn.MutateAll that
// has s among its members: read under the board's lock, changed in place
// (Doc.Advance), published with the other members' changes or not at all.
// It panics if s is not a member of m, or if m's fn has returned.
func (s *Store) In(m *filetxn.Multi) *Doc { return filetxn.In(m, s.s) }

func openWith(path string, codec codec, opts ...filetxn.Option) (*Store, error) {
	eng, err := filetxn.NewStore[*Doc](path, codec, opts...)
	if err != nil {
		return nil, err
	}
	return &Store{membership: filetxn.Join(eng, nil, nil), path: path, codec: codec, s: eng}, nil
}

// LockPath returns the lock file that guards the board. It creates nothing.
func (s *Store) LockPath() (string, error) {
	if s.rootErr != nil {
		return "", s.rootErr
	}
	return s.s.LockPath()
}

// Mutate runs fn once on the board under its lock and publishes what fn leaves in the
// Doc, as filetxn.Store.Mutate does: it waits for the lock (or ctx), reads and parses the
// board, runs fn and, if fn changed it, replaces the board atomically, so several
// Doc.Advance calls in one fn cost one lock, one read and one write. Mutate calls made at
// once on one Store share a write.
//
// fn's error is returned and nothing is written. A refusal of Doc.Advance that comes from
// the board's content (an absent row, a row it cannot rewrite, a refused transition) is
// returned inside an *fs.PathError naming the board (unless it names a file already); any
// other error of fn is returned unchanged. A panic in fn releases the lock and propagates.
// A board that does not parse is refused before fn runs with Parse's *filetxn.FormatError
// inside an *fs.PathError naming the board. fn must not call the Store: that fails with
// lock.ErrReentrant. A Store without a lock (see [Open]) fails without running fn. For a
// fn that usually moves nothing and must then not wait for the lock, use
// [Store.MutateProbed].
func (s *Store) Mutate(ctx context.Context, fn func(*Doc) error) (filetxn.Commit, error) {
	if fn == nil {
		return filetxn.Commit{}, fmt.Errorf("board: Mutate %s: nil fn: %w", s.path, filetxn.ErrInvalidArgument)
	}
	if s.rootErr != nil {
		return filetxn.Commit{}, s.rootErr
	}
	c, err := s.s.Mutate(ctx, fn)
	return c, named("Mutate", s.path, err)
}

// MutateProbed is Mutate for a fn that often moves nothing (rows already at or past their
// targets), which must then succeed even where the lock cannot be taken, as
// filetxn.Store.MutateProbed does: when the lock is busy or cannot be taken, fn first runs
// on a version read without the lock, and if it leaves the board unchanged, MutateProbed
// returns that answer with Commit.Written false, never having locked; otherwise it waits
// for the lock and runs fn again on fresh bytes. A Store without a lock answers the same
// way, and fails only a change.
//
// fn may therefore run more than once: it must only decide on and change the Doc, and
// assign what its calls return (the last run's values are the answer), never accumulate
// them. Errors and panics are Mutate's.
func (s *Store) MutateProbed(ctx context.Context, fn func(*Doc) error) (filetxn.Commit, error) {
	if fn == nil {
		return filetxn.Commit{}, fmt.Errorf("board: MutateProbed %s: nil fn: %w", s.path, filetxn.ErrInvalidArgument)
	}
	return s.mutateProbed(ctx, "Mutate", fn)
}

// mutateProbed is MutateProbed, whose errors name the operation op.
func (s *Store) mutateProbed(ctx context.Context, op string, fn func(*Doc) error) (filetxn.Commit, error) {
	if s.rootErr == nil {
		c, err := s.s.MutateProbed(ctx, fn)
		return c, named(op, s.path, err)
	}
	// Without a state root for the default lock, only a change fails.
	d, err := s.s.View(ctx)
	if err != nil {
		return filetxn.Commit{}, err
	}
	if err := fn(d); err != nil {
		return filetxn.Commit{}, named(op, s.path, err)
	}
	if d.changed {
		return filetxn.Commit{}, s.rootErr
	}
	return filetxn.Commit{}, nil
}

// View reads and parses the board without the lock and without blocking; it sees one
// whole version. A missing board is a Doc with no rows.
func (s *Store) View(ctx context.Context) (*Doc, error) { return s.s.View(ctx) }

// Advance moves the row key towards target, as Doc.Advance does, and returns the status
// the row ends at; Stamp sets the top-level last_updated when the row is written.
// Arguments are checked before any I/O and any lock.
//
// It is Store.MutateProbed with Doc.Advance: a row already at or past the target answers its
// status without needing the lock, so that replay succeeds even where the lock cannot be
// taken (a read-only state root). A missing board or an absent row is an *fs.PathError
// naming the board, matching filetxn.ErrNotFound, whose message names the key (a
// mistyped key is not a success), decided the same way; Doc.Advance's other refusals
// come inside an *fs.PathError naming the board too. Any move is decided under the lock on fresh bytes, which is where the
// authoritative never-regress decision is made: a rival that moved the row past target in
// the meantime wins, and its status is returned. A read-only board is refused with an error wrapping
// fs.ErrPermission and nothing staged; a symlinked board stays a symlink. Advance blocks
// until the lock is held or ctx is done; a ctx already done makes one attempt at the lock
// (see filetxn.Store.Mutate).
func (s *Store) Advance(ctx context.Context, key string, target Status, opts ...AdvanceOption) (Status, error) {
	var cfg advanceConfig
	for _, o := range opts {
		o(&cfg)
	}
	if err := validate(key, target, cfg); err != nil {
		return "", err
	}
	var status Status
	var present bool
	_, err := s.mutateProbed(ctx, "Advance", func(d *Doc) (err error) {
		// An absent row changes nothing, so the probe decides it: present says
		// which answer the no-op was.
		_, present = d.index[key]
		status, err = d.advance(key, target, cfg)
		return err
	})
	switch {
	case err != nil:
		return "", err
	case !present:
		return "", &fs.PathError{Op: "Advance", Path: s.path, Err: notFound(key)}
	}
	return status, nil
}

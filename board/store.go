package board

import (
	"context"
	"fmt"
	"io/fs"
	"sync"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/bmadloop"
	"github.com/filetxn/filetxn/internal/osfile"
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
	path    string
	codec   Codec
	s       *filetxn.Store[*Doc]
	rootErr error // the default lock's state root could not be derived: writes fail with this
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
// process and a bmad-loop process exclude each other without configuration.
//
// Open refuses an empty path and invalid options (a relative state root, an empty lock
// path) with an error matching ErrInvalidArgument (and filetxn.ErrInvalidArgument for an
// option). It touches no file: the board may be missing (it then reads as empty). When
// the caller does not place the lock and no state root can be derived, Open still
// succeeds: the Store reads and answers advances that write nothing, and a write fails
// with an error wrapping ErrNoStateRoot.
func Open(path string, opts ...filetxn.Option) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: empty path", ErrInvalidArgument)
	}
	s, err := openWith(path, NewCodec(path), append([]filetxn.Option{filetxn.WithLockPath(unplaced)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	if lp, _ := s.s.LockPath(); lp != unplaced {
		return s, nil
	}
	root, err := bmadloop.StateRoot()
	if err != nil {
		s.rootErr = &fs.PathError{Op: "Lock", Path: path, Err: err}
		return s, nil
	}
	if s.s, err = filetxn.NewStore[*Doc](path, s.codec, append([]filetxn.Option{filetxn.WithStateRoot(root)}, opts...)...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return s, nil
}

func openWith(path string, codec Codec, opts ...filetxn.Option) (*Store, error) {
	eng, err := filetxn.NewStore[*Doc](path, codec, opts...)
	if err != nil {
		return nil, err
	}
	return &Store{path: path, codec: codec, s: eng}, nil
}

// Path returns the board's path as given to Open.
func (s *Store) Path() string { return s.path }

// LockPath returns the lock file that guards the board. It creates nothing.
func (s *Store) LockPath() (string, error) {
	if s.rootErr != nil {
		return "", s.rootErr
	}
	return s.s.LockPath()
}

// Mutate takes the lock, reads and parses the board, calls fn once with the Doc, and
// writes the board atomically if fn changed it; then it releases the lock. Batch several
// Advance calls in one fn: they cost one lock, one read and one write. If fn returns an
// error, nothing is written and that error is returned unchanged; if fn panics, the lock
// is released and the panic propagates. A board that does not parse is refused with its
// *ParseError (wrapped in an *fs.PathError) before fn runs. Calling Mutate or Advance on
// the same board from inside fn fails with lock.ErrReentrant. Mutate blocks until the
// lock is held or ctx is done.
func (s *Store) Mutate(ctx context.Context, fn func(*Doc) error) (filetxn.Commit, error) {
	if s.rootErr != nil {
		return filetxn.Commit{}, s.rootErr
	}
	return s.s.Mutate(ctx, fn)
}

// View reads and parses the board without the lock and without blocking; it sees one
// whole version. A missing board is a Doc with no rows.
func (s *Store) View(ctx context.Context) (*Doc, error) { return s.s.View(ctx) }

// Advance moves the row key towards target, as Doc.Advance does, and returns the status
// the row ends at; with now != "" the top-level last_updated is set to now when the row
// is written. Arguments are checked before any I/O and any lock.
//
// A row already at or past the target answers its status: that replay is decided on a
// lock-free read and takes no lock at all, so it succeeds even where the lock cannot be
// taken (a read-only state root). A missing board or an absent row is an error matching
// ErrNotFound that names the board and the key (a mistyped key is not a success), decided
// on that read too. Any other
// answer is decided again under the lock on fresh bytes, which is where the authoritative
// never-regress decision is made: a rival that moved the row past target in the meantime
// wins, and its status is returned. A read-only board is refused with an error wrapping
// fs.ErrPermission and nothing staged; a symlinked board stays a symlink. Advance blocks
// until the lock is held or ctx is done; a ctx already done makes one attempt at the lock
// (see filetxn.Store.Mutate).
func (s *Store) Advance(ctx context.Context, key, target, now string, opts ...AdvanceOption) (string, error) {
	cfg := advanceConfig{now: now}
	for _, o := range opts {
		o(&cfg)
	}
	if err := validate(key, target, cfg); err != nil {
		return "", err
	}
	// The lock-free probe, as the engine's MutateProbed makes it, but without encoding the
	// board to compare bytes: an advance that changes no line leaves the Doc unchanged.
	// Any other outcome, an error included, is decided again under the lock.
	if status, present, ok := s.probe(ctx, key, target, cfg); ok {
		if !present {
			return "", s.notFound(key)
		}
		return status, nil
	}
	if s.rootErr != nil {
		return "", s.rootErr
	}
	var status string
	_, err := s.s.Mutate(ctx, func(d *Doc) error {
		if _, present := d.index[key]; !present {
			return s.notFound(key)
		}
		var err error
		status, err = d.advance(key, target, cfg)
		return err
	})
	if err != nil {
		return "", err
	}
	return status, nil
}

// Status reads the board without the lock and returns the status of key, as Doc.Status
// does. ok is false for a missing board or an absent key.
func (s *Store) Status(ctx context.Context, key string) (status string, ok bool, err error) {
	d, err := s.View(ctx)
	if err != nil {
		return "", false, err
	}
	status, ok = d.Status(key)
	return status, ok, nil
}

// notFound is the error of an Advance of a key that the board has no row for.
func (s *Store) notFound(key string) error {
	return fmt.Errorf("board: %s: no row %q: %w", s.path, key, ErrNotFound)
}

// probe decides Advance on a lock-free read, and reports ok when the answer needs no
// write, and whether the board has a row for key. It only plans the advance, which changes nothing, so a board the Codec
// remembers is decided on in place, without a copy. It reads into a pooled buffer: the
// Doc keeps none of the bytes (Parse copies what it keeps), and a read into fresh memory
// costs a board-sized allocation and its page faults on every call.
func (s *Store) probe(ctx context.Context, key, target string, cfg advanceConfig) (status string, present, ok bool) {
	buf := probeBuffers.Get().(*[]byte)
	defer probeBuffers.Put(buf)
	data, err := osfile.ReadState(s.path, "Read", *buf, 1)
	if data != nil && cap(data) <= maxProbeBuffer {
		*buf = data[:0]
	}
	if err != nil {
		return "", false, false
	}
	var p advancePlan
	decide := func(d *Doc) {
		_, present = d.index[key]
		status, p, err = d.plan(key, target, cfg)
	}
	if data == nil || !s.codec.cache.peek(data, decide) {
		d, derr := s.codec.Decode(data)
		if derr != nil {
			return "", false, false
		}
		decide(d)
	}
	return status, present, err == nil && p.row < 0
}

// probeBuffers holds the probe's read buffers between calls.
var probeBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxProbeBuffer bounds the buffers kept in probeBuffers.
const maxProbeBuffer = 4 << 20

package board

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/filetxn/filetxn"
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
	path  string
	codec Codec
	s     *filetxn.Store[*Doc]
}

// Option configures Open.
type Option func(*config)

type config struct {
	engine []filetxn.Option
}

// WithStateRoot places the lock in a sidecar under dir (dir/locks/<hash>-<name>.lock), the
// placement bmad-loop uses: a Go process and a bmad-loop process that share a state root
// serialize against each other. dir must be absolute.
func WithStateRoot(dir string) Option {
	return func(c *config) { c.engine = append(c.engine, filetxn.WithStateRoot(dir)) }
}

// WithoutSync skips fsync: faster, but a power loss may lose the last write.
func WithoutSync() Option {
	return func(c *config) { c.engine = append(c.engine, filetxn.WithoutSync()) }
}

// WithLogger reports the engine's waits and writes to l.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.engine = append(c.engine, filetxn.WithLogger(l)) }
}

// WithEngineOptions passes options to the engine unchanged (an explicit lock path, lock
// options, ...).
func WithEngineOptions(opts ...filetxn.Option) Option {
	return func(c *config) { c.engine = append(c.engine, opts...) }
}

// Open returns the Store for the board at path. It touches no file: the board may be
// missing (it then reads as empty, and Advance answers ""). Without WithStateRoot the
// lock is the engine's default, a .lock file beside the board.
func Open(path string, opts ...Option) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: empty path", ErrInvalidArgument)
	}
	var c config
	for _, o := range opts {
		o(&c)
	}
	return openWith(path, NewCodec(path), c.engine...), nil
}

func openWith(path string, codec Codec, opts ...filetxn.Option) *Store {
	// The Codec keeps none of the bytes it decodes or appends to (Parse and the cache
	// copy what they keep), so the engine may read and encode every transaction in
	// buffers it reuses.
	opts = append([]filetxn.Option{filetxn.WithBufferReuse()}, opts...)
	return &Store{path: path, codec: codec, s: filetxn.NewStore[*Doc](path, codec, opts...)}
}

// Path returns the board's path as given to Open.
func (s *Store) Path() string { return s.path }

// LockPath returns the lock file that guards the board. It creates nothing.
func (s *Store) LockPath() (string, error) { return s.s.LockPath() }

// Mutate takes the lock, reads and parses the board, calls fn once with the Doc, and
// writes the board atomically if fn changed it; then it releases the lock. Batch several
// Advance calls in one fn: they cost one lock, one read and one write. If fn returns an
// error, nothing is written and that error is returned unchanged; if fn panics, the lock
// is released and the panic propagates. A board that does not parse is refused with its
// *ParseError (wrapped in an *fs.PathError) before fn runs. Calling Mutate or Advance on
// the same board from inside fn fails with lock.ErrReentrant. Mutate blocks until the
// lock is held or ctx is done.
func (s *Store) Mutate(ctx context.Context, fn func(*Doc) error) (filetxn.Commit, error) {
	return s.s.Mutate(ctx, fn)
}

// View reads and parses the board without the lock and without blocking; it sees one
// whole version. A missing board is a Doc with no rows.
func (s *Store) View(ctx context.Context) (*Doc, error) { return s.s.View(ctx) }

// Advance moves the row key towards target, as Doc.Advance does, and returns the status
// the row ends at; with now != "" the top-level last_updated is set to now when the row
// is written. Arguments are checked before any I/O and any lock.
//
// A missing board or an absent row answers "", and a row already at or past the target
// answers its status: these are decided on a lock-free read and take no lock at all, so
// they succeed even where the lock cannot be taken (a read-only state root). Any other
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
	if status, ok := s.probe(ctx, key, target, cfg); ok {
		return status, nil
	}
	var status string
	_, err := s.s.Update(ctx, func(d *Doc) error {
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

// probe decides Advance on a lock-free read, and reports ok when the answer needs no
// write. It only plans the advance, which changes nothing, so a board the Codec
// remembers is decided on in place, without a copy. It reads into a pooled buffer: the
// Doc keeps none of the bytes (Parse copies what it keeps), and a read into fresh memory
// costs a board-sized allocation and its page faults on every call.
func (s *Store) probe(ctx context.Context, key, target string, cfg advanceConfig) (string, bool) {
	buf := probeBuffers.Get().(*[]byte)
	defer probeBuffers.Put(buf)
	data, err := s.s.ReadBytesInto(ctx, *buf)
	if data != nil && cap(data) <= maxProbeBuffer {
		*buf = data[:0]
	}
	if err != nil {
		return "", false
	}
	var status string
	var p advancePlan
	decide := func(d *Doc) { status, p, err = d.plan(key, target, cfg) }
	if data == nil || !s.codec.cache.peek(data, decide) {
		d, derr := s.codec.Decode(data)
		if derr != nil {
			return "", false
		}
		decide(d)
	}
	return status, err == nil && p.row < 0
}

// probeBuffers holds the probe's read buffers between calls.
var probeBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxProbeBuffer bounds the buffers kept in probeBuffers.
const maxProbeBuffer = 4 << 20

package filetxn

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"sync"

	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/internal/osfile"
	"github.com/filetxn/filetxn/internal/staletemp"
	"github.com/filetxn/filetxn/internal/txhook"
	"github.com/filetxn/filetxn/lock"
)

// A Codec turns a file's bytes into a document and back. Decode receives nil
// when the file does not exist. For an unchanged document, Encode must return
// the bytes Decode was given, and nothing (nil or empty) for the document of
// a missing file: that is how Mutate knows to write nothing. Decode and Encode
// must not keep data beyond the call.
type Codec[D any] interface {
	Decode(data []byte) (D, error)
	Encode(doc D) ([]byte, error)
}

// An AppendEncoder is a Codec that can also encode into a buffer it is
// given, in the manner of strconv.AppendInt. A store made with
// WithBufferReuse encodes through it into a buffer of its own that it reuses
// from one transaction to the next, instead of taking a new slice of the
// file's size from Encode every time. AppendEncode must append exactly what
// Encode would return, and keep nothing of dst.
type AppendEncoder[D any] interface {
	AppendEncode(dst []byte, doc D) ([]byte, error)
}

// Digest is the SHA-256 of a file's bytes.
type Digest [sha256.Size]byte

// DigestOf returns the digest of b. A missing file and an empty one have the
// same digest.
func DigestOf(b []byte) Digest { return sha256.Sum256(b) }

// String returns the digest in lowercase hex.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// Commit reports the outcome of a transaction.
type Commit struct {
	// Written reports whether new bytes were published.
	Written bool
	// Digest is the digest of the bytes the file holds after the transaction:
	// the bytes published when Written, else the bytes read. It is computed
	// from the bytes in memory under the lock, never by reading the file
	// back, so it proves authorship: if the file still has this digest later,
	// nobody has written since.
	Digest Digest
	// Before is the digest of the bytes read at the start of the transaction.
	Before Digest
}

// A Store is a data file, the codec for its contents and the lock that
// guards it. It holds no data in memory; every call reads the file anew. A
// Store is safe for concurrent use by multiple goroutines.
type Store[D any] struct {
	path     string
	codec    Codec[D]
	appender AppendEncoder[D] // the codec, when it is one and buffers are reused
	o        options
	bufs     sync.Pool // of *[]byte, with WithBufferReuse
}

// NewStore returns a store for the data file at path. The lock file is
// <path>.lock unless an option places it elsewhere. NewStore does no I/O.
func NewStore[D any](path string, codec Codec[D], opts ...Option) *Store[D] {
	s := &Store[D]{path: path, codec: codec, o: options{perm: 0o644}}
	for _, opt := range opts {
		opt(&s.o)
	}
	if s.o.logger != nil {
		s.o.lockOpts = append(s.o.lockOpts, lock.WithLogger(s.o.logger))
	}
	if ae, ok := codec.(AppendEncoder[D]); ok && s.o.reuse {
		s.appender = ae
	}
	return s
}

// Path returns the data file's path as given to NewStore.
func (s *Store[D]) Path() string { return s.path }

// LockPath returns the path of the lock file that guards the data file. With
// WithStateRoot it resolves symlinks in the data file's path (see
// lock.SidecarPath); it creates nothing.
func (s *Store[D]) LockPath() (string, error) {
	switch {
	case s.o.lockPath != "":
		return s.o.lockPath, nil
	case s.o.stateRoot != "":
		return lock.SidecarPath(s.o.stateRoot, s.path)
	default:
		return s.path + ".lock", nil
	}
}

// Mutate runs one transaction: it takes the lock (waiting until it is free
// or ctx is done), reads and decodes the file, calls fn once with the
// document, encodes it, and replaces the file atomically if the bytes
// changed; then it releases the lock.
//
// If fn returns an error, nothing is written and that error is returned
// unchanged. If the encoded bytes equal the bytes read, nothing is written
// and Commit.Written is false. If fn panics, the lock is released and the
// panic propagates; nothing is written. Calling Mutate on the same file from
// inside fn returns an error matching lock.ErrReentrant rather than
// deadlocking.
//
// ctx bounds the wait for the lock and nothing else. A wait ended by ctx
// returns an error matching ctx.Err() and carrying the holder (a
// *lock.BusyError); a ctx that is already done makes one attempt, so on a
// free lock the transaction runs, and on a busy one Mutate returns that
// error at once, leaving no goroutine behind.
//
// If the lock file was deleted or replaced while the lock was held (so that
// another process may hold a lock on the file now at its path), nothing is
// written and the error matches lock.ErrLockLost and names the data file and
// the lock file.
func (s *Store[D]) Mutate(ctx context.Context, fn func(D) error) (Commit, error) {
	return s.mutate(ctx, fn, true)
}

// Update is Mutate for a caller that needs only to know whether the file was
// written: the same transaction, with the same locking, errors and panics,
// but no digests. Hashing the bytes read and the bytes written is two passes
// of SHA-256 over the file, a cost proportional to its size that a caller
// that discards the Commit has no reason to pay.
func (s *Store[D]) Update(ctx context.Context, fn func(D) error) (written bool, err error) {
	c, err := s.mutate(ctx, fn, false)
	return c.Written, err
}

// mutate is Mutate, with the digests of the Commit left zero unless digests.
func (s *Store[D]) mutate(ctx context.Context, fn func(D) error, digests bool) (Commit, error) {
	var c Commit
	err := s.locked(ctx, func(tx *Tx) error {
		buf := s.buffer()
		defer s.recycle(buf)
		data, err := tx.readBuffered(s.path, "Read", buf)
		if err != nil {
			return err
		}
		if digests {
			c.Before = DigestOf(data)
			c.Digest = c.Before
		}
		doc, err := s.codec.Decode(data)
		if err != nil {
			return &fs.PathError{Op: "Decode", Path: s.path, Err: err}
		}
		if err := fn(doc); err != nil {
			return err
		}
		obuf := s.encodeBuffer()
		defer s.recycle(obuf)
		out, err := s.encode(doc, obuf)
		if err != nil {
			return &fs.PathError{Op: "Encode", Path: s.path, Err: err}
		}
		if bytes.Equal(out, data) {
			return nil
		}
		if c.Digest, err = tx.write(s.path, out, digests); err != nil {
			return err
		}
		c.Written = true
		return nil
	})
	return c, err
}

// MutateProbed is Mutate preceded by a lock-free probe: fn first runs on a
// snapshot read without the lock, and if that would write nothing (the
// encoded bytes equal the snapshot), MutateProbed returns at once with
// Commit.Written false and without ever taking the lock. On any other
// outcome, an error included, it runs Mutate, which decides again under the
// lock on fresh data. An operation that provably changes nothing therefore
// succeeds even where the lock cannot be taken (a read-only state root, a
// replayed command).
//
// fn may run twice, so it must be a pure decision on the document: no side
// effects beyond changing it. ctx bounds the wait for the lock only, as in
// Mutate: the probe never waits, so it runs whatever the state of ctx.
func (s *Store[D]) MutateProbed(ctx context.Context, fn func(D) error) (Commit, error) {
	if d, unchanged := s.probe(fn); unchanged {
		return Commit{Digest: d, Before: d}, nil
	}
	return s.Mutate(ctx, fn)
}

// probe runs fn on a lock-free read and reports whether it left the encoded
// bytes unchanged, with their digest.
func (s *Store[D]) probe(fn func(D) error) (Digest, bool) {
	buf, obuf := s.buffer(), s.encodeBuffer()
	defer s.recycle(buf)
	defer s.recycle(obuf)
	data, err := readBuffered(s.path, "Read", buf)
	if err != nil {
		return Digest{}, false
	}
	doc, err := s.codec.Decode(data)
	if err != nil || fn(doc) != nil {
		return Digest{}, false
	}
	out, err := s.encode(doc, obuf)
	if err != nil || !bytes.Equal(out, data) {
		return Digest{}, false
	}
	return DigestOf(data), true
}

// encode encodes doc: into the storage of *buf (from encodeBuffer), which it
// then points at the storage used, or with Encode when buf is nil.
func (s *Store[D]) encode(doc D, buf *[]byte) ([]byte, error) {
	if buf == nil {
		return s.codec.Encode(doc)
	}
	out, err := s.appender.AppendEncode((*buf)[:0], doc)
	if out != nil && cap(out) <= maxPooledBuffer {
		*buf = out[:0]
	}
	return out, err
}

// View reads and decodes the file without taking the lock. The file is only
// ever replaced by rename, so View sees one whole version, although it may be
// replaced right after. It does not block, even on a named pipe at the path:
// anything but a regular file is refused with an error wrapping
// atomicfile.ErrNotRegular. Since it never waits, a done ctx does not stop
// it.
func (s *Store[D]) View(ctx context.Context) (D, error) {
	var zero D
	buf := s.buffer()
	defer s.recycle(buf)
	data, err := readBuffered(s.path, "Read", buf)
	if err != nil {
		return zero, err
	}
	doc, err := s.codec.Decode(data)
	if err != nil {
		return zero, &fs.PathError{Op: "Decode", Path: s.path, Err: err}
	}
	return doc, nil
}

// ReadBytes returns the file's bytes without taking the lock, or nil when the
// file does not exist. Like View it does not block, refuses anything but a
// regular file, and reads whatever the state of ctx.
func (s *Store[D]) ReadBytes(ctx context.Context) ([]byte, error) {
	return readFile(s.path, "Read")
}

// ReadBytesInto is ReadBytes into the storage of buf, with the buffer rules
// of Tx.ReadInto: the bytes returned may alias buf, and the caller may reuse
// buf for the next read once it is done with them. Like ReadBytes it takes
// no lock, does not block, and reads whatever the state of ctx.
func (s *Store[D]) ReadBytesInto(ctx context.Context, buf []byte) ([]byte, error) {
	return readFileInto(s.path, "Read", buf)
}

// Restore puts snapshot back as the file's contents, under the lock, but only
// if the current bytes are a version the caller owns: their digest is among
// owned (typically Commit.Digest values of the caller's own transactions).
// If the file already holds snapshot, nothing is written. Otherwise someone
// else has written since, and Restore writes nothing and returns an error
// matching ErrDiverged, so that a rival's concurrent change is never erased.
// A nil snapshot stands for a missing file: restoring it removes the file.
// Locking, ctx and a lost lock behave as in Mutate: a lost lock writes and
// removes nothing.
func (s *Store[D]) Restore(ctx context.Context, snapshot []byte, owned ...Digest) (Commit, error) {
	var c Commit
	err := s.locked(ctx, func(tx *Tx) error {
		cur, err := tx.read(s.path, "Restore")
		if err != nil {
			return err
		}
		c.Before = DigestOf(cur)
		c.Digest = c.Before
		if bytes.Equal(cur, snapshot) && (cur == nil) == (snapshot == nil) {
			return nil
		}
		if !slices.Contains(owned, c.Before) {
			return &fs.PathError{Op: "Restore", Path: s.path, Err: ErrDiverged}
		}
		if snapshot == nil {
			if err := tx.checkLock(s.path, "Restore"); err != nil {
				return err
			}
			if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return &fs.PathError{Op: "Restore", Path: s.path, Err: underlying(err)}
			}
			c.Digest, c.Written = DigestOf(nil), true
			return nil
		}
		if c.Digest, err = tx.write(s.path, snapshot, true); err != nil {
			return err
		}
		c.Written = true
		return nil
	})
	return c, err
}

// Locked runs fn with the store's lock held, for work that spans more than
// one file under one acquisition (for example: write an archive, then the
// data file). fn reads and writes through tx; tx is valid only during fn.
// fn's error is returned unchanged. Locking, re-entry, ctx and panics behave
// as in Mutate.
//
// Every Tx.Write and Tx.Append checks, just before it publishes, that the
// lock file is still the one locked; once a check finds the lock lost, that
// write and every later one of the transaction publish nothing and return an
// error matching lock.ErrLockLost. So a lock lost before the first write of
// fn writes none of its files; one lost between two writes leaves the first
// published and refuses the rest, as a crash there would.
func (s *Store[D]) Locked(ctx context.Context, fn func(tx *Tx) error) error {
	return s.locked(ctx, fn)
}

func (s *Store[D]) locked(ctx context.Context, fn func(tx *Tx) error) error {
	lockPath, err := s.LockPath()
	if err != nil {
		return err
	}
	var h *lock.Handle
	if s.o.noWait {
		h, err = lock.TryAcquire(lockPath, s.o.lockOpts...)
	} else {
		h, err = lock.Acquire(ctx, lockPath, s.o.lockOpts...)
	}
	if err != nil {
		return err
	}
	defer h.Release()
	tx := &Tx{o: &s.o, lock: h, hooks: txhook.From(ctx)}
	defer func() { tx.done = true }()
	return fn(tx)
}

// A Tx is the view of the files that a Locked callback gets: reads and
// atomic writes made while the store's lock is held.
type Tx struct {
	o     *options
	lock  *lock.Handle
	hooks txhook.Hooks // tests only
	done  bool
	lost  error // the lock was found lost: every later write fails with this
}

// Lock returns the held lock, for example to hand it over to a child process
// with (*lock.Handle).HandOver.
func (tx *Tx) Lock() *lock.Handle { return tx.lock }

// Read returns the bytes of the file at path, or nil when it does not exist.
func (tx *Tx) Read(path string) ([]byte, error) { return tx.read(path, "Read") }

// ReadInto is Read into the storage of buf, which the caller may reuse from
// one transaction to the next: a read into memory already touched costs a
// fraction of one into fresh memory (for a large file, page faults), and
// leaves no garbage. The length of buf is ignored and its contents are
// overwritten. When the file does not fit in cap(buf) with a few KiB to
// spare, a new slice is allocated instead. Either way the bytes returned
// alias the storage they were read into and have at least 4 KiB of capacity
// after them, so that appending a little to them happens in place. An empty
// file gives a non-nil empty slice, a missing one nil.
func (tx *Tx) ReadInto(path string, buf []byte) ([]byte, error) {
	if tx.done {
		return nil, &fs.PathError{Op: "Read", Path: path, Err: ErrTxDone}
	}
	return readFileInto(path, "Read", buf)
}

// readSpare is the room that ReadInto and ReadBytesInto leave after a file's
// bytes.
const readSpare = 4 << 10

// Write replaces the file at path with data atomically (durably unless
// WithoutSync or NotDurable) and returns the digest of data. Right before the
// rename it checks that the lock is still held on the file at the lock's
// path; if not, it removes its temporary file, publishes nothing and returns
// an error matching lock.ErrLockLost (see Store.Locked).
func (tx *Tx) Write(path string, data []byte, opts ...WriteOption) (Digest, error) {
	return tx.write(path, data, true, opts...)
}

// Append appends data to the file at path (created with the store's
// permissions under the umask if missing) in a single write(2) on a
// descriptor opened with O_APPEND, and fsyncs it unless WithoutSync or
// NotDurable. It is for append-only logs kept beside the data, such as a
// tick log; a crash can leave a partial last line, which readers of such
// logs must skip. Like Write it appends nothing, and returns an error
// matching lock.ErrLockLost, when the lock is found lost.
func (tx *Tx) Append(path string, data []byte, opts ...WriteOption) error {
	if tx.done {
		return &fs.PathError{Op: "Append", Path: path, Err: ErrTxDone}
	}
	if err := tx.checkLock(path, "Append"); err != nil {
		return err
	}
	return atomicfile.AppendFile(path, data, tx.o.perm, tx.o.atomicOptions(opts, true)...)
}

// A WriteOption configures one Tx.Write or Tx.Append.
type WriteOption func(*writeOptions)

type writeOptions struct {
	notDurable bool
}

// NotDurable lets a power loss or a kernel crash undo one Tx.Write or
// Tx.Append, in exchange for less waiting on the disk; a process crash
// cannot undo it. A Write still never leaves a torn or empty file: its bytes
// are fsynced before the rename, and only the fsync of the directory, which
// makes the rename itself durable, is skipped, so after a power loss the
// file holds the old version or the new one. An Append is not fsynced at all
// and may lose its bytes. It is for writes that guard only against the death
// of a process, such as a marker that a long step is running, when a durable
// write follows later in the same transaction.
func NotDurable() WriteOption { return func(o *writeOptions) { o.notDurable = true } }

func (tx *Tx) read(path, op string) ([]byte, error) {
	return tx.readBuffered(path, op, nil)
}

// readBuffered is read into *buf (see readBuffered), or into a new slice when
// buf is nil.
func (tx *Tx) readBuffered(path, op string, buf *[]byte) ([]byte, error) {
	if tx.done {
		return nil, &fs.PathError{Op: op, Path: path, Err: ErrTxDone}
	}
	return readBuffered(path, op, buf)
}

// buffer returns a read buffer from the store's pool, or nil when the store
// does not reuse buffers (WithBufferReuse). The caller hands it back with
// recycle once it is done with the bytes read into it.
func (s *Store[D]) buffer() *[]byte {
	if !s.o.reuse {
		return nil
	}
	if buf, ok := s.bufs.Get().(*[]byte); ok {
		return buf
	}
	return new([]byte)
}

// encodeBuffer is buffer for encoding: nil unless the codec can encode
// into it.
func (s *Store[D]) encodeBuffer() *[]byte {
	if s.appender == nil {
		return nil
	}
	return s.buffer()
}

func (s *Store[D]) recycle(buf *[]byte) {
	if buf == nil {
		return
	}
	if poisonRecycled {
		clear((*buf)[:cap(*buf)])
	}
	s.bufs.Put(buf)
}

// poisonRecycled, set by tests, has recycle zero a buffer as it goes back to
// the pool, so that bytes used after that show up at once as garbage instead
// of as a rare race with the next user.
var poisonRecycled bool

// maxPooledBuffer bounds the buffers a store keeps between transactions: a
// file that was briefly huge must not pin its size in memory for good.
const maxPooledBuffer = 4 << 20

// readBuffered is readFile into the storage of *buf, which it then points at
// the storage used (a larger one when the file outgrew it), or readFile when
// buf is nil.
func readBuffered(path, op string, buf *[]byte) ([]byte, error) {
	if buf == nil {
		return readFile(path, op)
	}
	data, err := readFileWith(path, op, *buf, 1)
	if data != nil && cap(data) <= maxPooledBuffer {
		*buf = data[:0]
	}
	return data, err
}

// write is Write; the digest is left zero unless digest.
func (tx *Tx) write(path string, data []byte, digest bool, opts ...WriteOption) (Digest, error) {
	if tx.done {
		return Digest{}, &fs.PathError{Op: "Write", Path: path, Err: ErrTxDone}
	}
	pf, err := atomicfile.Create(path, tx.o.perm, tx.o.atomicOptions(opts, false)...)
	if err != nil {
		return Digest{}, err
	}
	defer pf.Cleanup()
	if _, err := pf.Write(data); err != nil {
		return Digest{}, err
	}
	tx.hooks.Call(txhook.TempWritten)
	// The digest is computed here, on this goroutine. Hashing on another one
	// while the fsync waits was measured slower on a two-core machine (by
	// about 0.1 ms for a 15 KB file): the second core is the one the file
	// system's journal thread needs to complete that fsync.
	var d Digest
	if digest {
		d = DigestOf(data)
	}
	// The check comes after the temp file is written, as late as the
	// PendingFile lets it: CloseAtomicallyReplace fsyncs the temp file and
	// renames it in one call, so a lock lost during that fsync or between it
	// and the rename goes unnoticed. No check can close the window: only a
	// lock file that nobody deletes can.
	if err := tx.checkLock(path, "Write"); err != nil {
		return Digest{}, err // the deferred Cleanup removes the temp file
	}
	if err := pf.CloseAtomicallyReplace(); err != nil {
		return Digest{}, err
	}
	// Under the lock, every other temporary file for path is a dead
	// writer's (killed between its staging and its rename): remove them, so
	// that a crash leaves litter only until the next write. Best effort: the
	// write is done, and a file that cannot go now can go next time.
	_, _ = staletemp.Remove(path)
	tx.hooks.Call(txhook.Replaced)
	return d, nil
}

// checkLock returns nil if the lock file at the lock's path is still the one
// whose lock tx holds, and otherwise the error with which a write of path
// (by op) publishes nothing: it matches lock.ErrLockLost and names path and
// the lock file. The first such error is kept, and every later check of the
// transaction returns it, so a lock lost once stays lost even if the path
// comes to name the locked file again. A check that cannot tell (the lock
// file cannot be examined) fails too: publishing is safe only when the lock
// is known to be current.
func (tx *Tx) checkLock(path, op string) error {
	tx.hooks.Call(txhook.Check)
	if tx.lost != nil {
		return &fs.PathError{Op: op, Path: path, Err: tx.lost}
	}
	ok, err := tx.lock.Current()
	switch {
	case err != nil:
		tx.lost = fmt.Errorf("checking lock file %s: %w", tx.lock.Path(), err)
	case !ok:
		tx.lost = fmt.Errorf("lock file %s: %w", tx.lock.Path(), lock.ErrLockLost)
	default:
		return nil
	}
	return &fs.PathError{Op: op, Path: path, Err: tx.lost}
}

// readFile returns the bytes at path, nil when nothing is there.
func readFile(path, op string) ([]byte, error) {
	return readFileWith(path, op, nil, 1)
}

// readFileInto is readFile into buf, leaving readSpare bytes of room (the
// extra byte is the one that lets the read see the end of the file).
func readFileInto(path, op string, buf []byte) ([]byte, error) {
	return readFileWith(path, op, buf, readSpare+1)
}

func readFileWith(path, op string, buf []byte, spare int) ([]byte, error) {
	data, err := osfile.ReadFileInto(path, buf, spare)
	switch {
	case err == nil:
		if data == nil {
			data = []byte{}
		}
		return data, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	default:
		return nil, &fs.PathError{Op: op, Path: path, Err: underlying(err)}
	}
}

func underlying(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// An Option configures a Store.
type Option func(*options)

type options struct {
	stateRoot string
	lockPath  string
	noSync    bool
	noWait    bool
	reuse     bool
	perm      fs.FileMode
	logger    *slog.Logger
	lockOpts  []lock.Option
}

// durability is how much of a write reaches stable storage before it returns.
type durability int

const (
	durable  durability = iota // the file's data and the directory entry
	dataOnly                   // the data; the rename may be undone by a power loss
	volatile                   // nothing: the page cache only
)

// durability returns the durability of one write (or, when appending, one
// append) made with opts.
func (o *options) durability(opts []WriteOption, appending bool) durability {
	var w writeOptions
	for _, opt := range opts {
		opt(&w)
	}
	switch {
	case o.noSync, w.notDurable && appending:
		return volatile
	case w.notDurable:
		return dataOnly
	}
	return durable
}

// atomicOptions returns the atomicfile options of one write (or append) made
// with opts.
func (o *options) atomicOptions(opts []WriteOption, appending bool) []atomicfile.Option {
	switch o.durability(opts, appending) {
	case volatile:
		return []atomicfile.Option{atomicfile.WithoutSync()}
	case dataOnly:
		return []atomicfile.Option{atomicfile.WithoutDirSync()}
	}
	return nil
}

// WithStateRoot places the lock file under dir, at lock.SidecarPath(dir,
// path): outside the data directory, and the same file that bmad-loop locks
// when its state root is dir.
func WithStateRoot(dir string) Option {
	return func(o *options) { o.stateRoot, o.lockPath = dir, "" }
}

// WithLockPath uses the lock file at path.
func WithLockPath(path string) Option {
	return func(o *options) { o.lockPath, o.stateRoot = path, "" }
}

// WithLockBeside uses <data path>.lock as the lock file. It is the default.
func WithLockBeside() Option {
	return func(o *options) { o.lockPath, o.stateRoot = "", "" }
}

// WithoutSync skips the fsync of the file and its directory when writing:
// faster, but a power loss or kernel crash may leave the old version or an
// empty file. A process crash still leaves the old or the new version.
func WithoutSync() Option { return func(o *options) { o.noSync = true } }

// WithBufferReuse has the store read the data file into buffers that it keeps
// and reuses from one transaction to the next (in Mutate, Update,
// MutateProbed and View), instead of into a new slice of the file's size
// every time: less garbage, and for a large file no page faults on fresh
// memory.
//
// A codec that is also an AppendEncoder encodes into such a buffer too.
//
// It is safe only with a codec that keeps the Codec contract to the letter:
// Decode copies whatever it keeps of the bytes it is given, so that no
// document refers to them once Decode returns, and AppendEncode keeps
// nothing of the buffer it appends to. With a codec whose document
// aliases those bytes (a document that is the bytes themselves, say), a
// later transaction overwrites the document of an earlier one, even one still
// in use.
func WithBufferReuse() Option { return func(o *options) { o.reuse = true } }

// WithNoWait makes every transaction fail at once, with an error matching
// lock.ErrWouldBlock, when another holder has the lock, instead of waiting.
func WithNoWait() Option { return func(o *options) { o.noWait = true } }

// WithPerm sets the permission bits (before the umask) of a file the store
// creates. The default is 0644. An existing file keeps its own.
func WithPerm(perm fs.FileMode) Option { return func(o *options) { o.perm = perm } }

// WithLogger reports long lock waits to l (see lock.WithLogger).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithLockOptions passes options to every lock acquisition, such as
// lock.WithPurpose or lock.WithWaitReport.
func WithLockOptions(opts ...lock.Option) Option {
	return func(o *options) { o.lockOpts = append(o.lockOpts, opts...) }
}

package filetxn

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"slices"
	"sync/atomic"

	"github.com/filetxn/filetxn/atomicfile"
	"github.com/filetxn/filetxn/internal/fsys"
	"github.com/filetxn/filetxn/internal/seam"
	"github.com/filetxn/filetxn/lock"
)

// A Codec turns a file's bytes into a document and back, as a pair of pure
// functions; [JSON] is one. Decode gets nil for a missing file and an empty
// slice for an empty one; it may keep data, and append to it (no other call
// gets the room after data), but must not change its bytes. What Encode
// returns is written, then kept (for [Commit.Digest], and for a later Decode
// of the same bytes, with its room): it must not change, nor its room once
// the transaction ends. An empty result leaves an empty file. The engine
// decides itself whether fn changed the document: it compares the encoding
// after fn with the encoding of the document as decoded, so Encode need not
// reproduce the file's formatting, and it undoes a failed fn by decoding
// what Encode returned before it. A codec that keeps what its documents do
// not hold is a [Rewriter]. A Codec shared by stores or goroutines must be
// safe for concurrent use.
type Codec[D any] interface {
	Decode(data []byte) (D, error)
	Encode(doc D) ([]byte, error)
}

// A Rewriter is a Codec whose files hold more than its documents do (keys
// that the document's type has no field for, comments): the engine calls
// Rewrite instead of Encode, with the bytes the document was decoded from.
type Rewriter[D any] interface {
	Codec[D]
	// Rewrite is Encode for doc, decoded from read (nil for a missing file).
	Rewrite(doc D, read []byte) ([]byte, error)
}

// Digest is the SHA-256 of a file's bytes.
type Digest [sha256.Size]byte

// Commit reports the outcome of a transaction.
type Commit struct {
	// Written reports whether this call published new bytes (or, for
	// Restore, removed the file). For a Mutate that shared its write with
	// others (see Store.Mutate), the bytes include their changes too.
	Written bool

	published []byte // the bytes published when Written (nil for a removal)
	shared    bool   // the write published other callers' changes too
}

// Digest returns the SHA-256 of the bytes this call published, and true; or
// false when the call owns no bytes: it published nothing (even if it read
// the file), or its write also carried another caller's change (group
// commit), which a Restore over it would erase; a Mutate alone in changing
// its batch's document owns what it published. If the file still has this
// digest later, nobody has written since, and [Store.Restore] may put a
// snapshot back over it. A removal's digest is that of a missing (or empty)
// file. Each call hashes the bytes anew, a cost in proportion to their size.
func (c Commit) Digest() (Digest, bool) {
	if !c.Written || c.shared {
		return Digest{}, false
	}
	return sha256.Sum256(c.published), true
}

// filePerm is the mode, before the umask, of a file a store creates: 0644, as
// os.WriteFile is usually called. An existing file keeps its own mode.
const filePerm = 0o644

// A Store is a data file, the codec for its contents and the lock that
// guards it. It holds no data in memory; every call reads the file anew. A
// Store is safe for concurrent use by multiple goroutines.
type Store[D any] struct {
	path  string
	codec Codec[D]
	o     options
	g     group[D] // the Mutates waiting for the lock (group commit)

	// scratch is a buffer that reads land in before readDoc compares them
	// with last (nil when taken); it is never handed to the codec.
	scratch atomic.Pointer[[]byte]
	// last is what a batch of this store published last, with the room
	// after it (see readDoc); nil before the first.
	last atomic.Pointer[[]byte]
}

// NewStore returns a store for the data file at path, guarded by the lock
// file <path>.lock unless an option places it elsewhere. It does no I/O.
//
// D must be a pointer (or a map) type: fn changes the document in place, and
// a change made to a copy (a struct or an int passed by value, a slice that
// fn appends to) would never reach Encode, so that Mutate would succeed
// without writing. Nor may D be a pointer to a pointer (JSON[*T]'s), whose
// document fn would find nil. NewStore refuses any other D, an empty path,
// a nil codec and invalid options with an error matching
// ErrInvalidArgument.
func NewStore[D any](path string, codec Codec[D], opts ...Option) (*Store[D], error) {
	if path == "" {
		return nil, fmt.Errorf("filetxn: NewStore: empty path: %w", ErrInvalidArgument)
	}
	switch t := reflect.TypeFor[D](); {
	case t.Kind() != reflect.Pointer && t.Kind() != reflect.Map:
		return nil, fmt.Errorf("filetxn: NewStore %s: document type %v is not a pointer, so fn's changes would be lost: use *%v: %w",
			path, t, t, ErrInvalidArgument)
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Pointer:
		return nil, fmt.Errorf("filetxn: NewStore %s: document type %v is a pointer to a pointer, whose target fn would find nil: use %v: %w",
			path, t, t.Elem(), ErrInvalidArgument)
	}
	if codec == nil {
		return nil, fmt.Errorf("filetxn: NewStore %s: nil codec: %w", path, ErrInvalidArgument)
	}
	s := &Store[D]{path: path, codec: codec}
	for _, opt := range opts {
		if opt != nil {
			opt(&s.o)
		}
	}
	if err := s.o.validate(); err != nil {
		return nil, fmt.Errorf("filetxn: NewStore %s: %w", path, err)
	}
	s.o.probeLockOpts = append(slices.Clip(s.o.lockOpts), lock.WithoutCreate())
	return s, nil
}

// LockPath returns the path of the lock file that guards the data file. With
// WithStateRoot it resolves symlinks in the data file's path (see
// lock.SidecarPath); it creates nothing. A store made WithNoLock returns its
// error, in an *fs.PathError naming the data file.
func (s *Store[D]) LockPath() (string, error) {
	switch {
	case s.o.lockErr != nil:
		return "", &fs.PathError{Op: "Lock", Path: s.path, Err: s.o.lockErr}
	case s.o.backend != nil:
		return s.lockName(), nil
	case s.o.lockPath != "":
		return s.o.lockPath, nil
	case s.o.stateRoot != "":
		return lock.SidecarPath(s.o.stateRoot, s.path)
	default:
		return s.path + ".lock", nil
	}
}

// Mutate runs fn once, under the lock, on its caller's goroutine, on the
// document decoded from the file, and replaces the file atomically with what
// fn leaves, unless it encodes as it did when decoded (see Codec): then
// nothing is written and Commit.Written is false. If fn returns an error,
// nothing of its is written and the error is returned unchanged; if fn
// panics, likewise, the lock is released and the panic propagates with its
// value. A nil fn is refused before any I/O (ErrInvalidArgument). Locking
// from inside fn the same file, or a lock that the caller whose batch fn
// runs in holds, returns an error matching lock.ErrReentrant.
//
// Calls made at once on one Store share one write, each fn undone alone if
// it fails, panics or ends its goroutine (see Group commit in the package
// doc); the document is valid only while fn runs. A nil error means
// published durably, unless WithoutSync; if only the directory fsync fails,
// the error says the file was replaced. ctx bounds the wait for the lock
// only, on a backend too: a wait it ends returns an error matching ctx.Err()
// that carries a *lock.BusyError, fn not run; a done ctx still takes a free
// lock, and fails so at once on a busy one. If the lock file is deleted or
// replaced meanwhile, nothing is written and the error matches
// lock.ErrLockLost and names the data file and the lock file.
func (s *Store[D]) Mutate(ctx context.Context, fn func(D) error) (Commit, error) {
	if fn == nil {
		return Commit{}, s.nilFn("Mutate")
	}
	return s.mutate(ctx, fn, false)
}

// nilFn is the error of a call given a nil fn, which it refuses before any
// I/O.
func (s *Store[D]) nilFn(op string) error {
	return fmt.Errorf("filetxn: %s %s: nil fn: %w", op, s.path, ErrInvalidArgument)
}

// MutateProbed is Mutate for a fn that often changes nothing, and must then
// succeed even where the lock cannot be had (a read-only state root, a
// replayed command). It tries the lock without waiting; if it gets it, it is
// Mutate. If the lock is busy or cannot be taken, or its file does not exist
// yet, fn first runs on a snapshot read without the lock (a probe): if the
// document then encodes as decoded, MutateProbed returns at once with
// Commit.Written false; on any other outcome, an error included, it waits for
// the lock as Mutate does and decides again, under it, on fresh data. A call
// queued behind another call of the Store runs in its batch without a probe,
// unless that call finds the lock busy or not to be had: then it probes first.
//
// So a fn that changes nothing never waits for another holder, needs no lock
// file that exists, can be created or locked, and creates nothing (no lock
// file, no directory); on a free lock whose file exists it costs what a Mutate
// that writes nothing costs. fn may run more than once (on probes, then once
// under the lock), so it must be a pure decision on the document: no side
// effects beyond changing it, results kept from its last run. A nil fn is
// refused as by Mutate. ctx bounds only the wait for the lock: a probe runs
// whatever ctx's state, and a call whose ctx ends while it is queued probes
// before it gives up, succeeding if fn changes nothing.
func (s *Store[D]) MutateProbed(ctx context.Context, fn func(D) error) (Commit, error) {
	if fn == nil {
		return Commit{}, s.nilFn("MutateProbed")
	}
	return s.mutate(ctx, fn, true)
}

// probe runs fn on a lock-free read and reports whether it left the
// document unchanged (see Codec). Any failure reports false: the caller
// then decides under the lock.
func (s *Store[D]) probe(fn func(D) error) bool {
	data, err := s.readDoc("Read", false)
	if err != nil {
		return false
	}
	doc, before, err := s.decode(data)
	if err != nil || fn(doc) != nil {
		return false
	}
	after, err := s.encode(doc, data)
	return err == nil && bytes.Equal(after, before)
}

// View reads and decodes the file without taking the lock. The file is only
// ever replaced by rename, so View sees one whole version, although it may be
// replaced right after. It does not block, even on a named pipe at the path:
// anything but a regular file is refused with an error wrapping
// atomicfile.ErrNotRegular. Since it never waits, a done ctx does not stop
// it.
func (s *Store[D]) View(ctx context.Context) (D, error) {
	var zero D
	read := s.readDoc
	if s.o.backend != nil {
		read = func(string, bool) ([]byte, error) { return s.remoteGet(ctx) }
	}
	data, err := read("Read", false)
	if err != nil {
		return zero, err
	}
	return s.decodeOnly(data)
}

// Restore puts snapshot back as the file's contents, under the lock, but only
// if the current bytes are a version the caller owns: their digest is among
// owned (the Commit.Digest of the caller's own writes). If the file already
// holds snapshot, nothing is written. Otherwise someone else has written
// since, and Restore writes nothing and returns an error matching
// ErrDiverged, so that a rival's concurrent change is never erased.
//
// A nil snapshot stands for a missing file: restoring it removes the file
// and fsyncs its directory (unless WithoutSync), so that the removal is as
// durable as a write. When the data path is a symbolic link, the file
// removed is the one it names, which a write replaces, and the link is
// kept. The Commit's digest is then that of a missing file. If only the
// directory fsync fails, the file is gone: the Commit reports the removal,
// as Tx.Write reports a write in that case, and the error says that the
// directory was not synced.
// Locking, ctx and a lost lock behave as in Mutate: a lost lock writes and
// removes nothing.
func (s *Store[D]) Restore(ctx context.Context, snapshot []byte, owned ...Digest) (Commit, error) {
	var c Commit
	err := s.locked(ctx, func(tx *Tx) error {
		cur, err := tx.read(s.path, "Restore")
		if err != nil {
			return err
		}
		if bytes.Equal(cur, snapshot) && (cur == nil) == (snapshot == nil) {
			return nil
		}
		if !slices.Contains(owned, Digest(sha256.Sum256(cur))) {
			return &fs.PathError{Op: "Restore", Path: s.path, Err: ErrDiverged}
		}
		if snapshot == nil {
			removed, err := tx.remove(s.path, "Restore")
			c.Written = removed // also when only the directory fsync failed, as Write reports it
			return err
		}
		c, err = tx.Write(s.path, bytes.Clone(snapshot))
		return err
	})
	return c, err
}

// Locked runs fn with the store's lock held, for work that spans more than
// one file under one acquisition (for example: write an archive, then the
// data file). fn reads and writes through tx; tx is valid only during fn,
// and a Tx method called after fn has returned panics. fn's error is
// returned unchanged. Locking, re-entry, ctx, panics and a nil fn behave as in Mutate,
// but Locked never shares a write: fn runs alone, on the caller's goroutine,
// under an acquisition of its own.
//
// Every Tx.Write and Tx.Append checks, just before it publishes (for Write:
// after the temporary file's fsync, right before the rename), that the
// lock file is still the one locked; once a check finds the lock lost, that
// write and every later one of the transaction publish nothing and return an
// error matching lock.ErrLockLost. So a lock lost before the first write of
// fn writes none of its files; one lost between two writes leaves the first
// published and refuses the rest, as a crash there would (MutateAll
// publishes several files all or nothing).
func (s *Store[D]) Locked(ctx context.Context, fn func(tx *Tx) error) error {
	if fn == nil {
		return s.nilFn("Locked")
	}
	return s.locked(ctx, fn)
}

func (s *Store[D]) locked(ctx context.Context, fn func(tx *Tx) error) error {
	if s.o.backend != nil {
		return s.remoteLocked(ctx, fn)
	}
	h, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	return s.holding(h, fn)
}

// acquire takes the store's lock: waiting for it, bounded by ctx, or, for a
// store made WithNoWait, not.
func (s *Store[D]) acquire(ctx context.Context) (*lock.Handle, error) {
	lockPath, err := s.LockPath()
	if err != nil {
		return nil, err
	}
	var h *lock.Handle
	if s.o.noWait {
		h, err = lock.TryAcquire(lockPath, s.o.lockOpts...)
	} else {
		h, err = lock.Acquire(ctx, lockPath, s.o.lockOpts...)
	}
	if err != nil {
		return nil, err
	}
	return settle(ctx, h, s.o.lockOpts, s.o.noWait)
}

// holding runs fn with h held, and releases h.
func (s *Store[D]) holding(h *lock.Handle, fn func(tx *Tx) error) error {
	defer h.Release()
	tx := &Tx{o: &s.o, lock: h}
	defer tx.done.Store(true)
	return fn(tx)
}

// A Tx is the view of the files that a Locked callback gets: reads and
// atomic writes made while the store's lock is held. It is valid only until
// the callback returns, and is meant for the goroutine that runs it.
type Tx struct {
	o    *options
	lock *lock.Handle
	done atomic.Bool    // the callback has returned: every method panics
	lost error          // the lock was found lost: every later write fails with this
	pub  fsys.Published // what the last write's rename left to do (see write)
	// remote is the backend's lock and requests, for a store on a backend
	// (lock is then nil).
	remote *remoteTx
}

// Lock returns the held lock, for example to hand it over to a child process
// with (*lock.Handle).HandOver; nil for a store on a backend.
func (tx *Tx) Lock() *lock.Handle {
	tx.live("Lock")
	return tx.lock
}

// Read returns the bytes of the file at path, in a new slice, or nil when it
// does not exist. Like View it does not block and refuses anything but a
// regular file.
func (tx *Tx) Read(path string) ([]byte, error) { return tx.read(path, "Read") }

// Write replaces the file at path with data atomically, durably unless the
// store was made WithoutSync or opts say otherwise (atomicfile.WithoutDirSync
// for a write that a power loss may undo but never tear, such as a marker
// that a long step is running), and reports it in a Commit whose Digest
// hashes data: data must not change while the Commit is in use. It writes
// and fsyncs a temporary file, and then, right before the rename, checks
// that the lock is still held on the file at the lock's path; if not, it
// removes its temporary file, publishes nothing and returns an error
// matching lock.ErrLockLost (see Store.Locked). The directory fsync follows
// the rename, so the write is durable when Write returns; if only that fsync
// fails, the file has been replaced: the Commit reports the write, and the
// error says that the directory was not synced.
func (tx *Tx) Write(path string, data []byte, opts ...atomicfile.Option) (Commit, error) {
	tx.live("Write")
	if tx.remote != nil {
		if err := tx.remote.commit(path, "Write", data, false); err != nil {
			return Commit{}, err
		}
		return Commit{Written: true, published: data}, nil
	}
	c, syncDir, err := tx.write(path, data, opts)
	if err == nil && syncDir != nil {
		err = notSynced(path, syncDir())
	}
	return c, err
}

// write is Write up to the rename (and the removal, under the lock, of what
// a dead writer under this lock left for path): it returns the directory
// fsync still to make for the rename to be durable (nil when there is
// none), which Write makes at once and a grouped Mutate makes after
// releasing the lock.
func (tx *Tx) write(path string, data []byte, opts []atomicfile.Option) (Commit, func() error, error) {
	// The engine stages the write itself (see package fsys) for the
	// three steps it adds to atomicfile.WriteFile's: a temporary file named
	// for path and this lock, so that a dead writer's is found by its name
	// and removed after the rename, with no read of the directory (see
	// docs/design.md, "Temporary files"); the lock check between the fsync
	// and the rename; and the directory fsync left to the caller.
	o := fsys.Collect(tx.o.writeOptions(opts))
	if key, ok := fsys.Key(tx.lock.Path()); ok {
		o.LockKey = key // else the lock file is gone: the check will publish nothing
	}
	o.Check = func() error { return tx.checkLock(path, "Write") }
	o.Published = &tx.pub
	pf, err := fsys.Create("Write", path, filePerm, o)
	if err != nil {
		return Commit{}, nil, err
	}
	defer pf.Cleanup()
	if _, err := pf.Write(data); err != nil {
		return Commit{}, nil, err
	}
	_ = seam.At(seam.TempWritten, path)
	// The check comes after the temporary file's fsync, right before the
	// rename: a lock lost during the rename itself goes unnoticed. No check
	// can close that window: only a lock file that nobody deletes can.
	if err := pf.CloseAtomicallyReplace(); err != nil {
		return Commit{}, nil, err // the temporary file is gone
	}
	_ = seam.At(seam.Replaced, path)
	return Commit{Written: true, published: data}, tx.pub.SyncDir, nil
}

// notSynced is the error of a write of path whose rename happened but whose
// directory fsync failed with err (nil for none): the new bytes are in
// place, but a crash may still undo them.
func notSynced(path string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: "Write", Path: path, Err: fmt.Errorf("replaced, but the directory was not synced: %w", underlying(err))}
}

// Append appends data to the file at path (created with the store's
// permissions, 0644 under the umask, if missing) in a single write(2) on a
// descriptor opened with O_APPEND, and fsyncs it unless the store was made
// WithoutSync or opts include atomicfile.WithoutSync; a file it creates
// has its directory fsynced too, after the file (unless opts include
// atomicfile.WithoutDirSync), so that a power loss cannot take the new log
// away with its first record (if only that fsync fails, the record is in
// the log and the error says the directory was not synced). It is for
// append-only logs kept beside the data, such as a tick log; a crash can
// leave a partial last line, which readers of such logs must skip. Like
// Write it appends nothing, and returns an error matching lock.ErrLockLost,
// when the lock is found lost.
func (tx *Tx) Append(path string, data []byte, opts ...atomicfile.Option) error {
	tx.live("Append")
	if tx.remote != nil {
		return &fs.PathError{Op: "Append", Path: path, Err: fmt.Errorf("not on a backend: %w", errors.ErrUnsupported)}
	}
	if err := tx.checkLock(path, "Append"); err != nil {
		return err
	}
	return fsys.Append("AppendFile", path, data, filePerm, fsys.Collect(tx.o.writeOptions(opts)))
}

// live panics if the callback that got tx has returned: a Tx kept beyond it
// (a goroutine started by fn, a closure called later) would write without
// the lock.
func (tx *Tx) live(method string) {
	if tx.done.Load() {
		panic("filetxn: Tx." + method + " called after its Locked callback returned")
	}
}

func (tx *Tx) read(path, op string) ([]byte, error) {
	tx.live(op)
	if tx.remote != nil {
		return tx.remote.read(path, op)
	}
	return readState(path, op)
}

// remove removes the file at path and fsyncs its directory (unless the
// store is WithoutSync), after checking the lock as Write does. When path is
// a symbolic link, the file removed is the one it names, the one a write of
// path replaces, and the link is kept, as a write keeps it. removed reports
// that a file was removed, also when only the directory fsync then failed.
func (tx *Tx) remove(path, op string) (removed bool, err error) {
	tx.live(op)
	if tx.remote != nil {
		// Restore, the only caller, has read the document under this
		// lock and found it there: the fenced commit removes that version.
		if err := tx.remote.commit(path, op, nil, true); err != nil {
			return false, err
		}
		return true, nil
	}
	if err := tx.checkLock(path, op); err != nil {
		return false, err
	}
	target, dir, err := fsys.Target(path)
	if err != nil {
		return false, &fs.PathError{Op: op, Path: path, Err: err}
	}
	if err := os.Remove(target); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, &fs.PathError{Op: op, Path: path, Err: underlying(err)}
	}
	if tx.o.noSync {
		return true, nil
	}
	if err := fsys.SyncDir(dir); err != nil {
		return true, &fs.PathError{Op: op, Path: path, Err: fmt.Errorf("removed, but the directory was not synced: %w", underlying(err))}
	}
	return true, nil
}

// readState reads the file at path into a new slice, with room after it
// (readRoom), which the caller may keep: nil for a missing file, a non-nil
// empty slice for an empty one.
func readState(path, op string) ([]byte, error) {
	return fsys.ReadState(path, op, nil, readRoom)
}

// readRoom is the capacity that a read leaves after the bytes of a file
// (less one byte, which lets the read see the file's end), so that a codec
// that appends to what it decoded (a log, a ledger) grows it in place.
const readRoom = 4<<10 + 1

// checkLock returns nil if the lock file at the lock's path is still the one
// whose lock tx holds, and otherwise the error with which a write of path
// (by op) publishes nothing: it matches lock.ErrLockLost and names path and
// the lock file. The first such error is kept, and every later check of the
// transaction returns it, so a lock lost once stays lost even if the path
// comes to name the locked file again. A check that cannot tell (the lock
// file cannot be examined) fails too: publishing is safe only when the lock
// is known to be current.
func (tx *Tx) checkLock(path, op string) error {
	_ = seam.At(seam.Check, path)
	if tx.lost != nil {
		return &fs.PathError{Op: op, Path: path, Err: tx.lost}
	}
	ok, err := tx.lock.Current()
	switch {
	case err != nil:
		tx.lost = fmt.Errorf("checking lock file %s: %w", tx.lock.Path(), err)
	case !ok:
		tx.lost = fmt.Errorf("lock file %s deleted or replaced while held: %w", tx.lock.Path(), lock.ErrLockLost)
	default:
		return nil
	}
	return &fs.PathError{Op: op, Path: path, Err: tx.lost}
}

func underlying(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

package lock

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/filetxn/filetxn/internal/fsys"
	"github.com/filetxn/filetxn/internal/proc"
	"github.com/filetxn/filetxn/internal/seam"
)

// fileID is a lock file's identity: device and inode on Unix, volume serial
// number and file index on Windows. Two spellings of one file have one
// identity, which is what the in-process gate is keyed by.
type fileID struct {
	dev, ino uint64
	name     string // only where the OS offers no identity (no locking there)
}

type osState int

const (
	osFree    osState = iota // no OS-level lock; nobody is acquiring one
	osPending                // one goroutine is acquiring it (or a cancelled wait is still in the kernel)
	osHeld                   // held by this process (or borrowed from the parent)
)

// An entry is the process's view of one lock file: one open descriptor and
// the in-process gate in front of it.
//
// One descriptor per file and process matters: flock locks belong to an open
// file description, so two descriptions of the same file in one process
// contend like two processes, and the table makes sure goroutines queue on the
// gate instead.
type entry struct {
	id fileID
	f  *os.File // never changes; closed only when the entry is evicted

	// The fields below are protected by table.mu.
	refs       int           // handles held plus acquisitions in progress
	state      osState       // the OS-level lock
	owners     map[int64]int // goroutine id -> handles it holds
	borrowed   bool          // the OS-level lock is the parent's (HandOver)
	inherited  int           // when borrowed: the inherited descriptor
	proof      string        // when borrowed: "pid:nonce" of the hand-over, to hand on
	handedOver bool          // f was given to a child process by HandOver
	retired    bool          // no longer in the table; closed when refs reach 0
	wake       chan struct{} // made by the first waiter, closed at the next state change
	idle       bool          // refs == 0 and the entry is cached, in table's idle list
	prev, next *entry        // neighbours in table's idle list, while idle
	paths      []string      // keys of table.paths that may name e (see acquireCached)

	// fsErr, set before e enters the table and never changed, refuses e's
	// file system unless the caller allows any (see fsRefusal).
	fsErr error
}

// maxPaths bounds how many spellings of one lock file table.paths remembers.
const maxPaths = 4

// table is the per-process lock table, the one piece of global state of this
// package. It maps lock file identities to entries and keeps up to maxIdle
// unused entries (with their descriptors open) so that re-acquiring a lock is
// cheap.
//
// paths remembers which entry a path named when it was last looked up, so
// that acquireCached can lock without a stat first; it is a hint, checked
// after locking like every grant, and an entry's paths leave it when the
// entry leaves the table.
var table = struct {
	mu      sync.Mutex // protects entries, paths, idle, and every entry's mutable fields
	entries map[fileID]*entry
	paths   map[string]*entry
	// The idle entries, a doubly linked list through entry.prev and next,
	// least recently used first (linked through the entries themselves so
	// that a release allocates nothing).
	oldest, newest *entry
	idle           int
}{entries: make(map[fileID]*entry), paths: make(map[string]*entry)}

// broadcast wakes every goroutine waiting on e's gate. table.mu must be held.
// With nobody waiting there is no channel, and nothing to allocate.
func (e *entry) broadcast() {
	if e.wake != nil {
		close(e.wake)
		e.wake = nil
	}
}

// gate returns the channel that the next broadcast closes. table.mu must be
// held.
func (e *entry) gate() <-chan struct{} {
	if e.wake == nil {
		e.wake = make(chan struct{})
	}
	return e.wake
}

// ref and unref count users of e. table.mu must be held.
func (e *entry) ref() {
	if e.idle {
		e.unlinkIdle()
	}
	e.refs++
}

// unref drops a reference to e. It returns the descriptor of an entry that
// nobody uses any more and that is no longer cached (e itself once retired,
// or the least recently used idle entry), or nil: the caller closes it after
// unlocking table.mu (see unlock), because a close is I/O and can stall, and
// nothing is done under table.mu that could stall every lock of the process.
func (e *entry) unref() *os.File {
	e.refs--
	if e.refs > 0 || e.state != osFree {
		return nil
	}
	if e.retired {
		return e.f
	}
	e.linkIdle()
	if table.idle <= maxIdle {
		return nil
	}
	// One push makes at most one entry too many.
	old := table.oldest
	old.unlinkIdle()
	delete(table.entries, old.id)
	old.forgetPaths()
	return old.f
}

// linkIdle appends e to the idle list as its newest entry. table.mu must be
// held.
func (e *entry) linkIdle() {
	e.idle, e.prev, e.next = true, table.newest, nil
	if table.newest != nil {
		table.newest.next = e
	} else {
		table.oldest = e
	}
	table.newest = e
	table.idle++
}

// unlinkIdle takes e out of the idle list. table.mu must be held.
func (e *entry) unlinkIdle() {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		table.oldest = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		table.newest = e.prev
	}
	e.idle, e.prev, e.next = false, nil, nil
	table.idle--
}

// rememberPath records that path named e's file when it was looked up.
// table.mu must be held.
//
// A relative path is remembered too, although it names another file once
// the working directory changes: the re-check after the grant catches that,
// and the path is forgotten, at the price of locking the file it named
// before for the moment of one stat (a TryAcquire of that file by another
// process at that moment says busy). Checking the working directory first
// would cost a system call on every acquisition of a relative path, for the
// benefit of programs that change directory between two uses of one
// relative lock path.
func (e *entry) rememberPath(path string) {
	if table.paths[path] == e || len(e.paths) >= maxPaths {
		return
	}
	table.paths[path] = e
	e.paths = append(e.paths, path)
}

// forgetPaths drops the table's paths that name e. table.mu must be held.
func (e *entry) forgetPaths() {
	for _, p := range e.paths {
		if table.paths[p] == e {
			delete(table.paths, p)
		}
	}
	e.paths = nil
}

// retire takes e out of the table, so that the next lookup opens a fresh
// descriptor; e's own descriptor is closed when its last user lets go.
// table.mu must be held.
func (e *entry) retire() {
	e.retired = true
	if table.entries[e.id] == e {
		delete(table.entries, e.id)
	}
	e.forgetPaths()
}

// unlock unlocks table.mu, then closes f (from unref) if it is not nil.
func unlock(f *os.File) {
	table.mu.Unlock()
	if f != nil {
		f.Close()
	}
}

// lookup returns the entry for the lock file at path, creating the file (and
// its directories) when it does not exist unless o.NoCreate, with a
// reference taken. It refuses a file on a file system where flock may not
// exclude other hosts unless o.AnyFS; the file system is looked at once, when
// the descriptor is opened.
func lookup(path string, o *options) (*entry, error) {
	id, err := idOfPath(path)
	if err == nil {
		table.mu.Lock()
		if e := table.entries[id]; e != nil {
			return found(e, path, o, nil)
		}
		table.mu.Unlock()
	} else if !errors.Is(err, fs.ErrNotExist) || o.NoCreate {
		return nil, pathError("Acquire", path, underlying(err))
	}
	f, err := openLockFile(path, o.NoCreate)
	if err != nil {
		return nil, pathError("Acquire", path, underlying(err))
	}
	if id, err = idOfFile(f); err != nil {
		f.Close()
		return nil, pathError("Acquire", path, underlying(err))
	}
	fsErr := fsRefusal(f)
	if fsErr != nil && !o.AnyFS {
		f.Close()
		return nil, pathError("Acquire", path, fsErr)
	}
	table.mu.Lock()
	if e := table.entries[id]; e != nil {
		return found(e, path, o, f) // another goroutine opened it first
	}
	e := &entry{id: id, f: f, owners: make(map[int64]int), inherited: -1, fsErr: fsErr}
	table.entries[id] = e
	return found(e, path, o, nil)
}

// lookupAs is lookup, which it is with a nil want, refusing with
// errReordered, and no reference kept, an entry whose identity is not *want.
func lookupAs(path string, want *fileID, o *options) (*entry, error) {
	e, err := lookup(path, o)
	if err != nil || want == nil || e.id == *want {
		return e, err
	}
	table.mu.Lock()
	unlock(e.unref())
	return nil, errReordered
}

// found ends a lookup that found e, or made it, with table.mu held: it
// refuses e's file system unless o allows it, and otherwise takes a
// reference to e and remembers path. It unlocks table.mu, then closes f (a
// descriptor the lookup does not need) if it is not nil.
func found(e *entry, path string, o *options, f *os.File) (*entry, error) {
	if e.fsErr != nil && !o.AnyFS {
		unlock(f)
		return nil, pathError("Acquire", path, e.fsErr)
	}
	e.ref()
	e.rememberPath(path)
	unlock(f)
	return e, nil
}

// openLockFile opens the lock file read-write, creating it and its
// directories if needed unless noCreate. Lock files are 0600 and their
// directories 0700, both under the umask. Anything but a regular file at
// path (a named pipe, a directory, a socket, a device) is refused with an
// error wrapping atomicfile.ErrNotRegular, without waiting and before
// anything is locked or written (see fsys.OpenRegular): a device would
// get the holder record written into it.
func openLockFile(path string, noCreate bool) (*os.File, error) {
	if noCreate {
		f, _, err := fsys.OpenRegular(path, os.O_RDWR, 0)
		return f, err
	}
	f, _, err := fsys.OpenRegular(path, os.O_RDWR|os.O_CREATE, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if err := seam.At(seam.Mkdir, filepath.Dir(path)); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
		f, _, err = fsys.OpenRegular(path, os.O_RDWR|os.O_CREATE, 0o600)
	}
	return f, err
}

// underlying strips a *fs.PathError so that the caller can wrap the errno
// in its own, with its own Op and the path the user gave.
func underlying(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// notSupported wraps an errno that says the file system cannot lock, so
// that errors.Is matches both ErrNotSupported and the errno.
type notSupported struct{ err error }

func (e notSupported) Error() string        { return "locking not supported: " + e.err.Error() }
func (e notSupported) Unwrap() []error      { return []error{ErrNotSupported, e.err} }
func (e notSupported) Is(target error) bool { return target == ErrNotSupported }

func acquire(ctx context.Context, path string, block bool, opts []Option) (*Handle, error) {
	return acquireAs(ctx, path, nil, block, opts)
}

// errReordered is returned by acquireAs when the lock file at the path is
// not the file want names: AcquireAll then starts again in the new order.
var errReordered = errors.New("lock: lock file replaced since its order was fixed")

// acquireAs is acquire, which it is with a nil want. With want, it locks
// only the file whose identity is *want: before it waits for a lock, or
// takes one, on the file at path (looked up at the start and again after
// every grant on a file that has left the path), it checks that file's
// identity, and on a mismatch it returns errReordered, holding nothing and
// having waited for nothing of that file. AcquireAll needs it to keep its
// order: a wait for another file than the one it ordered, while it holds the
// locks that come before in the order, could deadlock.
func acquireAs(ctx context.Context, path string, want *fileID, block bool, opts []Option) (*Handle, error) {
	o := collect(opts)
	me := proc.ID()
	if err := seam.At(seam.Lock, path); err != nil {
		return nil, pathError("Acquire", path, err)
	}
	var clock waitClock
	defer clock.stop()
	if h, err, done := acquireCached(ctx, path, me, want, &o, block, &clock); done {
		return h, err
	}
	e, err := lookupAs(path, want, &o)
	if err != nil {
		return nil, err
	}
	_ = seam.At(seam.Opened, path)
	for {
		table.mu.Lock()
		if e.retired {
			// The descriptor was handed to a child, or the file is no
			// longer at the path: start over on the file there now.
			unlock(e.unref())
			if e, err = lookupAs(path, want, &o); err != nil {
				return nil, err
			}
			continue
		}
		if e.heldBy(me) {
			unlock(e.unref())
			return nil, pathError("Acquire", path, ErrReentrant)
		}
		switch {
		case e.state == osFree:
			e.state = osPending
			table.mu.Unlock()
			h, moved, err := lockOS(ctx, e, path, me, &o, block, &clock, nil)
			if !moved {
				return h, err
			}
			// lockOS let go of a file no longer at the path and retired e.
			if e, err = lookupAs(path, want, &o); err != nil {
				return nil, err
			}
			continue
		}
		if !block || ctx.Err() != nil {
			// Busy in this process, and no wait (TryAcquire, or a done
			// ctx, which never waits: see Acquire). The record is read
			// outside table.mu, e's reference keeping e.f open.
			why := ErrWouldBlock
			if block {
				why = ctx.Err()
			}
			table.mu.Unlock()
			err := busy(path, e.f, clock.waited(), why)
			table.mu.Lock()
			unlock(e.unref())
			return nil, err
		}
		wake := e.gate()
		table.mu.Unlock()
		clock.begin(path, &o)
		select {
		case <-wake:
		case <-ctx.Done():
			err := busy(path, e.f, clock.waited(), ctx.Err())
			table.mu.Lock()
			unlock(e.unref())
			return nil, err
		}
	}
}

// heldBy reports whether goroutine me holds e, itself or as a goroutine it
// acts for (see proc.Loan). table.mu must be held.
func (e *entry) heldBy(me int64) bool {
	return proc.Any(me, func(g int64) bool { return e.owners[g] > 0 })
}

// heldAt reports whether goroutine me holds the lock on the file at path (see
// Held), from the table alone: it takes nothing, so that it never makes the
// lock look busy to another acquirer, and it asks the kernel for no lock.
// The path's hint answers when me holds the entry it names, and a goroutine
// that holds no entry at all holds nothing; only a goroutine that holds
// some lock not reached through path costs a stat, to learn whether path
// names one of its files by another spelling. A path whose file is missing
// or cannot be looked at is not held.
func heldAt(path string, me int64) bool {
	table.mu.Lock()
	if e := table.paths[path]; e != nil && e.heldBy(me) {
		table.mu.Unlock()
		return true
	}
	holds := false
	for _, e := range table.entries {
		if e.heldBy(me) {
			holds = true
			break
		}
	}
	table.mu.Unlock()
	if !holds {
		return false
	}
	id, err := idOfPath(path)
	if err != nil {
		return false
	}
	table.mu.Lock()
	defer table.mu.Unlock()
	e := table.entries[id]
	return e != nil && e.heldBy(me)
}

// busy builds the error for a lock held by another holder, with the holder
// record read from f, the descriptor of the lock file whose lock is busy,
// which the caller keeps open (one read, where reading it from path would
// be an open, a read and a close), or from path when f is nil.
func busy(path string, f *os.File, waited time.Duration, err error) error {
	var holder *Holder
	if f == nil {
		holder, _ = ReadHolder(path)
	} else if r, _ := readRecord(f); r != nil {
		holder = &r.Holder
	}
	return &BusyError{Path: path, Holder: holder, Waited: waited, Err: err}
}

// movedFrom reports whether path no longer names e's file: the file was
// deleted, or another file was renamed over it or over a directory above it,
// since e was opened. A lock on e then guards nothing, because a newcomer
// locks the file now at the path.
func movedFrom(e *entry, path string) (bool, error) {
	id, err := idOfPath(path)
	if err != nil {
		if gone(err) {
			return true, nil
		}
		return false, pathError("Acquire", path, underlying(err))
	}
	return id != e.id, nil
}

// lockOS takes the OS-level lock for e, whose state the caller has set to
// osPending: no other goroutine of this process touches e's lock meanwhile.
// busyErr is the error of a non-blocking attempt on e.f that the caller
// has just made and that found the lock busy elsewhere (lockOS goes on from
// there), or nil: lockOS makes that attempt first.
//
// Once the lock is granted, lockOS checks that path still names e's file. If
// it does not (the file was deleted or replaced while this goroutine waited,
// or just before it asked), lockOS lets the lock go, retires e so that no
// acquirer queues on it again, and reports moved: the caller starts over on
// the file at the path.
func lockOS(ctx context.Context, e *entry, path string, me int64, o *options, block bool, clock *waitClock, busyErr error) (h *Handle, moved bool, err error) {
	fail := func(err error) (*Handle, bool, error) {
		table.mu.Lock()
		e.state = osFree
		e.broadcast()
		unlock(e.unref())
		return nil, false, err
	}
	if err = busyErr; err == nil {
		err = lockFD(e.f.Fd(), false)
	}
	if err != nil && isWouldBlock(err) {
		_ = seam.At(seam.Inherited, path)
		fd, proof, ok, freed, herr := inherited(e)
		if ok {
			if m, merr := movedFrom(e, path); merr != nil || m {
				// The parent's lock is on a file no longer at the path:
				// borrowing it would guard nothing. The parent's lock is
				// the parent's to let go.
				table.mu.Lock()
				e.state = osFree
				e.retire()
				e.broadcast()
				unlock(e.unref())
				return nil, merr == nil, merr
			}
			table.mu.Lock()
			e.state, e.borrowed, e.inherited, e.proof = osHeld, true, fd, proof
			e.owners[me]++
			table.mu.Unlock()
			return &Handle{path: path, e: e, goid: me, borrowed: true}, false, nil
		}
		if freed {
			// A stale hand-over: the lock was free a moment ago.
			err = lockFD(e.f.Fd(), false)
		} else if herr != nil {
			// Handed over, but not to this process's descriptors:
			// waiting would wait for the parent.
			return fail(pathError("Acquire", path, herr))
		}
	}
	if err != nil && isWouldBlock(err) {
		if !block {
			return fail(busy(path, e.f, 0, ErrWouldBlock))
		}
		if ctx.Err() != nil {
			// A done ctx never waits, and starts no kernel-level wait
			// that would outlive the call (see Acquire).
			return fail(busy(path, e.f, 0, ctx.Err()))
		}
		clock.begin(path, o)
		if ctx.Done() == nil {
			// A context that can never end: wait in the kernel on this
			// goroutine, which saves a goroutine hand-off on every wake.
			err = lockFD(e.f.Fd(), true)
		} else {
			var abandoned bool
			err, abandoned = waitOS(ctx, e)
			if abandoned {
				// e's reference went to the goroutine still waiting,
				// which may close e.f: the record is read from path.
				return nil, false, busy(path, nil, clock.waited(), ctx.Err())
			}
		}
	}
	if err != nil {
		if isNotSupported(err) {
			err = notSupported{err}
		}
		return fail(pathError("Acquire", path, err))
	}
	if m, merr := movedFrom(e, path); merr != nil || m {
		// Granted on a file that is no longer at the path: let it go
		// (outside table.mu; osPending keeps the others off e.f) and
		// start over on the file there now.
		unlockFD(e.f.Fd())
		table.mu.Lock()
		e.state = osFree
		e.retire()
		e.broadcast()
		unlock(e.unref())
		return nil, merr == nil, merr
	}
	return granted(e, path, me, o), false, nil
}

// granted completes an acquisition whose OS-level lock is held and checked
// to be on the file at path: it writes the holder record and makes e held
// by goroutine me.
func granted(e *entry, path string, me int64, o *options) *Handle {
	now := time.Now()
	h := &Handle{path: path, e: e, goid: me, purpose: o.Purpose, acquired: now}
	if !o.NoHolder {
		// The record is diagnostics: a lock file that cannot be written
		// (read-only, disk full) does not fail the acquisition.
		var buf [256]byte // enough for a record without a long purpose
		_, werr := e.f.WriteAt(appendRecord(buf[:0], o.Purpose, now, ""), 0)
		h.holder = werr == nil
	}
	table.mu.Lock()
	e.state, e.borrowed = osHeld, false
	e.owners[me]++
	table.mu.Unlock()
	return h
}

// acquireCached is the acquisition of a lock file whose descriptor the
// table keeps, when path named that entry's file at its last lookup and
// nobody in this process holds or is acquiring it (and, with want, that
// entry's identity is *want: see acquireAs). It asks the kernel for
// the lock at once, without a lookup first, and re-checks the path after
// the answer: if the lock was granted, that re-check is the only stat and
// no file is opened; if it is busy in another process, the re-check stands
// for the lookup, and acquireCached goes on as acquire would after its own
// first attempt (lockOS: a hand-over from the parent, TryAcquire's busy
// answer, or the wait), so that a contended acquisition makes one attempt
// and one stat before it waits, not two of each. It reports done with that
// outcome. In every other case (no such entry, another error, the path
// naming another file now, or a wait that ended on a file no longer at
// the path) it holds nothing, forgets that path if it no longer names the
// entry, and reports not done: acquire then looks the path up and decides
// as if acquireCached had not run, so re-entry, waiting, hand-over and the
// re-check all behave as without it.
func acquireCached(ctx context.Context, path string, me int64, want *fileID, o *options, block bool, clock *waitClock) (h *Handle, err error, done bool) {
	table.mu.Lock()
	e := table.paths[path]
	if e == nil || e.retired || e.state != osFree || (e.fsErr != nil && !o.AnyFS) || (want != nil && e.id != *want) {
		table.mu.Unlock()
		return nil, nil, false
	}
	e.ref()
	e.state = osPending
	table.mu.Unlock()
	_ = seam.At(seam.Opened, path)
	lerr := lockFD(e.f.Fd(), false)
	if lerr != nil && !isWouldBlock(lerr) {
		table.mu.Lock()
		e.state = osFree
		e.broadcast()
		unlock(e.unref())
		return nil, nil, false
	}
	if m, merr := movedFrom(e, path); merr == nil && !m {
		if lerr == nil {
			return granted(e, path, me, o), nil, true
		}
		h, moved, err := lockOS(ctx, e, path, me, o, block, clock, lerr)
		if !moved {
			return h, err, true
		}
		return nil, nil, false // lockOS let go of e and retired it: look the path up anew
	}
	if lerr == nil {
		unlockFD(e.f.Fd())
	}
	table.mu.Lock()
	e.state = osFree
	if table.paths[path] == e {
		delete(table.paths, path)
	}
	e.broadcast()
	unlock(e.unref())
	return nil, nil, false
}

// waitOS waits in the kernel for e's lock. The wait runs in its own goroutine
// because a blocked flock(2) or LockFileEx cannot be cancelled; when ctx ends
// first, waitOS reports abandoned and that goroutine, once the kernel grants
// the lock, releases it at once and frees the gate. The caller's reference to
// e passes to that goroutine. e stays osPending until then, which keeps every
// other goroutine off e.f while the abandoned goroutine unlocks it outside
// table.mu.
func waitOS(ctx context.Context, e *entry) (err error, abandoned bool) {
	done := make(chan error, 1) // sent to under table.mu, so never lost
	var gaveUp bool             // protected by table.mu
	go func() {
		err := lockFD(e.f.Fd(), true)
		table.mu.Lock()
		if !gaveUp {
			done <- err
			table.mu.Unlock()
			return
		}
		table.mu.Unlock()
		if err == nil {
			unlockFD(e.f.Fd())
		}
		table.mu.Lock()
		e.state = osFree
		e.broadcast()
		unlock(e.unref())
	}()
	select {
	case err := <-done:
		return err, false
	case <-ctx.Done():
	}
	table.mu.Lock()
	defer table.mu.Unlock()
	select {
	case err := <-done: // the kernel answered as ctx ended: take its answer
		return err, false
	default:
		gaveUp = true
		return nil, true
	}
}

// release lets h's hold go. The counts change under table.mu; the I/O that
// lets the OS-level lock go (clearing the holder record, the unlock) happens
// outside it, with e osPending so that no other goroutine of this process
// touches e.f meanwhile: a file system that stalls that I/O stalls this lock
// only, never the process's other locks.
func release(h *Handle) error {
	e := h.e
	table.mu.Lock()
	if e.owners[h.goid]--; e.owners[h.goid] <= 0 {
		delete(e.owners, h.goid)
	}
	borrowed := e.borrowed
	e.state = osPending
	table.mu.Unlock()

	var err error
	if !borrowed {
		_ = seam.At(seam.Unlock, h.path)
		if h.holder {
			e.f.WriteAt(clearedRecord, recordOffset)
		}
		if uerr := unlockFD(e.f.Fd()); uerr != nil {
			err = pathError("Release", h.path, uerr)
		}
	}

	table.mu.Lock()
	e.state, e.borrowed, e.inherited, e.proof = osFree, false, -1, ""
	if e.handedOver {
		// A child (or something it started and left running) still has
		// this open file description. Locking it again would let that
		// process pass the hand-over check while we hold the lock, so
		// the description is retired and the next acquisition opens a
		// fresh one.
		e.retire()
	}
	e.broadcast()
	unlock(e.unref())
	return err
}

// waitClock measures a wait and reports it once it passes the threshold.
type waitClock struct {
	start time.Time
	timer *time.Timer
}

func (c *waitClock) begin(path string, o *options) {
	if !c.start.IsZero() {
		return
	}
	start := time.Now()
	c.start = start
	if o.OnWait == nil {
		return
	}
	onWait := o.OnWait
	c.timer = time.AfterFunc(max(o.ReportAfter, 0), func() {
		holder, _ := ReadHolder(path)
		onWait(&BusyError{Path: path, Holder: holder, Waited: time.Since(start), Err: ErrWouldBlock})
	})
}

func (c *waitClock) waited() time.Duration {
	if c.start.IsZero() {
		return 0
	}
	return time.Since(c.start)
}

func (c *waitClock) stop() {
	if c.timer != nil {
		c.timer.Stop()
	}
}

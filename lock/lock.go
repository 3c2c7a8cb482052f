package lock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"

	"github.com/filetxn/filetxn/internal/proc"
)

// An Option configures Acquire and TryAcquire.
type Option func(*options)

// options is the resolved configuration of one Acquire or TryAcquire.
type options struct {
	Purpose     string           // WithPurpose: why the lock is held, for the holder record
	NoHolder    bool             // WithoutHolder: the lock file is not written
	ReportAfter time.Duration    // WithWaitReport: how long a wait lasts before OnWait
	OnWait      func(*BusyError) // WithWaitReport: called once by a long wait
	NoCreate    bool             // WithoutCreate: a missing lock file is an error
	AnyFS       bool             // WithAnyFileSystem: no refusal of the file system
	ForPath     []pathOptions    // ForPath: options of AcquireAll for one of its paths
}

// pathOptions is one ForPath option: opts for the lock file at path.
type pathOptions struct {
	path string
	opts []Option
}

// collect applies opts to the zero options. The options escape to the heap
// (an Option is a function the compiler cannot see into), so only a call
// with options allocates them.
func collect(opts []Option) options {
	if len(opts) == 0 {
		return options{}
	}
	o := new(options)
	for _, opt := range opts {
		opt(o)
	}
	return *o
}

// WithPurpose records why the lock is held (for example "tick ci-triage") in
// the holder record, so that a waiter can say what it waits for. The record
// is bounded (a few kilobytes, JSON-encoded): a purpose too long for it is
// recorded cut, where a character starts, with "…" after it.
func WithPurpose(purpose string) Option { return func(o *options) { o.Purpose = purpose } }

// WithoutHolder skips the holder record: the lock file is not written.
func WithoutHolder() Option { return func(o *options) { o.NoHolder = true } }

// WithoutCreate makes Acquire and TryAcquire fail, with an error matching
// fs.ErrNotExist, when the lock file does not exist, instead of creating it
// and its directories. It suits a lock file that lives in a directory someone
// may delete on purpose (a removed job's state directory): a late acquirer
// then learns that the directory is gone instead of bringing it back. That
// holds for a caller that was already waiting when the file was removed, too:
// the lock it is granted on the removed file guards nothing, so it lets it go
// and fails in the same way.
func WithoutCreate() Option { return func(o *options) { o.NoCreate = true } }

// WithAnyFileSystem lets Acquire and TryAcquire lock a file on a file system
// where flock may not exclude other hosts, which they refuse otherwise (NFS,
// FUSE, SMB, 9p and others: see the package's Caveats): for a mount known to
// lock across hosts (NFSv4 with locking), or where every user of the lock
// runs on one host. Every acquirer of such a lock file passes it, a child
// that borrows the lock through HandOver too.
func WithAnyFileSystem() Option { return func(o *options) { o.AnyFS = true } }

// WithWaitReport calls fn once, from another goroutine, when a wait has lasted
// longer than after, with the *BusyError the wait would return if it gave up
// at that moment: the lock file, the holder record read then (nil when none
// could be read) and how long the caller has waited so far. Its Err is
// ErrWouldBlock, since the wait goes on; the error is fn's to keep. fn must
// not block for long. It is how a program reports a wait, to a person or to
// its *slog.Logger, for example:
//
//	lock.WithWaitReport(time.Second, func(e *lock.BusyError) {
//		logger.Info("waiting for lock", "path", e.Path, "holder", e.Holder.String(), "waited", e.Waited)
//	})
func WithWaitReport(after time.Duration, fn func(*BusyError)) Option {
	return func(o *options) { o.ReportAfter, o.OnWait = after, fn }
}

// BusyError is returned when a lock could not be taken because another holder
// has it: by TryAcquire at once, and by Acquire when ctx ends the wait or was
// already done (then at once, with Waited zero). It
// unwraps to ErrWouldBlock (TryAcquire) or to ctx.Err() (Acquire), so
// errors.Is(err, context.DeadlineExceeded) holds for a timed-out wait.
// WithWaitReport reports a long wait with one, whose Err is ErrWouldBlock.
type BusyError struct {
	Path   string        // the lock file
	Holder *Holder       // the holder record at the time, or nil
	Waited time.Duration // zero for TryAcquire
	Err    error         // ErrWouldBlock, context.Canceled or context.DeadlineExceeded
}

func (e *BusyError) Error() string {
	s := "lock " + e.Path + ": busy"
	if e.Holder != nil {
		s += ", held by " + e.Holder.String()
	}
	if e.Waited > 0 {
		s += fmt.Sprintf(", waited %s", e.Waited.Round(time.Millisecond))
	}
	if e.Err == nil {
		return s
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns e.Err.
func (e *BusyError) Unwrap() error { return e.Err }

// A Handle is a held lock. Release it exactly once when done; further calls
// do nothing. A Handle may be released from any goroutine.
//
// A lock file can be deleted, or another file renamed over it, while its lock
// is held (a cleaner of the state directory, a reset by hand). The lock then
// guards nothing: a newcomer locks the file now at the path and gets in.
// Acquire re-checks after locking, so a new holder always holds the file at
// the path, but only the old holder can notice that it lost the path: every
// writer must call Current after its last change is staged and before it
// publishes (renames, appends, or otherwise makes it visible), and on false
// publish nothing and return an error matching ErrLockLost that names the
// lock file, for example
//
//	&fs.PathError{Op: "Publish", Path: h.Path(), Err: lock.ErrLockLost}
type Handle struct {
	path     string
	e        *entry
	goid     int64 // the goroutine that acquired it: re-entry is judged by it
	borrowed bool  // handed over by the parent process: Release does not unlock
	holder   bool  // a holder record was written and must be cleared
	purpose  string
	acquired time.Time

	mu       sync.Mutex // protects released, dup, holder and nonce
	released bool
	dup      *handoverFile // descriptor given to children by HandOver, if any
	//lint:ignore U1000 HandOver, which sets and reads it, exists on Unix only.
	nonce string // the proof HandOver wrote into the holder record, if any

	// letGo is set by the first Release before it lets the lock go, and
	// read by Current without mu, which a stalled release may hold.
	letGo atomic.Bool
}

// Path returns the lock file's path as given to Acquire.
func (h *Handle) Path() string { return h.path }

// Borrowed reports whether the handle was handed over by the parent process
// (see HandOver): such a handle's Release leaves the parent's lock held.
func (h *Handle) Borrowed() bool { return h.borrowed }

// Current reports whether the lock file at the handle's path is still the
// file whose lock is held (same device and inode). It is false when the lock
// file, or a directory above it, has been deleted, renamed, or replaced by
// another file since Acquire: another process may then hold a lock on the
// file now at the path, and a holder that goes on writing may overwrite its
// work. It is false, too, once Release has been called, by any goroutine:
// the lock is no longer held, whatever file is at the path. A writer checks
// it right before it publishes (see Handle). A non-nil error (the path could
// not be examined, for example for lack of permission) comes with false and
// is as good a reason not to publish.
//
// Current does not block and costs one stat of the path (on Windows an open,
// a query and a close); it does not read or write the lock file. It answers
// for the moment of the call: only the writer's own discipline (check, then
// publish at once) keeps the window small, since the lock file can be
// replaced right after.
func (h *Handle) Current() (bool, error) {
	if h.letGo.Load() {
		return false, nil
	}
	id, err := idOfPath(h.path)
	if err != nil {
		if gone(err) {
			return false, nil
		}
		return false, pathError("Current", h.path, underlying(err))
	}
	return id == h.e.id, nil
}

// gone reports whether err says that nothing is at the path: the file or a
// directory on the way was removed (ENOENT), or a directory on the way was
// replaced by a file (ENOTDIR).
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir)
}

// Release releases the lock. It is idempotent and safe for concurrent use: the
// first call releases, later calls return nil. For a borrowed handle it ends
// the borrowing without unlocking the parent's lock. An error means the
// unlock system call failed; the lock is released anyway when the process
// exits.
func (h *Handle) Release() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return nil
	}
	h.released = true
	h.letGo.Store(true)
	if h.dup != nil {
		h.dup.close()
		h.dup = nil
	}
	return release(h)
}

// Acquire blocks until it holds the lock on the file at path, or until ctx is
// done. The file and its parent directories are created if missing (0600 and
// 0700, under the umask), unless WithoutCreate is given, and are never
// deleted. A path that names anything but a regular file is refused at once,
// nothing locked or written, by an *fs.PathError naming it and wrapping
// atomicfile.ErrNotRegular. The wait costs no CPU and ends as soon as the
// lock is released. Acquire returns holding the file that path names then: if
// the file it locked was deleted or replaced meanwhile, it lets it go and
// locks the one now at the path (a stat per acquisition, one more on a busy
// lock or a path's first use). Goroutines of one process that ask for one
// file, by any spelling, queue in the process; one that holds it already gets
// ErrReentrant at once.
//
// ctx bounds waiting and nothing else. A done ctx never makes Acquire wait nor
// leaves a goroutine behind: a free lock is taken, a held one gives at once a
// *BusyError that unwraps to ctx.Err(), as does a wait that ctx ends. After
// such a wait the process may keep one kernel-level wait for the file until
// the holder releases, then lets go at once: it never holds the lock for a
// caller that gave up. In a child to which HandOver lent this lock, while the
// parent holds it, Acquire returns a borrowed handle at once.
func Acquire(ctx context.Context, path string, opts ...Option) (*Handle, error) {
	return acquire(ctx, path, true, opts)
}

// TryAcquire takes the lock on the file at path if nobody else holds it, and
// otherwise returns at once a *BusyError that unwraps to ErrWouldBlock. It
// never blocks on another holder. Re-entry gives ErrReentrant as in Acquire.
func TryAcquire(path string, opts ...Option) (*Handle, error) {
	return acquire(context.Background(), path, false, opts)
}

// Held reports whether the calling goroutine holds the lock on the file at
// path, by this spelling of the path or another, so that code meant to run
// under the lock can check that it does. It takes nothing and creates
// nothing: a missing file is not held. The answer is about this goroutine
// only, and true exactly when Acquire would return ErrReentrant; it costs a
// look at the process's lock table, and a stat when the goroutine holds
// some lock that path does not name by the spelling it was taken by.
func Held(path string) bool {
	return heldAt(path, proc.ID())
}

func pathError(op, path string, err error) error {
	return &fs.PathError{Op: op, Path: path, Err: err}
}

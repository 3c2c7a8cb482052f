package filetxn

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"

	"github.com/filetxn/filetxn/internal/bound"
	"github.com/filetxn/filetxn/internal/proc"
	"github.com/filetxn/filetxn/lock"
)

// A Backend keeps the documents of the stores made WithBackend somewhere
// other than local files: a service that several hosts share, whose locks
// take the place of lock files. The module github.com/filetxn/filetxn/etcd
// provides one on etcd. A store's path names its document there (see
// Store.Name), and its lock is named likewise: the store's own name, or the
// path given WithLockPath. Codecs, documents, operations and errors stay
// those of files.
//
// The engine calls Lock for one lock name from one goroutine of a process
// at a time, and queues the others itself (a re-entry fails with an error
// matching lock.ErrReentrant, as on files), so a backend need not exclude
// the goroutines of one process from each other. A Backend value must be
// comparable (a pointer, say): the engine keys its queues by it.
type Backend interface {
	// Lock takes the lock named name and returns it held: waiting for it
	// as long as ctx lets it, or, when wait is false, failing at once with
	// an error matching lock.ErrWouldBlock if another holder has it.
	Lock(ctx context.Context, name string, wait bool) (Held, error)
	// Get returns the bytes of the document named name, nil when there is
	// none, read without any lock: one whole version, as recent as any
	// write that has returned.
	Get(ctx context.Context, name string) ([]byte, error)
	// Commit publishes every put in one atomic step, fenced by held: only
	// if each lock of held is still held, and no document that a Held has
	// read has been written since. Otherwise it publishes none of them and
	// returns an error matching lock.ErrLockLost. A put it cannot take (too
	// large, say) fails it before anything is published. With release, the
	// caller is done with held: the step that publishes may release the
	// locks too (their Release then has nothing left to do), saving a
	// request; the engine still calls Release, after any outcome.
	Commit(ctx context.Context, held []Held, puts []Put, release bool) error
	// Create makes the document named name with data, without any lock and
	// only if there is none, in one atomic step: of two Creates of one name
	// exactly one succeeds, and the other (like a Create of a name that a
	// Commit made) writes nothing and fails with an error matching
	// fs.ErrExist. A Commit whose hold read the name as missing is fenced
	// by it. Package loopstate claims a loop's name with it.
	Create(ctx context.Context, name string, data []byte) error
	// List returns the documents whose names begin with prefix, read
	// without any lock as of one moment, in the order they were created
	// (those a single step created in the order of their names); none
	// gives an empty list. Its cost grows with what it returns. A prefix
	// meant as a directory ends in "/", so that "a/" does not list "ab/".
	List(ctx context.Context, prefix string) ([]Entry, error)
}

// An Entry is one document of a Backend.List: its name, its bytes, and
// the moment it was created, as a number that orders the creations of the
// backend's documents: one created later has a larger one (etcd: its
// create_revision), and a document removed and made again gets a new one.
// A backend that cannot tell leaves Created 0.
type Entry struct {
	Name    string
	Data    []byte
	Created int64 // orders creations; 0: unknown
}

// A Held is a lock of a Backend, held until Release. A Held may also have
// a method Done() <-chan struct{} that returns a channel closed once the
// hold has ended, by Release or lost (etcd: its session's lease is no
// longer kept alive); a client notices a lost lease only some time after
// the server let it go. Package loopstate cancels a harness when it fires.
type Held interface {
	// Read returns the bytes of the document named name, nil when there is
	// none, and remembers the version read, which a Commit by this holder
	// then requires to be unchanged.
	Read(ctx context.Context, name string) ([]byte, error)
	// Release gives the lock up. A lock already lost releases without
	// error, except that an error matching lock.ErrLockLost says the lock
	// may have been lost before the hold wrote anything, so that what it
	// read may not have been current (etcd: a read taken from the
	// session's own last commit): a call that wrote nothing returns it.
	Release() error
}

// A Put is one document of a Backend.Commit: its new bytes, or its
// removal. A removal with Prefix removes every document whose name begins
// with Name, in the same step, whatever their number: a loop's tick log,
// one document a line, goes with the loop in one request. A Commit refuses
// a Put with Prefix but not Remove with an error matching
// ErrInvalidArgument, publishing nothing.
type Put struct {
	Name   string
	Data   []byte // the new bytes, when Remove is false
	Remove bool
	Prefix bool // with Remove: every document whose name begins with Name; without, refused
}

// WithBackend keeps the store's document in b instead of the local file at
// its path, which then only names the document (see Store.Name). The
// options that place lock files (WithStateRoot) do not apply; WithLockPath
// names the lock to share. ctx bounds the wait for the lock as on files: a
// done ctx still takes a free lock, in one try without wait, and fails at
// once on a busy one; once the lock is held, the requests made under it
// (its reads, the commit) go on after ctx ends, each until a few seconds
// after its start at most (while ctx lives, ctx bounds it), so that a
// backend that stops answering fails the call instead of holding it. A read without the lock (View, a probe)
// is bounded by ctx, or, under a ctx already done, gets that try too. On a
// backend Tx.Lock returns nil, Tx.Append fails with errors.ErrUnsupported, and MutateAll
// takes members of one backend only. A call that wrote nothing returns the
// error of a Release that says its reads were not current (see Held). A
// nil b is refused by NewStore.
func WithBackend(b Backend) Option {
	return func(o *options) {
		if b == nil {
			o.invalid("WithBackend(nil): no backend")
		}
		o.backend = b
	}
}

// Backend returns the backend the store keeps its document in (see
// WithBackend), or nil for a local file.
func (s *Store[D]) Backend() Backend { return s.o.backend }

// Name returns the name of the document in its backend: the store's path,
// cleaned and with forward slashes, so that the same relative path names
// the same document on every host.
func (s *Store[D]) Name() string { return docName(s.path) }

func docName(path string) string { return filepath.ToSlash(filepath.Clean(path)) }

// lockName returns the name of the backend lock that guards the document.
func (s *Store[D]) lockName() string {
	if s.o.lockPath != "" {
		return docName(s.o.lockPath)
	}
	return s.Name()
}

// Held returns the backend's lock that the Locked callback holds, for a
// store made WithBackend, and nil for a local file: a Backend.Commit of
// several documents fenced by it publishes them in one step, which Write,
// one document a call, cannot. Package loopstate commits a tick's log
// lines and its state so. Like the Tx, it is valid only until the callback
// returns.
func (tx *Tx) Held() Held {
	tx.live("Held")
	if tx.remote == nil {
		return nil
	}
	return tx.remote.held
}

// A remoteTx is what a Tx on a backend holds.
type remoteTx struct {
	ctx  context.Context
	b    Backend
	held Held
	last bool // the next commit is the transaction's last request: it may release the lock
}

// remoteLocked is locked for a store on a backend.
func (s *Store[D]) remoteLocked(ctx context.Context, fn func(tx *Tx) error) (err error) {
	if s.o.lockErr != nil {
		return &fs.PathError{Op: "Lock", Path: s.path, Err: s.o.lockErr}
	}
	hs, err := lockRemote(ctx, s.o.backend, []string{s.lockName()}, !s.o.noWait)
	if err != nil {
		return err
	}
	defer func() {
		if lost := hs.release(); err == nil {
			err = lost
		}
	}()
	tx := &Tx{o: &s.o, remote: &remoteTx{ctx: ctx, b: s.o.backend, held: hs.held[0]}}
	defer tx.done.Store(true)
	return fn(tx)
}

// remoteMutate is mutate for a store on a backend: one call, one lock, one
// read, fn once, and one fenced commit when fn changed the document. A
// probed call first decides on a read without the lock.
func (s *Store[D]) remoteMutate(ctx context.Context, fn func(D) error, probed bool) (Commit, error) {
	if probed && s.remoteProbe(ctx, fn) {
		return Commit{}, nil
	}
	var c Commit
	err := s.remoteLocked(ctx, func(tx *Tx) error {
		data, err := tx.read(s.path, "Read")
		if err != nil {
			return err
		}
		doc, before, err := s.decode(data)
		if err != nil {
			return err
		}
		if err := fn(doc); err != nil {
			return err
		}
		out, err := s.encode(doc, data)
		if err != nil || string(out) == string(before) {
			return err
		}
		tx.remote.last = true
		c, err = tx.Write(s.path, out)
		return err
	})
	return c, err
}

// remoteProbe is probe on a backend.
func (s *Store[D]) remoteProbe(ctx context.Context, fn func(D) error) bool {
	data, err := s.remoteGet(ctx)
	if err != nil {
		return false
	}
	doc, before, err := s.decode(data)
	if err != nil || fn(doc) != nil {
		return false
	}
	after, err := s.encode(doc, data)
	return err == nil && string(after) == string(before)
}

func (s *Store[D]) remoteGet(ctx context.Context) ([]byte, error) {
	if ctx.Err() != nil {
		// A read without the lock never waits for a holder: a done ctx
		// does not stop it (see View, MutateProbed), as on files.
		var cancel context.CancelFunc
		ctx, cancel = bound.Try(ctx)
		defer cancel()
	}
	data, err := s.o.backend.Get(ctx, s.Name())
	if err != nil {
		return nil, &fs.PathError{Op: "Read", Path: s.path, Err: err}
	}
	return data, nil
}

// remoteRead is Tx.Read on a backend.
func (r *remoteTx) read(path, op string) ([]byte, error) {
	ctx, cancel := bound.Held(r.ctx)
	defer cancel()
	data, err := r.held.Read(ctx, docName(path))
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: path, Err: err}
	}
	return data, nil
}

// commit is Tx.Write (or, with remove, the removal) on a backend.
func (r *remoteTx) commit(path, op string, data []byte, remove bool) error {
	return commitHeld(r.ctx, r.b, []Held{r.held}, []Put{{Name: docName(path), Data: data, Remove: remove}}, r.last, op, path)
}

// commitHeld is b.Commit of puts, fenced by held, as a request under the
// locks: ctx bounds it as bound.Held says. Its error is an *fs.PathError
// of op and path.
func commitHeld(ctx context.Context, b Backend, held []Held, puts []Put, release bool, op, path string) error {
	ctx, cancel := bound.Held(ctx)
	defer cancel()
	if err := b.Commit(ctx, held, puts, release); err != nil {
		return &fs.PathError{Op: op, Path: path, Err: err}
	}
	return nil
}

// remoteHeld is the locks of one call on a backend, held in the order of
// their names.
type remoteHeld struct {
	gates []*gate
	held  []Held
	names []string // the locks' names: held[i] is names[i]
}

// release releases every lock; it returns the first Release error that
// says a hold's reads may not have been current (lock.ErrLockLost), and
// drops the others: the lock is gone either way.
func (h *remoteHeld) release() error {
	var lost error
	for i := len(h.held) - 1; i >= 0; i-- {
		if err := h.held[i].Release(); lost == nil && errors.Is(err, lock.ErrLockLost) {
			lost = &fs.PathError{Op: "Release", Path: h.names[i], Err: err}
		}
	}
	for i := len(h.gates) - 1; i >= 0; i-- {
		h.gates[i].leave()
	}
	return lost
}

// lockRemote takes the locks named names (sorted, distinct) of b: each
// first in this process's queue for it, then in b, in the order given.
// A ctx done when a lock is taken bounds no wait, as on files: the lock is
// taken in one try (see take).
func lockRemote(ctx context.Context, b Backend, names []string, wait bool) (_ *remoteHeld, err error) {
	h := &remoteHeld{names: names}
	done := false
	defer func() {
		// Whatever ends the loop early (an error, a panic in b.Lock) gives
		// back what it took, so no queue of this process stays full.
		if !done {
			_ = h.release() // nothing was read
		}
	}()
	me := proc.ID()
	for _, name := range names {
		if err := h.take(ctx, b, name, me, wait); err != nil {
			return nil, &fs.PathError{Op: "Acquire", Path: name, Err: err}
		}
	}
	done = true
	return h, nil
}

// take adds the lock named name of b to h, for lockRemote: in the queue,
// then in b. Under a ctx already done, b's lock is one try without wait
// under a context that keeps ctx's values but not its end (bound.Try), so
// that a free lock is taken and a busy one fails at once (the queue takes
// a free slot, or fails, under ctx itself). A busy lock's error is the one
// lock.Acquire gives: a *lock.BusyError whose Err is ctx.Err() if the call
// would have waited, lock.ErrWouldBlock otherwise.
func (h *remoteHeld) take(ctx context.Context, b Backend, name string, me int64, wait bool) error {
	g, err := enterGate(ctx, b, name, me, wait)
	if err != nil {
		return err
	}
	h.gates = append(h.gates, g)
	lctx, try, cause := ctx, !wait, ctx.Err()
	if cause != nil {
		var cancel context.CancelFunc
		lctx, cancel = bound.Try(ctx)
		defer cancel()
		try = true
	}
	held, err := b.Lock(lctx, name, !try)
	if err == nil {
		h.held = append(h.held, held)
		return nil
	}
	if cause == nil || !wait {
		cause = lock.ErrWouldBlock
	}
	return asBusy(name, err, cause)
}

// asBusy returns err, a failure of b.Lock, as the error lock.Acquire gives:
// a busy lock (err matching lock.ErrWouldBlock) becomes a *lock.BusyError
// whose Err is cause, keeping what the backend said of the holder; any
// other failure stays as it is.
func asBusy(name string, err, cause error) error {
	if !errors.Is(err, lock.ErrWouldBlock) {
		return err
	}
	be := &lock.BusyError{Path: name}
	if theirs := (*lock.BusyError)(nil); errors.As(err, &theirs) {
		*be = *theirs
	}
	be.Err = cause
	return be
}

// A gate queues the goroutines of this process that ask for one lock of
// one backend, and knows which goroutine holds it, to refuse a re-entry.
type gate struct {
	key   gateKey
	slot  chan struct{} // full while held
	owner int64         // the goroutine that holds it; under gates.mu
	refs  int           // goroutines holding or queued; under gates.mu
}

type gateKey struct {
	b    Backend
	name string
}

var gates struct {
	mu sync.Mutex
	m  map[gateKey]*gate
}

// enterGate takes the gate of name in b for goroutine me, waiting as ctx
// lets it when wait is true.
func enterGate(ctx context.Context, b Backend, name string, me int64, wait bool) (*gate, error) {
	k := gateKey{b, name}
	gates.mu.Lock()
	g := gates.m[k]
	if g == nil {
		if gates.m == nil {
			gates.m = make(map[gateKey]*gate)
		}
		g = &gate{key: k, slot: make(chan struct{}, 1)}
		gates.m[k] = g
	}
	if g.owner == me {
		gates.mu.Unlock()
		return nil, lock.ErrReentrant
	}
	g.refs++
	gates.mu.Unlock()
	select {
	case g.slot <- struct{}{}:
	default:
		if !wait {
			g.unref()
			return nil, &lock.BusyError{Path: name, Err: lock.ErrWouldBlock}
		}
		select {
		case g.slot <- struct{}{}:
		case <-ctx.Done():
			g.unref()
			return nil, &lock.BusyError{Path: name, Err: ctx.Err()}
		}
	}
	gates.mu.Lock()
	g.owner = me
	gates.mu.Unlock()
	return g, nil
}

func (g *gate) leave() {
	gates.mu.Lock()
	g.owner = 0
	gates.mu.Unlock()
	<-g.slot
	g.unref()
}

func (g *gate) unref() {
	gates.mu.Lock()
	defer gates.mu.Unlock()
	if g.refs--; g.refs == 0 {
		delete(gates.m, g.key)
	}
}

// errMixedBackends is the error of a MutateAll over members of different
// backends (or of files and a backend): no one step can commit them all.
var errMixedBackends = errors.New("members are kept in different backends, or some in files: no one commit spans them")

func mixedBackends(i, j int) error {
	return fmt.Errorf("filetxn: MutateAll: members %d and %d: %w: %w", i, j, errMixedBackends, ErrInvalidArgument)
}

package etcd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/lock"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// DefaultMaxRequestBytes is etcd's default request limit
// (--max-request-bytes), which a Backend assumes unless told otherwise.
const DefaultMaxRequestBytes = 1572864

// DefaultSessionTTL is the lease TTL of a Backend's session unless
// WithSessionTTL says otherwise: etcd's own default for a session.
const DefaultSessionTTL = 60 * time.Second

// releaseTimeout bounds the requests that have no ctx of their own: the
// unlock of Release, the clean-up of a failed Lock, the revoke of Close.
const releaseTimeout = 5 * time.Second

// A Backend is a filetxn.Backend on an etcd cluster: the documents and
// locks of one project, under its key prefix. Its locks are held by one
// session (a lease kept alive while the Backend lives), made at the first
// Lock and made anew when it has expired. After a commit that ends a hold
// (a Mutate's) with no other session waiting, the session keeps the lock,
// and the bytes it wrote: its next Mutate of that document sends only its
// commit. A watch per kept lock gives it up as soon as another session
// asks for it (after a short run of holds, see docs/formats/etcd.md), and
// notices a write by a program that takes no lock; a Mutate that starts
// before the watch reports one fails with lock.ErrLockLost, fn run once on
// the older bytes. An idle process holds such locks until someone else
// wants them, or it closes the Backend. A Backend is safe for concurrent
// use; it does not exclude goroutines that share it (the engine does).
// Close it when done.
type Backend struct {
	client *clientv3.Client
	prefix string
	ttl    int // seconds
	max    int // bytes

	life   context.Context // ends at Close; the keep-alive of every session
	cancel context.CancelFunc

	making chan struct{} // a token, held while a session is made

	mu     sync.Mutex // protects sess, closed, kept and the keepers' states
	sess   *concurrency.Session
	closed bool
	kept   map[string]*keeper // the locks whose keys the session keeps, by name
	// firsts names, by lock, the document that the last hold of it read
	// first when that was not the lock's own name (a store made
	// WithLockPath, a loop's state): the next Lock reads it with the lock.
	firsts map[string]string

	wg sync.WaitGroup // the keepers' watches
}

type config struct {
	ttl     time.Duration
	max     int
	invalid []string
}

// An Option configures a Backend made by New.
type Option func(*config)

// WithSessionTTL sets the TTL of the lease that holds the Backend's locks
// (DefaultSessionTTL unless given), rounded up to whole seconds; the
// server may raise it to its minimum. The lease is kept alive while the
// Backend lives. A holder that dies or loses the cluster for longer frees
// its locks after d, and its own next Commit fails. d must be positive.
func WithSessionTTL(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.invalid = append(c.invalid, fmt.Sprintf("WithSessionTTL(%s): not positive", d))
		}
		c.ttl = d
	}
}

// WithMaxRequestBytes sets the request limit of the cluster
// (--max-request-bytes; DefaultMaxRequestBytes unless given). A Commit whose
// request would exceed it, keys and etcd's envelope counted, fails before
// anything is written, with an error matching ErrTooLarge. n must be
// positive; a limit above the client's send limit needs that raised too.
func WithMaxRequestBytes(n int) Option {
	return func(c *config) {
		if n <= 0 {
			c.invalid = append(c.invalid, fmt.Sprintf("WithMaxRequestBytes(%d): not positive", n))
		}
		c.max = n
	}
}

// New returns a Backend that keeps the documents and locks of one project
// under prefix in the cluster that client reaches. It does no I/O. The
// prefix must not be empty nor end in "/", and the prefixes of two projects
// must not nest; a nil client, a bad prefix or an invalid option fails it
// with an error matching filetxn.ErrInvalidArgument. The caller keeps the
// client, and closes it after the Backend. The Backend keeps the locks of
// its Mutates between them (see Backend): an uncontended Mutate costs its
// commit alone, and another host that asks for such a lock waits for one
// round trip of its keeper's watch (and for the keeper's run, see
// docs/formats/etcd.md).
func New(client *clientv3.Client, prefix string, opts ...Option) (*Backend, error) {
	c := config{ttl: DefaultSessionTTL, max: DefaultMaxRequestBytes}
	for _, o := range opts {
		o(&c)
	}
	switch {
	case client == nil:
		c.invalid = append(c.invalid, "nil client")
	case prefix == "":
		c.invalid = append(c.invalid, "empty prefix")
	case strings.HasSuffix(prefix, "/"):
		c.invalid = append(c.invalid, fmt.Sprintf("prefix %q ends in /", prefix))
	}
	if len(c.invalid) > 0 {
		return nil, fmt.Errorf("etcd: New: %s: %w", strings.Join(c.invalid, "; "), filetxn.ErrInvalidArgument)
	}
	life, cancel := context.WithCancel(context.Background())
	return &Backend{
		client: client,
		prefix: prefix,
		ttl:    int((c.ttl + time.Second - 1) / time.Second),
		max:    c.max,
		life:   life,
		cancel: cancel,
		making: make(chan struct{}, 1),
	}, nil
}

// docKey is the key of the document named name.
func (b *Backend) docKey(name string) string { return b.prefix + "/docs/" + name }

// lockKey is the prefix of the mutex named name: its waiters' keys are
// lockKey + "/" + their lease in hexadecimal. A name's "/" and "%" are
// escaped, so that no lock's keys fall under another's.
func (b *Backend) lockKey(name string) string {
	return b.prefix + "/locks/" + lockEscaper.Replace(name)
}

var lockEscaper = strings.NewReplacer("%", "%25", "/", "%2F")

func checkName(op, name string) error {
	if name == "" {
		return fmt.Errorf("etcd: %s: empty name: %w", op, filetxn.ErrInvalidArgument)
	}
	return nil
}

// firstRead returns the document that Lock reads with the lock named name:
// the one the last hold of name read first, or the one named name.
func (b *Backend) firstRead(name string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if doc, ok := b.firsts[name]; ok {
		return doc
	}
	return name
}

// readFirst notes that a hold of the lock named name read the document doc
// first, for firstRead.
func (b *Backend) readFirst(name, doc string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if doc == name {
		delete(b.firsts, name)
		return
	}
	if b.firsts == nil {
		b.firsts = map[string]string{}
	}
	b.firsts[name] = doc
}

// Lock takes the lock named name for this Backend's session, making the
// session first if there is none or it has expired. With wait it waits for
// the holders before it as long as ctx lets it (a done ctx gives a
// *lock.BusyError wrapping ctx's error); without, a lock another session
// is using fails it with a *lock.BusyError matching lock.ErrWouldBlock: at
// once, or, if that session keeps the lock idle, once it answers (at most
// a second). A waiter whose lease ends queues again on a new session. On
// failure it removes its place in the queue, with a timeout of its own. A
// lock this session already holds is granted again: the engine's queue,
// not Lock, keeps the goroutines of a process apart. Uncontended it costs
// one request, a write, which also reads, for the hold's first Read, the
// document named name (or the one the last hold of name read first); on a
// kept lock a read-only one, or none when the last hold wrote that
// document (see Backend); a watch and a read while it waits.
func (b *Backend) Lock(ctx context.Context, name string, wait bool) (filetxn.Held, error) {
	if err := checkName("Lock", name); err != nil {
		return nil, err
	}
	key, doc := b.lockKey(name), b.firstRead(name)
	for tries := 1; ; tries++ {
		s, err := b.session(ctx)
		if err != nil {
			return nil, b.lockError(ctx, name, err)
		}
		k, err := b.takeKept(ctx, name)
		if err != nil {
			return nil, b.lockError(ctx, name, err)
		}
		if k != nil {
			m, err := b.lockKept(ctx, k, b.docKey(doc))
			if err != nil {
				return nil, b.lockError(ctx, name, err)
			}
			if m != nil {
				return &held{b: b, name: name, doc: doc, m: m, k: k, reads: map[string]int64{}}, nil
			}
			// The key was lost or given up to a waiter: queue anew, on the
			// session as it is now (a failed give-up ends it).
			continue
		}
		m := newMutex(s, key)
		m.doc = b.docKey(doc)
		err = m.lock(ctx, b.client, wait)
		if err == nil {
			m.since = time.Now()
			return &held{b: b, name: name, doc: doc, m: m, reads: map[string]int64{}}, nil
		}
		// The session's key may be left behind (a request whose outcome is
		// unknown, a queue left): remove it, or end the session.
		b.cleanup(m)
		if ctx.Err() == nil && tries < 4 {
			switch {
			case errors.Is(err, errExpired):
				// The key vanished: queue again (a dead lease then fails).
				continue
			case errors.Is(err, rpctypes.ErrLeaseNotFound):
				// The lease ended before the keep-alive noticed: a new session.
				s.Orphan()
				continue
			}
		}
		return nil, b.lockError(ctx, name, err)
	}
}

func (b *Backend) lockError(ctx context.Context, name string, err error) error {
	switch {
	case errors.Is(err, errBusy):
		return &lock.BusyError{Path: name, Err: lock.ErrWouldBlock}
	case ctx.Err() != nil:
		return &lock.BusyError{Path: name, Err: ctx.Err()}
	case errors.Is(err, fs.ErrClosed):
		return fmt.Errorf("etcd: lock %s: backend closed: %w", name, err)
	}
	return fmt.Errorf("etcd: lock %s (key %s): %w", name, b.lockKey(name), err)
}

// cleanup deletes the key of m's session in the lock's queue, with a
// timeout of its own; if that fails it ends the keep-alive of the session,
// so that the key goes with the lease instead of blocking every other host
// for as long as this Backend lives. Holds of the session are then lost:
// their Commits fail.
func (b *Backend) cleanup(m *mutex) {
	ctx, cancel := context.WithTimeout(b.life, releaseTimeout)
	defer cancel()
	if err := b.deleteKey(ctx, m.key); err != nil {
		m.s.Orphan()
	}
}

// deleteKey deletes key, a lock's key of this Backend's session, trying
// again until ctx ends: deleting it twice is harmless, and a delete given
// up orphans the session, which keeps every other host out of its locks
// until its lease expires. A member that dies under one request (the
// client then goes to another) costs a retry, not a TTL.
func (b *Backend) deleteKey(ctx context.Context, key string) error {
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		_, err := b.client.Delete(ctx, key)
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// session returns the live session, making one if there is none or it has
// expired; ctx bounds the wait for another goroutine's making and the grant.
func (b *Backend) session(ctx context.Context) (*concurrency.Session, error) {
	select {
	case b.making <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-b.making }()
	b.mu.Lock()
	s, closed := b.sess, b.closed
	b.mu.Unlock()
	if closed {
		return nil, fs.ErrClosed
	}
	if s != nil && !done(s) {
		return s, nil
	}
	grant, err := b.client.Grant(ctx, int64(b.ttl))
	if err != nil {
		return nil, fmt.Errorf("grant of a %d s lease: %w", b.ttl, err)
	}
	s, err = concurrency.NewSession(b.client, concurrency.WithLease(grant.ID),
		concurrency.WithTTL(b.ttl), concurrency.WithContext(b.life))
	if err == nil {
		b.mu.Lock()
		if closed = b.closed; !closed {
			b.sess = s
		}
		b.mu.Unlock()
		if !closed {
			return s, nil
		}
		s.Orphan()
		err = fs.ErrClosed
	}
	b.revoke(grant.ID)
	return nil, err
}

func done(s *concurrency.Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

func (b *Backend) revoke(id clientv3.LeaseID) error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	_, err := b.client.Revoke(ctx, id)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return nil
	}
	return err
}

// Get returns the document named name, nil when there is none, by a
// linearizable read (one request, bounded by ctx): the newest version.
func (b *Backend) Get(ctx context.Context, name string) ([]byte, error) {
	if err := checkName("Get", name); err != nil {
		return nil, err
	}
	data, _, err := b.get(ctx, name)
	return data, err
}

// get returns the document named name and its mod revision (0: none).
func (b *Backend) get(ctx context.Context, name string) ([]byte, int64, error) {
	key := b.docKey(name)
	resp, err := b.client.Get(ctx, key)
	if err != nil {
		return nil, 0, fmt.Errorf("etcd: get %s (key %s): %w", name, key, err)
	}
	if len(resp.Kvs) == 0 {
		b.sawDoc(key, resp.Header.Revision)
		return nil, 0, nil
	}
	b.sawDoc(key, resp.Kvs[0].ModRevision)
	kv := resp.Kvs[0]
	if kv.Value == nil {
		kv.Value = []byte{} // an empty document is not no document
	}
	return kv.Value, kv.ModRevision, nil
}

// Close ends the Backend: it stops the watches of the locks it keeps and
// keeping its session alive, and revokes its lease, with a timeout of its
// own, which frees every lock it holds or keeps (their holders' Commits
// then fail with lock.ErrLockLost); it returns once no goroutine of the
// Backend is left. Later Locks
// fail with an error matching fs.ErrClosed. It does not close the client.
// Closing twice does nothing.
func (b *Backend) Close() error {
	b.mu.Lock()
	s, closed := b.sess, b.closed
	b.sess, b.closed = nil, true
	for _, k := range b.kept {
		b.dropLocked(k) // their keys go with the lease
	}
	b.mu.Unlock()
	if closed {
		return nil
	}
	defer b.wg.Wait()
	defer b.cancel()
	if s == nil {
		return nil
	}
	s.Orphan()
	if err := b.revoke(s.Lease()); err != nil {
		return fmt.Errorf("etcd: close: revoke of lease %x (its locks are freed when it expires): %w", s.Lease(), err)
	}
	return nil
}

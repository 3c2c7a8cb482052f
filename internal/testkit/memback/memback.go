// Package memback is a filetxn.Backend in memory, for the module's own
// tests of the stores made WithBackend: a Cluster stands for a service
// (documents with revisions, locks held by a session), a Backend for one
// session of it. The etcd module tests the real one.
package memback

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/lock"
)

// A Cluster is what several Backends share.
type Cluster struct {
	mu      sync.Mutex // protects the fields below
	rev     int64
	docs    map[string]doc
	locks   map[string]*Backend      // holder of each lock
	token   map[string]int64         // the revision at which the holder took it
	ended   map[string]chan struct{} // closed when the hold ends
	freed   *sync.Cond
	commits int // Commit calls that published
}

type doc struct {
	data    []byte
	rev     int64 // of the last write
	created int64 // of the creation
}

// New returns an empty Cluster.
func New() *Cluster {
	c := &Cluster{docs: map[string]doc{}, locks: map[string]*Backend{}, token: map[string]int64{}, ended: map[string]chan struct{}{}}
	c.freed = sync.NewCond(&c.mu)
	return c
}

// Backend returns a new session of c.
func (c *Cluster) Backend() *Backend { return &Backend{Cluster: c} }

// Doc returns the bytes of the document named name, and whether it exists.
func (c *Cluster) Doc(name string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.docs[name]
	return d.data, ok
}

// Names returns the names of every document, sorted.
func (c *Cluster) Names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for name := range c.docs {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Commits returns the number of Commits that published.
func (c *Cluster) Commits() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commits
}

// Steal ends the hold of the lock name, as an expired lease does.
func (c *Cluster) Steal(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.free(name)
	c.freed.Broadcast()
}

// free ends the hold of the lock name, if any. c.mu must be held.
func (c *Cluster) free(name string) {
	if c.locks[name] != nil {
		close(c.ended[name])
		delete(c.ended, name)
	}
	delete(c.locks, name)
}

// A Backend is one session of a Cluster. Each of its requests fails with
// ctx's error when ctx is done as it starts, as a service's request does.
// Like an etcd session's mutex, its Lock does not exclude the goroutines that share the session: a lock it
// holds is granted to it again at once. Only the engine's own queue keeps
// two goroutines of one process apart.
type Backend struct {
	Cluster *Cluster
	Panic   bool // Lock panics, as a backend's bug may
}

type held struct {
	b     *Backend
	name  string
	token int64
	read  map[string]int64 // the revision of each document read (0: none)
	ended chan struct{}    // closed when the hold ends
}

// Done returns a channel closed once the hold has ended: released, or
// lost (Steal).
func (h *held) Done() <-chan struct{} { return h.ended }

// Lock implements filetxn.Backend.
func (b *Backend) Lock(ctx context.Context, name string, wait bool) (filetxn.Held, error) {
	if b.Panic {
		panic("memback: Lock")
	}
	if err := ctx.Err(); err != nil {
		return nil, err // a request under a done ctx fails, as etcd's does
	}
	c := b.Cluster
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.locks[name] != nil && c.locks[name] != b {
		if !wait {
			// Bare, the least Backend.Lock promises (etcd's is a
			// *lock.BusyError): the engine gives a caller every busy lock
			// as a *lock.BusyError, from any backend, so this one keeps
			// that conversion tested.
			return nil, lock.ErrWouldBlock
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		stop := context.AfterFunc(ctx, func() { c.mu.Lock(); c.freed.Broadcast(); c.mu.Unlock() })
		c.freed.Wait()
		stop()
	}
	if c.locks[name] == nil {
		c.rev++
		c.locks[name], c.token[name], c.ended[name] = b, c.rev, make(chan struct{})
	}
	return &held{b: b, name: name, token: c.token[name], read: map[string]int64{}, ended: c.ended[name]}, nil
}

// Get implements filetxn.Backend.
func (b *Backend) Get(ctx context.Context, name string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.Cluster.mu.Lock()
	defer b.Cluster.mu.Unlock()
	return b.Cluster.docs[name].data, nil
}

// Create implements filetxn.Backend.
func (b *Backend) Create(ctx context.Context, name string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c := b.Cluster
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.docs[name]; ok {
		return fmt.Errorf("memback: create %s: %w", name, fs.ErrExist)
	}
	c.rev++
	c.docs[name] = doc{data: append([]byte{}, data...), rev: c.rev, created: c.rev}
	return nil
}

// List implements filetxn.Backend.
func (b *Backend) List(ctx context.Context, prefix string) ([]filetxn.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := b.Cluster
	c.mu.Lock()
	defer c.mu.Unlock()
	type ent struct {
		filetxn.Entry
		created int64
	}
	var es []ent
	for name, d := range c.docs {
		if strings.HasPrefix(name, prefix) {
			es = append(es, ent{filetxn.Entry{Name: name, Data: append([]byte{}, d.data...), Created: d.created}, d.created})
		}
	}
	slices.SortFunc(es, func(x, y ent) int {
		if x.created != y.created {
			return int(x.created - y.created)
		}
		return strings.Compare(x.Name, y.Name)
	})
	out := make([]filetxn.Entry, len(es))
	for i, e := range es {
		out[i] = e.Entry
	}
	return out, nil
}

// Commit implements filetxn.Backend.
func (b *Backend) Commit(ctx context.Context, hs []filetxn.Held, puts []filetxn.Put, release bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c := b.Cluster
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range puts {
		if p.Prefix && !p.Remove {
			return fmt.Errorf("memback: commit %s: Prefix without Remove: %w", p.Name, filetxn.ErrInvalidArgument)
		}
	}
	for _, h := range hs {
		h := h.(*held)
		if c.locks[h.name] != h.b || c.token[h.name] != h.token {
			return fmt.Errorf("lock %s: %w", h.name, lock.ErrLockLost)
		}
		for name, rev := range h.read {
			if c.docs[name].rev != rev {
				return fmt.Errorf("%s written since read: %w", name, lock.ErrLockLost)
			}
		}
	}
	c.rev++
	for _, p := range puts {
		switch {
		case p.Remove && p.Prefix:
			for name := range c.docs {
				if strings.HasPrefix(name, p.Name) {
					delete(c.docs, name)
				}
			}
		case p.Remove:
			delete(c.docs, p.Name)
		default:
			created := c.rev
			if d, ok := c.docs[p.Name]; ok {
				created = d.created
			}
			c.docs[p.Name] = doc{data: append([]byte{}, p.Data...), rev: c.rev, created: created}
		}
	}
	for _, h := range hs {
		h := h.(*held)
		for name := range h.read {
			for _, p := range puts {
				if name == p.Name || p.Prefix && strings.HasPrefix(name, p.Name) {
					h.read[name] = c.docs[name].rev // this commit's, or 0 once removed
				}
			}
		}
	}
	c.commits++
	if release {
		for _, h := range hs {
			c.free(h.(*held).name)
		}
		c.freed.Broadcast()
	}
	return nil
}

// Read implements filetxn.Held.
func (h *held) Read(ctx context.Context, name string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := h.b.Cluster
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.docs[name]
	if _, ok := h.read[name]; !ok {
		h.read[name] = d.rev
	}
	return d.data, nil
}

// Release implements filetxn.Held.
func (h *held) Release() error {
	c := h.b.Cluster
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.locks[h.name] == h.b && c.token[h.name] == h.token {
		c.free(h.name)
		c.freed.Broadcast()
	}
	return nil
}

package filetxn_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/ledger"
	"github.com/filetxn/filetxn/lock"
)

// memCluster is what several memBackends share: documents with revisions,
// and locks held by a backend (a session). It stands for a service in the
// engine's own tests; the etcd module tests the real one.
type memCluster struct {
	mu      sync.Mutex
	rev     int64
	docs    map[string]memDoc
	locks   map[string]*memBackend // holder of each lock
	token   map[string]int64       // the revision at which the holder took it
	freed   *sync.Cond
	commits int // Commit calls that published
}

type memDoc struct {
	data []byte
	rev  int64
}

func newMemCluster() *memCluster {
	c := &memCluster{docs: map[string]memDoc{}, locks: map[string]*memBackend{}, token: map[string]int64{}}
	c.freed = sync.NewCond(&c.mu)
	return c
}

// A memBackend is one session of a memCluster. Like an etcd session's
// mutex, its Lock does not exclude the goroutines that share the session:
// a lock it holds is granted to it again at once. Only the engine's own
// queue keeps two goroutines of one process apart.
type memBackend struct {
	c     *memCluster
	panic bool // Lock panics, as a backend's bug may
}

type memHeld struct {
	b     *memBackend
	name  string
	token int64
	read  map[string]int64 // the revision of each document read (0: none)
}

func (b *memBackend) Lock(ctx context.Context, name string, wait bool) (filetxn.Held, error) {
	if b.panic {
		panic("memBackend: Lock")
	}
	c := b.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.locks[name] != nil && c.locks[name] != b {
		if !wait {
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
		c.locks[name], c.token[name] = b, c.rev
	}
	return &memHeld{b: b, name: name, token: c.token[name], read: map[string]int64{}}, nil
}

func (b *memBackend) Get(ctx context.Context, name string) ([]byte, error) {
	b.c.mu.Lock()
	defer b.c.mu.Unlock()
	return b.c.docs[name].data, nil
}

func (b *memBackend) Commit(ctx context.Context, held []filetxn.Held, puts []filetxn.Put, release bool) error {
	c := b.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range held {
		h := h.(*memHeld)
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
		if p.Remove {
			delete(c.docs, p.Name)
		} else {
			c.docs[p.Name] = memDoc{data: append([]byte(nil), p.Data...), rev: c.rev}
		}
	}
	c.commits++
	if release {
		for _, h := range held {
			delete(c.locks, h.(*memHeld).name)
		}
		c.freed.Broadcast()
	}
	return nil
}

func (h *memHeld) Read(ctx context.Context, name string) ([]byte, error) {
	c := h.b.c
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.docs[name]
	h.read[name] = d.rev
	return d.data, nil
}

func (h *memHeld) Release() error {
	c := h.b.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.locks[h.name] == h.b && c.token[h.name] == h.token {
		delete(c.locks, h.name)
		c.freed.Broadcast()
	}
	return nil
}

// steal ends the hold of name, as an expired lease does.
func (c *memCluster) steal(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.locks, name)
	c.freed.Broadcast()
}

type memCount struct{ N int }

func TestBackendMutateViewRestore(t *testing.T) {
	ctx := context.Background()
	c := newMemCluster()
	b := &memBackend{c: c}
	s, err := filetxn.NewStore("proj/./count.json", filetxn.JSON[memCount](), filetxn.WithBackend(b))
	require.NoError(t, err)
	assert.Equal(t, "proj/count.json", s.Name())
	lp, err := s.LockPath()
	require.NoError(t, err)
	assert.Equal(t, "proj/count.json", lp)

	commit, err := s.Mutate(ctx, func(d *memCount) error { d.N = 5; return nil })
	require.NoError(t, err)
	assert.True(t, commit.Written)
	assert.JSONEq(t, `{"N":5}`, string(c.docs["proj/count.json"].data))
	got, err := s.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, got.N)

	// A fn that changes nothing commits nothing; a probed one takes no lock.
	before := c.commits
	commit, err = s.Mutate(ctx, func(d *memCount) error { return nil })
	require.NoError(t, err)
	assert.False(t, commit.Written)
	other := &memBackend{c: c}
	_, err = other.Lock(ctx, "proj/count.json", false)
	require.NoError(t, err)
	commit, err = s.MutateProbed(ctx, func(d *memCount) error { d.N = 5; return nil })
	require.NoError(t, err)
	assert.False(t, commit.Written)
	assert.Equal(t, before, c.commits)
	c.steal("proj/count.json")

	// Restore over an owned version, and refusal over a rival's.
	snap := append([]byte(nil), c.docs["proj/count.json"].data...)
	commit, err = s.Mutate(ctx, func(d *memCount) error { d.N = 6; return nil })
	require.NoError(t, err)
	dg, ok := commit.Digest()
	require.True(t, ok)
	_, err = s.Restore(ctx, snap, dg)
	require.NoError(t, err)
	got, _ = s.View(ctx)
	assert.Equal(t, 5, got.N)
	_, err = s.Restore(ctx, []byte(`{"N":1}`))
	assert.ErrorIs(t, err, filetxn.ErrDiverged)

	// Locked: reads and writes through the backend; no lock file, no append.
	err = s.Locked(ctx, func(tx *filetxn.Tx) error {
		assert.Nil(t, tx.Lock())
		data, err := tx.Read("proj/count.json")
		require.NoError(t, err)
		assert.JSONEq(t, `{"N":5}`, string(data))
		err = tx.Append("proj/log", []byte("x\n"))
		assert.ErrorIs(t, err, errors.ErrUnsupported)
		_, err = tx.Write("proj/other.txt", []byte("hi"))
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, "hi", string(c.docs["proj/other.txt"].data))
}

// TestBackendLostLockPublishesNothing: a hold that ends before the commit
// (an expired lease) publishes nothing and says lock.ErrLockLost. Ablation:
// a memBackend.Commit without its lock compare turns it red.
func TestBackendLostLockPublishesNothing(t *testing.T) {
	ctx := context.Background()
	c := newMemCluster()
	s, err := filetxn.NewStore("n.json", filetxn.JSON[memCount](), filetxn.WithBackend(&memBackend{c: c}))
	require.NoError(t, err)
	_, err = s.Mutate(ctx, func(d *memCount) error {
		c.steal("n.json")
		d.N = 1
		return nil
	})
	require.ErrorIs(t, err, lock.ErrLockLost)
	assert.Contains(t, err.Error(), "n.json")
	assert.Nil(t, c.docs["n.json"].data)
}

// TestBackendGoroutinesExclude: goroutines of one process that share a
// backend session, which itself does not exclude them, lose no update.
// Ablation: lockRemote without enterGate (the engine's queue) turns it red
// (lost increments, or commits refused as written since their read).
func TestBackendGoroutinesExclude(t *testing.T) {
	ctx := context.Background()
	c := newMemCluster()
	s, err := filetxn.NewStore("n.json", filetxn.JSON[memCount](), filetxn.WithBackend(&memBackend{c: c}))
	require.NoError(t, err)
	const workers, each = 8, 50
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				_, err := s.Mutate(ctx, func(d *memCount) error {
					n := d.N
					time.Sleep(time.Microsecond)
					d.N = n + 1
					return nil
				})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	got, err := s.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, workers*each, got.N)
}

func TestBackendReentryNoWaitAndCtx(t *testing.T) {
	ctx := context.Background()
	c := newMemCluster()
	b := &memBackend{c: c}
	s, err := filetxn.NewStore("n.json", filetxn.JSON[memCount](), filetxn.WithBackend(b))
	require.NoError(t, err)
	_, err = s.Mutate(ctx, func(d *memCount) error {
		_, err := s.Mutate(ctx, func(*memCount) error { return nil })
		return err
	})
	require.ErrorIs(t, err, lock.ErrReentrant)

	// Another session holds the lock: WithNoWait fails at once, a wait
	// ends with its ctx.
	_, err = (&memBackend{c: c}).Lock(ctx, "n.json", false)
	require.NoError(t, err)
	nw, err := filetxn.NewStore("n.json", filetxn.JSON[memCount](), filetxn.WithBackend(b), filetxn.WithNoWait())
	require.NoError(t, err)
	_, err = nw.Mutate(ctx, func(d *memCount) error { d.N++; return nil })
	require.ErrorIs(t, err, lock.ErrWouldBlock)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = s.Mutate(short, func(d *memCount) error { d.N++; return nil })
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// A goroutine queued in the engine behind a holder of this process
	// leaves with its ctx too.
	c.steal("n.json")
	held := make(chan struct{})
	release := make(chan struct{})
	go func() {
		_, _ = s.Mutate(ctx, func(d *memCount) error { close(held); <-release; return nil })
	}()
	<-held
	short2, cancel2 := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel2()
	_, err = s.Mutate(short2, func(d *memCount) error { d.N++; return nil })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	close(release)
}

// TestBackendMutateAllOneCommit: a MutateAll over a ledger and a board on
// one backend is one Commit with both documents; members of files and of a
// backend together are refused.
func TestBackendMutateAllOneCommit(t *testing.T) {
	ctx := context.Background()
	c := newMemCluster()
	b := &memBackend{c: c}
	ls, err := ledger.Open("docs/deferred-work.md", filetxn.WithBackend(b))
	require.NoError(t, err)
	bs, err := board.Open("docs/sprint-status.yaml", filetxn.WithBackend(b))
	require.NoError(t, err)
	doc, err := board.New("demo", time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), board.Row{Epic: 3, Number: 2, Slug: "login", Status: "in-progress"})
	require.NoError(t, err)
	_, err = bs.Mutate(ctx, func(d *board.Doc) error { *d = *doc; return nil })
	require.NoError(t, err)
	ids, err := ls.Append(ctx, ledger.Spec{Title: "fix it", Origin: "review", SourceSpec: "3-2-login"})
	require.NoError(t, err)
	require.Len(t, ids, 1)

	before := c.commits
	commits, err := filetxn.MutateAll(ctx, []filetxn.Member{ls, bs}, func(m *filetxn.Multi) error {
		if _, err := ls.In(m).MarkDone(ids, "2026-12-02", "done"); err != nil {
			return err
		}
		_, err := bs.In(m).Advance("3-2-login", "done")
		return err
	})
	require.NoError(t, err)
	assert.True(t, commits[0].Written)
	assert.True(t, commits[1].Written)
	assert.Equal(t, before+1, c.commits, "one Commit for both documents")

	files, err := filetxn.NewStore(filepath.Join(t.TempDir(), "n.json"), filetxn.JSON[memCount](), filetxn.WithLockPath(filepath.Join(t.TempDir(), "n.lock")))
	require.NoError(t, err)
	_, err = filetxn.MutateAll(ctx, []filetxn.Member{ls, files}, func(*filetxn.Multi) error { return nil })
	require.ErrorIs(t, err, filetxn.ErrInvalidArgument)

	// The archive shares the ledger's lock: one lock, one Commit of two
	// documents.
	before = c.commits
	moved, err := ls.Archive(ctx, "2026-12-03", "2026-12-03")
	require.NoError(t, err)
	assert.Equal(t, ids, moved)
	assert.Equal(t, before+1, c.commits)
	assert.Contains(t, string(c.docs["docs/deferred-work-archive.md"].data), ids[0])
}

// TestBackendPanicInLockFreesTheQueue: a backend whose Lock panics leaves
// this process's queue for the lock free: the next call gets the lock.
// Ablation: lockRemote without its deferred release on an early end turns
// it red (the second Mutate waits until its ctx ends).
func TestBackendPanicInLockFreesTheQueue(t *testing.T) {
	c := newMemCluster()
	b := &memBackend{c: c, panic: true}
	s, err := filetxn.NewStore("n.json", filetxn.JSON[memCount](), filetxn.WithBackend(b))
	require.NoError(t, err)
	require.Panics(t, func() { _, _ = s.Mutate(context.Background(), func(*memCount) error { return nil }) })
	b.panic = false
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = s.Mutate(ctx, func(d *memCount) error { d.N++; return nil })
	require.NoError(t, err)
}

// TestBackendRestoreRemoves: a nil snapshot over an owned version removes
// the document in one fenced commit; over a missing one it writes nothing.
// Ablation: a removal on a backend that commits a put of nil bytes (an
// empty document) instead of a removal turns it red.
func TestBackendRestoreRemoves(t *testing.T) {
	ctx := context.Background()
	c := newMemCluster()
	s, err := filetxn.NewStore("n.json", filetxn.JSON[memCount](), filetxn.WithBackend(&memBackend{c: c}))
	require.NoError(t, err)
	mine, err := s.Mutate(ctx, func(d *memCount) error { d.N = 1; return nil })
	require.NoError(t, err)
	owned, ok := mine.Digest()
	require.True(t, ok)
	before := c.commits
	commit, err := s.Restore(ctx, nil, owned)
	require.NoError(t, err)
	assert.True(t, commit.Written)
	_, there := c.docs["n.json"]
	assert.False(t, there)
	assert.Equal(t, before+1, c.commits)
	commit, err = s.Restore(ctx, nil)
	require.NoError(t, err)
	assert.False(t, commit.Written)
	assert.Equal(t, before+1, c.commits)
}

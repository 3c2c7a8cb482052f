package filetxn_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/internal/testkit/memback"
	"github.com/filetxn/filetxn/ledger"
	"github.com/filetxn/filetxn/lock"
)

// memCluster and memBackend are the engine's test Backend (package memback).
type (
	memCluster = memback.Cluster
	memBackend = memback.Backend
)

func newMemCluster() *memCluster { return memback.New() }

// docOf returns the bytes of c's document name, nil if there is none.
func docOf(c *memCluster, name string) []byte { data, _ := c.Doc(name); return data }

type memCount struct{ N int }

func TestBackendMutateViewRestore(t *testing.T) {
	ctx := context.Background()
	c := newMemCluster()
	b := c.Backend()
	s, err := filetxn.NewStore("proj/./count.json", filetxn.JSON[memCount](), filetxn.WithBackend(b))
	require.NoError(t, err)
	assert.Equal(t, "proj/count.json", s.Name())
	lp, err := s.LockPath()
	require.NoError(t, err)
	assert.Equal(t, "proj/count.json", lp)

	commit, err := s.Mutate(ctx, func(d *memCount) error { d.N = 5; return nil })
	require.NoError(t, err)
	assert.True(t, commit.Written)
	assert.JSONEq(t, `{"N":5}`, string(docOf(c, "proj/count.json")))
	got, err := s.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, got.N)

	// A fn that changes nothing commits nothing; a probed one takes no lock.
	before := c.Commits()
	commit, err = s.Mutate(ctx, func(d *memCount) error { return nil })
	require.NoError(t, err)
	assert.False(t, commit.Written)
	other := c.Backend()
	_, err = other.Lock(ctx, "proj/count.json", false)
	require.NoError(t, err)
	commit, err = s.MutateProbed(ctx, func(d *memCount) error { d.N = 5; return nil })
	require.NoError(t, err)
	assert.False(t, commit.Written)
	assert.Equal(t, before, c.Commits())
	c.Steal("proj/count.json")

	// Restore over an owned version, and refusal over a rival's.
	snap := append([]byte(nil), docOf(c, "proj/count.json")...)
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
	assert.Equal(t, "hi", string(docOf(c, "proj/other.txt")))
}

// TestBackendLostLockPublishesNothing: a hold that ends before the commit
// (an expired lease) publishes nothing and says lock.ErrLockLost. Ablation:
// a memBackend.Commit without its lock compare turns it red.
func TestBackendLostLockPublishesNothing(t *testing.T) {
	ctx := context.Background()
	c := newMemCluster()
	s, err := filetxn.NewStore("n.json", filetxn.JSON[memCount](), filetxn.WithBackend(c.Backend()))
	require.NoError(t, err)
	_, err = s.Mutate(ctx, func(d *memCount) error {
		c.Steal("n.json")
		d.N = 1
		return nil
	})
	require.ErrorIs(t, err, lock.ErrLockLost)
	assert.Contains(t, err.Error(), "n.json")
	assert.Nil(t, docOf(c, "n.json"))
}

// TestBackendGoroutinesExclude: goroutines of one process that share a
// backend session, which itself does not exclude them, lose no update.
// Ablation: lockRemote without enterGate (the engine's queue) turns it red
// (lost increments, or commits refused as written since their read).
func TestBackendGoroutinesExclude(t *testing.T) {
	ctx := context.Background()
	c := newMemCluster()
	s, err := filetxn.NewStore("n.json", filetxn.JSON[memCount](), filetxn.WithBackend(c.Backend()))
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
	b := c.Backend()
	s, err := filetxn.NewStore("n.json", filetxn.JSON[memCount](), filetxn.WithBackend(b))
	require.NoError(t, err)
	_, err = s.Mutate(ctx, func(d *memCount) error {
		_, err := s.Mutate(ctx, func(*memCount) error { return nil })
		return err
	})
	require.ErrorIs(t, err, lock.ErrReentrant)

	// Another session holds the lock: WithNoWait fails at once, a wait
	// ends with its ctx.
	_, err = (c.Backend()).Lock(ctx, "n.json", false)
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
	c.Steal("n.json")
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
	b := c.Backend()
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

	before := c.Commits()
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
	assert.Equal(t, before+1, c.Commits(), "one Commit for both documents")

	files, err := filetxn.NewStore(filepath.Join(t.TempDir(), "n.json"), filetxn.JSON[memCount](), filetxn.WithLockPath(filepath.Join(t.TempDir(), "n.lock")))
	require.NoError(t, err)
	_, err = filetxn.MutateAll(ctx, []filetxn.Member{ls, files}, func(*filetxn.Multi) error { return nil })
	require.ErrorIs(t, err, filetxn.ErrInvalidArgument)

	// The archive shares the ledger's lock: one lock, one Commit of two
	// documents.
	before = c.Commits()
	moved, err := ls.Archive(ctx, "2026-12-03", "2026-12-03")
	require.NoError(t, err)
	assert.Equal(t, ids, moved)
	assert.Equal(t, before+1, c.Commits())
	assert.Contains(t, string(docOf(c, "docs/deferred-work-archive.md")), ids[0])
}

// TestBackendPanicInLockFreesTheQueue: a backend whose Lock panics leaves
// this process's queue for the lock free: the next call gets the lock.
// Ablation: lockRemote without its deferred release on an early end turns
// it red (the second Mutate waits until its ctx ends).
func TestBackendPanicInLockFreesTheQueue(t *testing.T) {
	c := newMemCluster()
	b := &memBackend{Cluster: c, Panic: true}
	s, err := filetxn.NewStore("n.json", filetxn.JSON[memCount](), filetxn.WithBackend(b))
	require.NoError(t, err)
	require.Panics(t, func() { _, _ = s.Mutate(context.Background(), func(*memCount) error { return nil }) })
	b.Panic = false
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
	s, err := filetxn.NewStore("n.json", filetxn.JSON[memCount](), filetxn.WithBackend(c.Backend()))
	require.NoError(t, err)
	mine, err := s.Mutate(ctx, func(d *memCount) error { d.N = 1; return nil })
	require.NoError(t, err)
	owned, ok := mine.Digest()
	require.True(t, ok)
	before := c.Commits()
	commit, err := s.Restore(ctx, nil, owned)
	require.NoError(t, err)
	assert.True(t, commit.Written)
	_, there := c.Doc("n.json")
	assert.False(t, there)
	assert.Equal(t, before+1, c.Commits())
	commit, err = s.Restore(ctx, nil)
	require.NoError(t, err)
	assert.False(t, commit.Written)
	assert.Equal(t, before+1, c.Commits())
}

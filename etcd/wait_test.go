package etcd_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/etcd"
	"github.com/filetxn/filetxn/lock"
)

// queue returns the leases of the keys queued for the lock at prefix, in
// queue order (the holder first), waiting until there are n.
func queue(t *testing.T, cl *clientv3.Client, prefix string, n int) []clientv3.LeaseID {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		resp, err := cl.Get(testCtx(t), prefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		require.NoError(t, err)
		if len(resp.Kvs) == n {
			var q []clientv3.LeaseID
			for _, kv := range resp.Kvs {
				q = append(q, clientv3.LeaseID(kv.Lease))
			}
			return q
		}
		require.True(t, time.Now().Before(deadline), "%d keys under %s, want %d", len(resp.Kvs), prefix, n)
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLocksAreEtcdMutexes: a lock is the concurrency.Mutex (and etcdctl
// lock) at prefix/locks/escaped-name, as docs/formats/etcd.md says: one held
// by either excludes the other.
func TestLocksAreEtcdMutexes(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	sess, err := concurrency.NewSession(c.Client(t))
	require.NoError(t, err)
	defer sess.Close()
	m := concurrency.NewMutex(sess, "mx/locks/docs%2Fn.json")
	require.NoError(t, m.Lock(ctx))
	b := newBackend(t, c, "mx")
	_, err = b.Lock(ctx, "docs/n.json", false)
	require.ErrorIs(t, err, lock.ErrWouldBlock, "Lock while a concurrency.Mutex holds it")
	require.NoError(t, m.Unlock(ctx))

	h, err := b.Lock(ctx, "docs/n.json", false)
	require.NoError(t, err)
	require.ErrorIs(t, m.TryLock(ctx), concurrency.ErrLocked, "TryLock of the mutex while the Backend holds it")
	require.NoError(t, h.Release())
	require.NoError(t, m.TryLock(ctx), "TryLock after Release")
	require.NoError(t, m.Unlock(ctx))
}

// TestWaitOutlivesItsLease: a waiter whose lease ends while it waits (as
// one that expires) queues again at once in a new session, takes the lock
// when it is released, and commits. Ablations: a wait that watches only the
// key before its own turns it red (it queues again only at the release);
// a Lock that fails when its session's key vanishes, too.
func TestWaitOutlivesItsLease(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	raw := c.Client(t)
	other := newBackend(t, c, "wl")
	h, err := other.Lock(ctx, "n.json", true)
	require.NoError(t, err)
	s, err := filetxn.NewStore("n.json", filetxn.JSON[count](), filetxn.WithBackend(newBackend(t, c, "wl")))
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := s.Mutate(ctx, func(d *count) error { d.N++; return nil })
		errc <- err
	}()
	q := queue(t, raw, "wl/locks/n.json/", 2)
	_, err = raw.Revoke(ctx, q[1])
	require.NoError(t, err)
	q2 := queue(t, raw, "wl/locks/n.json/", 2) // queued again, on a new lease
	assert.NotEqual(t, q[1], q2[1], "the waiter's lease")
	select {
	case err := <-errc:
		t.Fatalf("Mutate returned %v while the lock was held", err)
	default:
	}
	require.NoError(t, h.Release())
	require.NoError(t, <-errc, "Mutate after the release")
	got, err := s.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, got.N)
}

// TestWaitEndsWithCtxWhenTheClusterIsGone: a wait whose ctx ends while no
// member is reachable returns (well before the harness's bound), its clean
// up bounded too. Ablation: waiting with concurrency.Mutex.Lock, whose
// clean-up after a canceled wait has no deadline, turns it red (Lock
// returns only when a member is back).
func TestWaitEndsWithCtxWhenTheClusterIsGone(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	other, err := etcd.New(c.Client(t), "gone")
	require.NoError(t, err)
	_, err = other.Lock(ctx, "n.json", true)
	require.NoError(t, err)
	b, err := etcd.New(c.Client(t), "gone")
	require.NoError(t, err)
	wctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := b.Lock(wctx, "n.json", true)
		errc <- err
	}()
	queue(t, c.Client(t), "gone/locks/n.json/", 2)
	c.Kill(0)
	cancel()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(wait / 2):
		t.Fatal("Lock did not return after its ctx was canceled")
	}
	// The cluster is gone: the revokes fail, each after its timeout.
	var wg sync.WaitGroup
	wg.Go(func() { _ = b.Close() })
	wg.Go(func() { _ = other.Close() })
	wg.Wait()
}

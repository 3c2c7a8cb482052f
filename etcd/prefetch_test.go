package etcd_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/etcd"
	"github.com/filetxn/filetxn/lock"
)

// TestMutateSendsTwoRequestsWhenFree: a Mutate of a document whose lock is
// free (another session held it last) sends two requests, the lock's
// (which reads the document too) and the commit (which releases the lock
// too). Ablation: a Lock that does not read the document (mutex.doc left
// empty) makes it three, and this test red.
func TestMutateSendsTwoRequestsWhenFree(t *testing.T) {
	mutateRequests(t, "pf")
}

// TestMutateUnderALockPathSendsTwoRequests: a store whose lock is named
// apart from its document (WithLockPath, as a loop's state and a shared
// bmad-loop lock are) sends two requests a Mutate too, once a hold of the
// lock has read the document: the next Lock reads that document with the
// lock. Ablation: Lock reading the document named for the lock alone
// (firstRead returning name) makes it three, and this test red.
func TestMutateUnderALockPathSendsTwoRequests(t *testing.T) {
	mutateRequests(t, "pl", filetxn.WithLockPath("locks/n.lock"))
}

// mutateRequests checks that, after a first Mutate that makes the session,
// each Mutate of a counter store made with opts on a Backend at prefix
// sends two requests when another session held the lock last (a rival
// Backend on another client, closed after its own Mutate so that it keeps
// nothing), and that the counter counts them all.
func mutateRequests(t *testing.T, prefix string, opts ...filetxn.Option) {
	ctx := testCtx(t)
	c := startCluster(t)
	var sent atomic.Int64
	counting := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		sent.Add(1)
		return invoke(ctx, method, req, reply, cc, opts...)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(counting)}})
	require.NoError(t, err)
	defer cli.Close()
	rivalCli := c.Client(t)
	store := func(b *etcd.Backend) *filetxn.Store[*count] {
		s, err := filetxn.NewStore("n.json", filetxn.JSON[count](), append([]filetxn.Option{filetxn.WithBackend(b)}, opts...)...)
		require.NoError(t, err)
		return s
	}
	b, err := etcd.New(cli, prefix)
	require.NoError(t, err)
	defer b.Close()
	s := store(b)
	inc := func(d *count) error { d.N++; return nil }
	_, err = s.Mutate(ctx, inc) // makes the session
	require.NoError(t, err)
	const n = 5
	var got int64
	for range n {
		rival, err := etcd.New(rivalCli, prefix)
		require.NoError(t, err)
		_, err = store(rival).Mutate(ctx, inc) // b's keeper releases the lock to it
		require.NoError(t, err)
		require.NoError(t, rival.Close()) // its lease, and the lock it kept, go
		before := sent.Load()
		_, err = s.Mutate(ctx, inc)
		require.NoError(t, err)
		got += sent.Load() - before
	}
	assert.Equal(t, int64(2*n), got, "requests of %d Mutates", n)
	v, err := s.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2*n+1, v.N, "the counter")
}

// TestPrefetchedReadIsFenced: a document written by another client after
// Lock read it along with the lock is not returned fresh by Read (Lock's
// read is returned), and the Commit is refused with lock.ErrLockLost, as
// for any document written since it was read. Ablation: a Commit that
// does not compare the documents read turns it red.
func TestPrefetchedReadIsFenced(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	b := newBackend(t, c, "pr")
	other := c.Client(t)
	_, err := other.Put(ctx, "pr/docs/n.json", "one")
	require.NoError(t, err)
	h, err := b.Lock(ctx, "n.json", true)
	require.NoError(t, err)
	defer h.Release()
	_, err = other.Put(ctx, "pr/docs/n.json", "two")
	require.NoError(t, err)
	data, err := h.Read(ctx, "n.json")
	require.NoError(t, err)
	assert.Equal(t, "one", string(data), "Read under a lock taken before the write")
	err = b.Commit(ctx, []filetxn.Held{h}, []filetxn.Put{{Name: "n.json", Data: []byte("three")}}, true)
	require.ErrorIs(t, err, lock.ErrLockLost, "Commit after another client's write")
	resp, err := other.Get(ctx, "pr/docs/n.json")
	require.NoError(t, err)
	assert.Equal(t, "two", string(resp.Kvs[0].Value), "the document after the refused Commit")
}

package etcd_test

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.etcd.io/etcd/server/v3/etcdserver/txn"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/etcd"
	"github.com/filetxn/filetxn/etcd/internal/etcdtest"
	"github.com/filetxn/filetxn/internal/testkit"
	"github.com/filetxn/filetxn/lock"
)

// handOver bounds a hand-over of a kept lock in these tests: far less than
// the session TTL (60 s), after which an expired lease would free the lock
// even if nobody released it.
const handOver = 20 * time.Second

// counterStore returns the store of n.json on b.
func counterStore(t *testing.T, b *etcd.Backend) *filetxn.Store[*count] {
	t.Helper()
	s, err := filetxn.NewStore("n.json", filetxn.JSON[count](), filetxn.WithBackend(b))
	require.NoError(t, err)
	return s
}

func inc(d *count) error { d.N++; return nil }

// lockKeys returns the keys of the lock of n.json under prefix, with their
// values.
func lockKeys(t *testing.T, cl *clientv3.Client, prefix string) map[string]string {
	t.Helper()
	resp, err := cl.Get(testCtx(t), prefix+"/locks/n.json/", clientv3.WithPrefix())
	require.NoError(t, err)
	m := map[string]string{}
	for _, kv := range resp.Kvs {
		m[string(kv.Key)] = string(kv.Value)
	}
	return m
}

// TestKeptLockMutateWritesOnce: after a first Mutate, each Mutate of a
// document no other session wants is one request, the commit: the lock is
// kept, and the document read is the one the last commit wrote; the
// session's lock key stays, marked kept. Ablations: a Commit with release
// that always deletes the key (the nested transaction's Then doing the
// Else) makes it two writes a Mutate, and a keeper that ignores its cached
// document (lockKept always reading) two requests: each turns it red.
func TestKeptLockMutateWritesOnce(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	var sent, writes atomic.Int64
	counting := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		sent.Add(1)
		if r, ok := req.(*pb.TxnRequest); ok && !txn.IsTxnReadonly(r) {
			writes.Add(1)
		}
		return invoke(ctx, method, req, reply, cc, opts...)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(counting)}})
	require.NoError(t, err)
	defer cli.Close()
	b, err := etcd.New(cli, "kw")
	require.NoError(t, err)
	defer b.Close()
	s := counterStore(t, b)
	_, err = s.Mutate(ctx, inc) // makes the session, keeps the lock
	require.NoError(t, err)
	const n = 5
	before, wbefore := sent.Load(), writes.Load()
	for range n {
		_, err := s.Mutate(ctx, inc)
		require.NoError(t, err)
	}
	// The keeper's watch reads the queue once if it began after a write.
	assert.InDelta(t, int64(n), sent.Load()-before, 1, "requests of %d Mutates", n)
	assert.Equal(t, int64(n), writes.Load()-wbefore, "writes of %d Mutates", n)
	got, err := s.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, n+1, got.N, "the counter")
	vals := lockKeys(t, c.Client(t), "kw")
	require.Len(t, vals, 1, "lock keys after the Mutates")
	for _, v := range vals {
		assert.Equal(t, "kept", v, "the kept key's value")
	}
}

// TestKeptLockPassesOn: a lock kept idle by one Backend is released to
// whoever asks, well before its lease would expire: another Backend's
// Mutate, a plain concurrency.Mutex (the protocol of etcdctl lock), and
// a Lock without wait; and the keeper takes it back after each. Ablation:
// a keeper that does not watch its queue (watchKept returning at once)
// turns each red (the waiter times out, or is refused after the bound).
func TestKeptLockPassesOn(t *testing.T) {
	c := startCluster(t)
	keeper := newBackend(t, c, "kp")
	ks := counterStore(t, keeper)
	for _, tc := range []struct {
		name string
		take func(ctx context.Context, t *testing.T) // takes the lock, once, and releases it
	}{
		{"another Backend", func(ctx context.Context, t *testing.T) {
			_, err := counterStore(t, newBackend(t, c, "kp")).Mutate(ctx, inc)
			require.NoError(t, err, "Mutate of another Backend")
		}},
		{"concurrency.Mutex", func(ctx context.Context, t *testing.T) {
			sess, err := concurrency.NewSession(c.Client(t))
			require.NoError(t, err)
			defer sess.Close()
			m := concurrency.NewMutex(sess, "kp/locks/n.json")
			require.NoError(t, m.Lock(ctx), "concurrency.Mutex.Lock")
			require.NoError(t, m.Unlock(ctx))
		}},
		{"a Lock without wait", func(ctx context.Context, t *testing.T) {
			h, err := newBackend(t, c, "kp").Lock(ctx, "n.json", false)
			require.NoError(t, err, "Lock(wait=false) of another Backend")
			require.NoError(t, h.Release())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			_, err := ks.Mutate(ctx, inc)
			require.NoError(t, err, "the keeper's Mutate")
			require.Len(t, lockKeys(t, c.Client(t), "kp"), 1, "lock keys: the kept one")
			hctx, cancel := context.WithTimeout(ctx, handOver)
			defer cancel()
			tc.take(hctx, t)
			_, err = ks.Mutate(ctx, inc)
			require.NoError(t, err, "the keeper's Mutate after")
		})
	}
}

// TestNoWaitRefusedWhileKeptLockBusy: a Lock without wait, while a hold
// of a kept lock is busy, is refused with lock.ErrWouldBlock on the
// holder's answer (the busy mark on its key), not by the bound; the
// hold then commits. Ablation: a keeper that does not mark (mark doing
// nothing) turns it red (no mark is seen; the refusal comes by the bound).
func TestNoWaitRefusedWhileKeptLockBusy(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	raw := c.Client(t)
	b := newBackend(t, c, "nb")
	s := counterStore(t, b)
	_, err := s.Mutate(ctx, inc) // keeps the lock
	require.NoError(t, err)
	h, err := b.Lock(ctx, "n.json", true) // from the kept key: busy
	require.NoError(t, err)
	now, err := raw.Get(ctx, "nb/")
	require.NoError(t, err)
	wch := raw.Watch(ctx, "nb/locks/n.json/", clientv3.WithPrefix(), clientv3.WithRev(now.Header.Revision+1))
	_, err = newBackend(t, c, "nb").Lock(ctx, "n.json", false)
	require.ErrorIs(t, err, lock.ErrWouldBlock, "Lock(wait=false) while the kept lock is busy")
	marked := false
	for !marked {
		select {
		case wr := <-wch:
			for _, ev := range wr.Events {
				marked = marked || ev.Type == clientv3.EventTypePut && string(ev.Kv.Value) == "busy"
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no waiter key was marked busy")
		}
	}
	data, err := h.Read(ctx, "n.json")
	require.NoError(t, err)
	assert.JSONEq(t, `{"N":1}`, string(data))
	require.NoError(t, b.Commit(ctx, []filetxn.Held{h}, []filetxn.Put{{Name: "n.json", Data: []byte(`{"N":2}`)}}, true), "Commit of the busy hold")
	require.NoError(t, h.Release())
}

// TestNoWaitDuringTheConfirmingRead: a Lock without wait that queues
// while the keeper's next Lock is confirming its key (the kept lock's
// read-only transaction, held here by an interceptor, before or after the
// server answers it; the last hold wrote no bytes of n.json to keep, so
// that read is sent) gets the documented answer, promptly, by the
// keeper's doing and not by the bound. Queued before the read is served, no hold has the
// lock: the read's compare of the queue fails, the keeper hands the key
// over, the Lock without wait takes the lock, and the keeper's Lock
// queues anew behind it. Queued after, the keeper's hold has the lock: the
// waiter, seen by the keeper's watch while it confirms, is marked busy
// once the hold begins, and gives up on that mark. Ablations: a keeper
// that drops its state on a failed confirming read without deleting its
// key (dropLocked instead of handOver) turns the first red (refused after
// the bound); one that forgets a waiter that will not wait seen while it
// confirms (waiterCame's acquiring case ignoring it) turns the second red
// (no busy mark; refused after the bound).
func TestNoWaitDuringTheConfirmingRead(t *testing.T) {
	c := startCluster(t)
	raw := c.Client(t)
	for _, tc := range []struct {
		prefix string
		served bool // the read is held after the server answered it
	}{
		{"nr1", false},
		{"nr2", true},
	} {
		t.Run(fmt.Sprintf("served=%v", tc.served), func(t *testing.T) {
			ctx := testCtx(t)
			b, read := heldReadBackend(t, c, tc.prefix, tc.served)
			q := tc.prefix + "/locks/n.json/"
			// Keep the lock with no cached bytes of n.json: the hold commits
			// another document, so the next Lock reads to confirm its key.
			keepAfterWriting(ctx, t, b, "other.json")
			require.Equal(t, []string{"kept"}, slices.Collect(maps.Values(lockKeys(t, raw, tc.prefix))), "lock keys: the kept one")
			time.Sleep(50 * time.Millisecond) // past the session's 10 ms run: the read compares the queue too
			read.arm()
			kept := make(chan lockResult, 1)
			go func() { kept <- lockOf(ctx, b, true) }()
			testkit.Recv(t, read.held, "the keeper's confirming read")
			now, err := raw.Get(ctx, tc.prefix+"/")
			require.NoError(t, err)
			wch := raw.Watch(ctx, q, clientv3.WithPrefix(), clientv3.WithRev(now.Header.Revision+1))
			nctx, cancel := context.WithTimeout(ctx, handOver)
			defer cancel()
			noWait := make(chan lockResult, 1)
			go func() { noWait <- lockOf(nctx, newBackend(t, c, tc.prefix), false) }()
			if tc.served {
				testkit.Recv(t, read.sawNoWait, "the keeper's watch of the waiter")
				// Its watch hands the waiter to the keeper, still confirming (if
				// later, the hold is busy and marks it all the same: only the
				// second ablation's failure needs the pause).
				time.Sleep(200 * time.Millisecond)
			} else {
				queue(t, raw, q, 2)
			}
			read.release()
			got := testkit.Recv(t, noWait, "the Lock without wait")
			require.NoError(t, nctx.Err(), "the Lock without wait's ctx: it was answered before it ended")
			if !tc.served {
				require.NoError(t, got.err, "Lock(wait=false) queued before the keeper's confirming read was served")
				require.NoError(t, got.h.Release())
				k := testkit.Recv(t, kept, "the keeper's Lock, queued anew")
				require.NoError(t, k.err, "the keeper's Lock after the hand-over")
				require.NoError(t, k.h.Release())
				return
			}
			require.ErrorIs(t, got.err, lock.ErrWouldBlock, "Lock(wait=false) queued after the keeper's confirming read was served")
			assert.True(t, markedBusy(t, wch), "the waiter's key was marked busy before it went")
			k := testkit.Recv(t, kept, "the keeper's Lock")
			require.NoError(t, k.err, "the keeper's Lock")
			_, err = k.h.Read(ctx, "n.json")
			require.NoError(t, err)
			require.NoError(t, b.Commit(ctx, []filetxn.Held{k.h}, []filetxn.Put{{Name: "n.json", Data: []byte(`{"N":1}`)}}, true), "Commit of the keeper's hold")
			require.NoError(t, k.h.Release())
		})
	}
}

// keepAfterWriting takes the lock of n.json on b, reads n.json and
// commits {} to the document name with release: b's session keeps the
// lock, and the bytes, if name is n.json.
func keepAfterWriting(ctx context.Context, t *testing.T, b *etcd.Backend, name string) {
	t.Helper()
	h, err := b.Lock(ctx, "n.json", true)
	require.NoError(t, err)
	_, err = h.Read(ctx, "n.json")
	require.NoError(t, err)
	require.NoError(t, b.Commit(ctx, []filetxn.Held{h}, []filetxn.Put{{Name: name, Data: []byte(`{}`)}}, true))
	require.NoError(t, h.Release())
}

// A lockResult is what a Lock returned.
type lockResult struct {
	h   filetxn.Held
	err error
}

func lockOf(ctx context.Context, b *etcd.Backend, wait bool) lockResult {
	h, err := b.Lock(ctx, "n.json", wait)
	return lockResult{h, err}
}

// markedBusy reports whether the watch wch of a lock's queue, from before
// a waiter that will not wait queued, saw busy put in that waiter's key
// before the key's deletion.
func markedBusy(t *testing.T, wch clientv3.WatchChan) bool {
	t.Helper()
	var waiter string
	for {
		wr := testkit.Recv(t, wch, "the waiter key's events")
		require.NoError(t, wr.Err())
		for _, ev := range wr.Events {
			key, val := string(ev.Kv.Key), string(ev.Kv.Value)
			switch {
			case ev.Type == clientv3.EventTypePut && val == "nowait":
				waiter = key
			case key != waiter:
			case ev.Type == clientv3.EventTypePut && val == "busy":
				return true
			case ev.Type == clientv3.EventTypeDelete:
				return false
			}
		}
	}
}

// A heldRead holds back the next confirming read of a kept lock (the
// read-only transaction with compares that a Lock sends to take a kept
// key) of one Backend, once armed, until released: before the server
// answers it or, if served, after.
type heldRead struct {
	served    bool
	armed     atomic.Bool
	held      chan struct{} // gets a value when the read is held
	resume    chan struct{} // closed by release
	sawNoWait chan struct{} // gets a value when the Backend's watch first sees a key put with value nowait
	once      sync.Once
}

func (r *heldRead) arm()     { r.armed.Store(true) }
func (r *heldRead) release() { close(r.resume) }

// heldReadBackend returns a Backend at prefix on a client of its own whose
// confirming reads r holds back.
func heldReadBackend(t *testing.T, c *etcdtest.Cluster, prefix string, served bool) (*etcd.Backend, *heldRead) {
	t.Helper()
	r := &heldRead{served: served, held: make(chan struct{}, 1), resume: make(chan struct{}), sawNoWait: make(chan struct{}, 1)}
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		tr, ok := req.(*pb.TxnRequest)
		if !ok || len(tr.Compare) == 0 || !txn.IsTxnReadonly(tr) || !r.armed.CompareAndSwap(true, false) {
			return invoke(ctx, method, req, reply, cc, opts...)
		}
		var err error
		if r.served {
			err = invoke(ctx, method, req, reply, cc, opts...)
		}
		r.held <- struct{}{}
		<-r.resume
		if !r.served {
			err = invoke(ctx, method, req, reply, cc, opts...)
		}
		return err
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		cs, err := streamer(ctx, desc, cc, method, opts...)
		return &noWaitSeen{ClientStream: cs, r: r}, err
	}
	return interceptedBackend(t, c, prefix, grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)), r
}

// A noWaitSeen tells its heldRead when a watch response it receives puts
// a key with value nowait.
type noWaitSeen struct {
	grpc.ClientStream
	r *heldRead
}

func (s *noWaitSeen) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if wr, ok := m.(*pb.WatchResponse); ok && err == nil {
		for _, ev := range wr.Events {
			if ev.Type == mvccpb.PUT && string(ev.Kv.Value) == "nowait" {
				s.r.once.Do(func() { s.r.sawNoWait <- struct{}{} })
			}
		}
	}
	return err
}

// TestKeptLockLostIsTakenAgain: a kept key that is lost (its lease
// revoked, or the key deleted by someone) costs no update. The keeper's
// watch notices the loss, so a Mutate a moment later takes the lock again
// normally, and reads the document as another client wrote it meanwhile.
// A Mutate sent before the watch has noticed (its watch events held back
// here) runs fn on the document its session last wrote: the fence refuses
// that commit (lock.ErrLockLost, nothing written), and the next Mutate
// succeeds. Ablations: a Commit that compares neither the lock's key nor
// the document turns the held-back rounds red (no refusal; the other
// client's write is overwritten); a keeper whose watch ignores the
// deletion of its own key turns the rounds that lose the lock without a
// write red (their Mutate is refused).
func TestKeptLockLostIsTakenAgain(t *testing.T) {
	c := startCluster(t)
	raw := c.Client(t)
	for _, tc := range []struct {
		name string
		lose func(ctx context.Context, t *testing.T, key string, lease clientv3.LeaseID)
	}{
		{"lease revoked", func(ctx context.Context, t *testing.T, _ string, lease clientv3.LeaseID) {
			_, err := raw.Revoke(ctx, lease)
			require.NoError(t, err)
		}},
		{"key deleted", func(ctx context.Context, t *testing.T, key string, _ clientv3.LeaseID) {
			_, err := raw.Delete(ctx, key)
			require.NoError(t, err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			b, holdBack := heldBackBackend(t, c, "kl")
			s := counterStore(t, b)
			_, err := s.Mutate(ctx, inc)
			require.NoError(t, err)
			for i := range 6 {
				ks := keys(t, raw, "kl/locks/n.json/")
				require.Len(t, ks, 1, "the kept key, round %d", i)
				write, at := i%3 != 2, i%3 == 0
				want := 10 * i
				if !write {
					v, err := s.View(ctx)
					require.NoError(t, err)
					want = v.N
				}
				if at {
					time.Sleep(time.Second) // the keeper's watches are made (they would read the write)
					holdBack.Store(true)
				}
				for k, lease := range ks {
					tc.lose(ctx, t, k, lease)
				}
				if write {
					_, err = raw.Put(ctx, "kl/docs/n.json", fmt.Sprintf(`{"N":%d}`, want))
					require.NoError(t, err)
				}
				if at {
					_, err = s.Mutate(ctx, inc)
					holdBack.Store(false)
					require.ErrorIs(t, err, lock.ErrLockLost, "Mutate at once after the kept key was lost, round %d", i)
				} else {
					time.Sleep(time.Second) // the watch's events arrive
				}
				_, err = s.Mutate(ctx, inc)
				require.NoError(t, err, "Mutate after the kept key was lost, round %d", i)
				got, err := s.View(ctx)
				require.NoError(t, err)
				require.Equal(t, want+1, got.N, "the counter, round %d", i)
			}
		})
	}
}

// heldBackBackend returns a Backend at prefix on a client of its own
// whose watch streams (and the lease's keep-alives) receive each message
// 300 ms late while the flag returned is set: a keeper then reports a write
// or a lost key only after the test's next call.
func heldBackBackend(t *testing.T, c *etcdtest.Cluster, prefix string) (*etcd.Backend, *atomic.Bool) {
	t.Helper()
	on := new(atomic.Bool)
	slow := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		cs, err := streamer(ctx, desc, cc, method, opts...)
		return &heldBackStream{ClientStream: cs, on: on}, err
	}
	return interceptedBackend(t, c, prefix, grpc.WithChainStreamInterceptor(slow)), on
}

// interceptedBackend returns a Backend at prefix on interceptedClient(t,
// c, opts...), which it closes, and then the client, when the test ends.
func interceptedBackend(t *testing.T, c *etcdtest.Cluster, prefix string, opts ...grpc.DialOption) *etcd.Backend {
	t.Helper()
	cli := interceptedClient(t, c, opts...)
	b, err := etcd.New(cli, prefix)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, b.Close(), "Close")
		assert.NoError(t, cli.Close(), "client Close")
	})
	return b
}

// interceptedClient returns a client of its own on c, dialled with opts
// (its interceptors); if the test has not closed it, it is closed when the
// test ends.
func interceptedClient(t *testing.T, c *etcdtest.Cluster, opts ...grpc.DialOption) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(), DialOptions: opts})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() }) // a second Close only returns an error
	return cli
}

// writtenBehindItsBack returns a counter store on a Backend at prefix
// that keeps the lock of n.json and the bytes {"N":1} it wrote, after a
// client that takes no lock wrote {"N":5} there, with the Backend's watch
// events held back: its next Mutate starts on the kept, stale bytes. The
// caller ends the holding back (holdBack.Store(false)) after that Mutate.
func writtenBehindItsBack(t *testing.T, c *etcdtest.Cluster, prefix string) (*filetxn.Store[*count], *atomic.Bool) {
	t.Helper()
	ctx := testCtx(t)
	b, holdBack := heldBackBackend(t, c, prefix)
	s := counterStore(t, b)
	_, err := s.Mutate(ctx, func(d *count) error { d.N = 1; return nil })
	require.NoError(t, err)
	time.Sleep(time.Second) // the keeper's watches are made (they would read the write)
	holdBack.Store(true)
	_, err = c.Client(t).Put(ctx, prefix+"/docs/n.json", `{"N":5}`)
	require.NoError(t, err)
	return s, holdBack
}

// A heldBackStream delays each message it receives by 300 ms while on
// is set.
type heldBackStream struct {
	grpc.ClientStream
	on *atomic.Bool
}

func (s *heldBackStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if s.on.Load() {
		time.Sleep(300 * time.Millisecond)
	}
	return err
}

// TestKeptLockSeesAWriteWithoutTheLock: a write to a kept lock's document
// by a client that takes no lock (an etcdctl put) is seen by the keeper's
// watch of the document: a Mutate a moment later reads it, instead of the
// bytes its session last wrote, and succeeds. Ablation: a keeper without
// the document's watch (watchKept passing no dch) turns it red (the commit
// is refused: the document was written since the bytes fn got).
func TestKeptLockSeesAWriteWithoutTheLock(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	raw := c.Client(t)
	b := newBackend(t, c, "kw2")
	s := counterStore(t, b)
	_, err := s.Mutate(ctx, inc)
	require.NoError(t, err)
	for i := range 5 {
		_, err = s.Mutate(ctx, inc) // the session keeps the lock, and what it wrote
		require.NoError(t, err)
		_, err = raw.Put(ctx, "kw2/docs/n.json", fmt.Sprintf(`{"N":%d}`, 100*i))
		require.NoError(t, err)
		time.Sleep(500 * time.Millisecond)
		_, err = s.Mutate(ctx, inc)
		require.NoError(t, err, "Mutate after a write without the lock, round %d", i)
		got, err := s.View(ctx)
		require.NoError(t, err)
		require.Equal(t, 100*i+1, got.N, "the counter, round %d", i)
	}
	require.Len(t, keys(t, raw, "kw2/locks/n.json/"), 1, "the lock kept throughout")
}

// TestCloseEndsTheKeepersWatches: Close ends what a Backend that keeps
// locks runs (the keepers' watches, their hand-overs and run timers,
// counted in b.wg), even when the cluster cannot be reached (the revoke
// fails, the kept keys stay until their lease expires). Its client's
// interceptor holds back Close's revoke, and the delete of a hand-over
// (a waiter came for c.json), until the test lets them go: the watches
// end while the revoke is pending, all but the one in its hand-over;
// Close does not return until that one has ended too; then no watch is
// left open on the client (reachable), and once the client is closed no
// goroutine is left. A Close while a keeper's run timer is pending (a
// kept lock taken again within the 10 ms run; the rounds that were, by
// the requests' times, are counted, and a machine too slow for any skips
// the case) returns. Ablations, each red: keepers whose watch is bound
// neither to the Backend's life nor to Close (a context of their own,
// never dropped: the watches outlive the revoke); a Close that does not
// drop the keepers (its loop over b.kept removed: the watches run until
// the revoke is over); a Close that does not wait for b.wg (it returns
// during the hand-over's delete); a document watch made on a context
// that the watch's cancel does not end (context.WithoutCancel(wctx): a
// watch stays open on the client); a dropLocked that stops a pending
// timer without counting it done in b.wg (Close waits for ever). Not red,
// and harmless: binding the watches to the Backend's life alone, or to
// Close's drop alone (either ends them); a Close that does not cancel the
// Backend's life (the drop ended the watches); a dropLocked that does not
// stop the timer (its function runs at the run's end, finds the keeper
// dropped and counts itself done).
func TestCloseEndsTheKeepersWatches(t *testing.T) {
	for _, reachable := range []bool{true, false} {
		t.Run(fmt.Sprintf("reachable=%v", reachable), func(t *testing.T) {
			ctx := testCtx(t)
			c := startCluster(t)
			raw := c.Client(t)
			assert.Empty(t, keys(t, raw, "ce/"), "keys before") // raw's connection is up
			base := settledGoroutines(-1)
			cl, p := closeProbeClient(t, c)
			b, err := etcd.New(cl, "ce", etcd.WithSessionTTL(time.Hour)) // no lease expires meanwhile, ending a watch
			require.NoError(t, err)
			for _, name := range []string{"a.json", "b.json", "c.json"} {
				s, err := filetxn.NewStore(name, filetxn.JSON[count](), filetxn.WithBackend(b))
				require.NoError(t, err)
				_, err = s.Mutate(ctx, inc)
				require.NoError(t, err)
			}
			require.Len(t, keys(t, raw, "ce/locks/"), 3, "kept lock keys")
			time.Sleep(50 * time.Millisecond) // past the session's 10 ms run: a waiter is served at once
			p.holdDelete.Store(true)
			lease, err := raw.Grant(ctx, 60)
			require.NoError(t, err)
			_, err = raw.Put(ctx, fmt.Sprintf("ce/locks/c.json/%x", int64(lease.ID)), "", clientv3.WithLease(lease.ID))
			require.NoError(t, err)
			testkit.Recv(t, p.deleting, "the hand-over's delete of c.json's key")
			if !reachable {
				c.Kill(0)
			}
			p.holdRevoke.Store(true)
			closed := make(chan error, 1)
			go func() { closed <- b.Close() }()
			testkit.Recv(t, p.revoking, "Close's revoke")
			waitUntil(t, "the watches but the hand-over's to end while the revoke is pending", func() bool { return keeperWatches() == 1 })
			close(p.revoke)
			testkit.Recv(t, p.revoked, "the revoke's answer")
			select {
			case err := <-closed:
				t.Fatalf("Close returned %v while a keeper's hand-over was still running", err)
			case <-time.After(500 * time.Millisecond):
			}
			close(p.deleted)
			err = testkit.Recv(t, closed, "Close")
			if reachable {
				require.NoError(t, err, "Close")
			} else {
				assert.Error(t, err, "Close with the cluster gone (its revoke fails)")
			}
			// (Each has called b.wg.Done, but may not have returned yet.)
			waitUntil(t, "the keepers' watches to end after Close", func() bool { return keeperWatches() == 0 })
			if reachable {
				// (Unreachable, the client itself keeps trying to open the
				// stream of a watch canceled meanwhile, until it is closed.)
				waitUntil(t, "the client's watch streams to end", func() bool { return p.watches.Load() == 0 })
			}
			require.NoError(t, cl.Close())
			if reachable {
				assert.Equal(t, base, settledGoroutines(base), "goroutines after Close")
			}
		})
	}
	t.Run("timer pending", func(t *testing.T) {
		ctx := testCtx(t)
		c := startCluster(t)
		cl, p := closeProbeClient(t, c)
		pending := 0
		for round := 0; round < 50 && pending < 3; round++ {
			b, err := etcd.New(cl, "ct")
			require.NoError(t, err)
			keepAfterWriting(ctx, t, b, "n.json")
			h, err := b.Lock(ctx, "n.json", true) // the kept lock, in the run: its timer is set
			require.NoError(t, err)
			closed := make(chan error, 1)
			go func() { closed <- b.Close() }()
			require.NoError(t, testkit.Recv(t, closed, "Close"), "Close, round %d", round)
			require.NoError(t, h.Release())
			// The run began after the lock's request was answered, and
			// Close dropped the keeper before it sent the revoke.
			if time.Duration(p.revokeAt.Load()-p.lockTaken.Load()) < etcd.RunFor {
				pending++
			}
		}
		if pending == 0 {
			t.Skip("no round closed its Backend within the run")
		}
		t.Logf("%d rounds closed their Backend within the run", pending)
	})
}

// keeperWatches returns how many goroutines are in a keeper's watch.
func keeperWatches() int {
	buf := make([]byte, 1<<22)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "(*Backend).watchKept(")
}

// A closeProbe watches the requests of a client (closeProbeClient's): it
// holds back, once armed, a delete and a lease's revoke until the test
// lets them go, counts the watch streams whose context has not ended (the
// client's, which it ends when it is done with the stream), and notes when
// the last lock's key was put and the last revoke sent.
type closeProbe struct {
	holdDelete, holdRevoke atomic.Bool
	deleting, revoking     chan struct{} // get a value when a delete, a revoke is held
	deleted, revoke        chan struct{} // closed to let them go
	revoked                chan struct{} // gets a value when the revoke let go is answered
	watches                atomic.Int64
	lockTaken, revokeAt    atomic.Int64 // Unix nanoseconds
}

// closeProbeClient returns a client of its own on c, and its probe.
func closeProbeClient(t *testing.T, c *etcdtest.Cluster) (*clientv3.Client, *closeProbe) {
	t.Helper()
	p := &closeProbe{deleting: make(chan struct{}, 1), revoking: make(chan struct{}, 1), revoked: make(chan struct{}, 1),
		deleted: make(chan struct{}), revoke: make(chan struct{})}
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		switch r := req.(type) {
		case *pb.DeleteRangeRequest:
			if p.holdDelete.CompareAndSwap(true, false) {
				p.deleting <- struct{}{}
				<-p.deleted
			}
		case *pb.LeaseRevokeRequest:
			p.revokeAt.Store(time.Now().UnixNano())
			if p.holdRevoke.CompareAndSwap(true, false) {
				p.revoking <- struct{}{}
				<-p.revoke
				defer func() { p.revoked <- struct{}{} }()
			}
		case *pb.TxnRequest:
			if len(r.Success) > 0 && r.Success[0].GetRequestPut().GetLease() != 0 {
				defer func() { p.lockTaken.Store(time.Now().UnixNano()) }() // a lock's key put
			}
		}
		return invoke(ctx, method, req, reply, cc, opts...)
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if method != "/etcdserverpb.Watch/Watch" {
			return streamer(ctx, desc, cc, method, opts...)
		}
		p.watches.Add(1)
		go func() {
			<-ctx.Done() // the client is done with the stream (or its attempt)
			p.watches.Add(-1)
		}()
		return streamer(ctx, desc, cc, method, opts...)
	}
	return interceptedClient(t, c, grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)), p
}

// settledGoroutines returns runtime.NumGoroutine once it is want, or once
// it has not changed for a while (want < 0, or after a bound).
func settledGoroutines(want int) int {
	n, same := runtime.NumGoroutine(), 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && n != want && same < 20; {
		time.Sleep(10 * time.Millisecond)
		if m := runtime.NumGoroutine(); m == n {
			same++
		} else {
			n, same = m, 0
		}
	}
	return n
}

// TestKeptLockWaiterDuringHoldIsServedAtItsEnd: a waiter that queues
// after a hold of a kept lock has committed (keeping the key), but before
// the hold is released, gets the lock at the Release. Ablation: a keep
// that makes the key idle without looking at the waiters seen during the
// hold (k.waiter ignored) turns it red (the waiter waits past handOver).
func TestKeptLockWaiterDuringHoldIsServedAtItsEnd(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	raw := c.Client(t)
	b := newBackend(t, c, "kh")
	_, err := counterStore(t, b).Mutate(ctx, inc) // keeps the lock
	require.NoError(t, err)
	h, err := b.Lock(ctx, "n.json", true) // from the kept key
	require.NoError(t, err)
	_, err = h.Read(ctx, "n.json")
	require.NoError(t, err)
	require.NoError(t, b.Commit(ctx, []filetxn.Held{h}, []filetxn.Put{{Name: "n.json", Data: []byte(`{"N":2}`)}}, true))
	require.Len(t, lockKeys(t, raw, "kh"), 1, "lock keys after the Commit: kept")
	other := newBackend(t, c, "kh")
	hctx, cancel := context.WithTimeout(ctx, handOver)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := counterStore(t, other).Mutate(hctx, inc)
		errc <- err
	}()
	queue(t, raw, "kh/locks/n.json/", 2)
	require.NoError(t, h.Release())
	require.NoError(t, <-errc, "the waiter's Mutate")
	got, err := counterStore(t, other).View(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, got.N, "the counter")
}

// TestNoWaitGivesUpOnASilentKeeper: a Lock without wait behind a key that
// says it is kept but whose session never answers (here a raw client's)
// fails with lock.ErrWouldBlock after the bound, not at ctx's end, and
// leaves no key behind. Ablation: askKeeper without its bound (waiting on
// ctx alone) turns it red.
func TestNoWaitGivesUpOnASilentKeeper(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	raw := c.Client(t)
	lease, err := raw.Grant(ctx, 60)
	require.NoError(t, err)
	_, err = raw.Put(ctx, fmt.Sprintf("ks/locks/n.json/%x", int64(lease.ID)), "kept", clientv3.WithLease(lease.ID))
	require.NoError(t, err)
	lctx, cancel := context.WithTimeout(ctx, handOver)
	defer cancel()
	_, err = newBackend(t, c, "ks").Lock(lctx, "n.json", false)
	require.ErrorIs(t, err, lock.ErrWouldBlock, "Lock(wait=false) behind a silent keeper")
	require.NoError(t, lctx.Err(), "the Lock's ctx: the bound, not ctx, ended the wait")
	assert.Len(t, lockKeys(t, raw, "ks"), 1, "lock keys after: the silent keeper's")
}

// TestKeptLockNoOpChecksItsCachedRead: a Mutate that changes nothing, run
// on the document its session last wrote (the lock kept, the keeper's
// watch held back so that it has not seen a write made without the lock),
// does not return success on what may be stale: its Release checks the
// lock and the document, and the Mutate fails with lock.ErrLockLost; the
// next one reads the write. Ablation: a Release that deletes the key
// without the check (check always false) turns it red (nil error).
func TestKeptLockNoOpChecksItsCachedRead(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	s, holdBack := writtenBehindItsBack(t, c, "kn")
	var saw int
	_, err := s.Mutate(ctx, func(d *count) error { saw = d.N; return nil })
	holdBack.Store(false)
	require.ErrorIs(t, err, lock.ErrLockLost, "a no-op Mutate on the cached document after a write without the lock")
	assert.Equal(t, 1, saw, "fn got the cached document")
	_, err = s.Mutate(ctx, func(d *count) error { saw = d.N; return nil })
	require.NoError(t, err)
	assert.Equal(t, 5, saw, "the next Mutate reads the write")
}

// TestKeptLockRunEnds: a process that Mutates one document without pause
// keeps its lock only for a short run while another session waits: the
// waiter's Mutate is done long before the busy process stops. Ablation:
// a run that never ends (inRun always true, runOver never releasing)
// turns it red (the waiter waits until the busy process stops).
func TestKeptLockRunEnds(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	busy := counterStore(t, newBackend(t, c, "kr"))
	waiter := counterStore(t, newBackend(t, c, "kr"))
	stop := make(chan struct{})
	done := make(chan error, 1)
	var n atomic.Int64
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, err := busy.Mutate(ctx, inc); err != nil {
				done <- err
				return
			}
			n.Add(1)
		}
	}()
	for n.Load() < 20 {
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := waiter.Mutate(wctx, inc)
	cancel()
	took := time.Since(start)
	close(stop)
	require.NoError(t, <-done, "the busy process's Mutates")
	require.NoError(t, err, "the waiter's Mutate, while another process Mutates without pause")
	t.Logf("the waiter waited %v; the busy process made %d Mutates", took, n.Load())
	got, err := busy.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, int(n.Load())+1, got.N, "the counter")
}

// TestKeptLockProbedReadRefreshesTheCache: a probed Mutate (MutateProbed,
// as a ledger's Append is) first reads the document without the lock; a
// write made without the lock that this read finds makes the kept lock's
// cached document stale even before the keeper's watch (held back here)
// reports it, so the Mutate reads the document anew and succeeds on it.
// Ablation: a Backend whose reads do not mark the cache stale (sawDoc
// doing nothing) turns it red (the Mutate, run on the cached bytes, is
// refused with lock.ErrLockLost).
func TestKeptLockProbedReadRefreshesTheCache(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	s, holdBack := writtenBehindItsBack(t, c, "kp")
	_, err := s.MutateProbed(ctx, inc)
	holdBack.Store(false)
	require.NoError(t, err, "a probed Mutate after a write without the lock")
	got, err := s.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, 6, got.N, "the counter")
}

// TestReadAfterOwnWrite: under Locked, a Read of the document after the
// hold's own write of it returns the write, whether Lock read it with the
// lock or took the kept bytes. Ablation: a settle that keeps what Lock
// read (h.m.pre not dropped) turns it red (the Read returns the bytes from
// before the write).
func TestReadAfterOwnWrite(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	s := counterStore(t, newBackend(t, c, "ro"))
	for i := range 2 { // the first takes the lock anew, the second a kept one
		_, err := s.Mutate(ctx, func(d *count) error { d.N = 1; return nil })
		require.NoError(t, err)
		var got []byte
		err = s.Locked(ctx, func(tx *filetxn.Tx) error {
			if _, err := tx.Write("n.json", []byte(`{"N":7}`)); err != nil {
				return err
			}
			var err error
			got, err = tx.Read("n.json")
			return err
		})
		require.NoError(t, err)
		assert.Equal(t, `{"N":7}`, string(got), "read after own write, round %d", i)
	}
}

// TestKeptBytesAfterACommitAreNotRead: a hold that commits another
// document first and only then reads the kept lock's document reads it
// from the cluster, not the kept bytes, which a write without the lock
// (its report held back from the keeper's watch) made stale: the Locked
// call returns what was written. Ablation: the same settle ablation as
// TestReadAfterOwnWrite turns it red (it returns the stale kept bytes and
// no error).
func TestKeptBytesAfterACommitAreNotRead(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	s, holdBack := writtenBehindItsBack(t, c, "ks")
	var got []byte
	err := s.Locked(ctx, func(tx *filetxn.Tx) error {
		if _, err := tx.Read("other.json"); err != nil {
			return err
		}
		if _, err := tx.Write("other.json", []byte(`{}`)); err != nil {
			return err
		}
		var err error
		got, err = tx.Read("n.json")
		return err
	})
	holdBack.Store(false)
	require.NoError(t, err)
	assert.Equal(t, `{"N":5}`, string(got), "the document read after a commit")
}

// TestReleaseRetriesTheDelete: a Release whose delete of the lock's key
// fails once (a member dying under the request, here an interceptor that
// fails the first DeleteRange) tries again, so the next host takes the lock
// at once instead of after the session's TTL. Ablation: a deleteKey that
// gives up after one attempt turns it red (the session is orphaned, its
// key stays until its lease expires, and the other Lock times out).
func TestReleaseRetriesTheDelete(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	var failed atomic.Bool
	failOnce := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if method == "/etcdserverpb.KV/DeleteRange" && failed.CompareAndSwap(false, true) {
			return status.Error(codes.Unavailable, "injected: the member went away")
		}
		return invoke(ctx, method, req, reply, cc, opts...)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(failOnce)}})
	require.NoError(t, err)
	defer cli.Close()
	b, err := etcd.New(cli, "rd")
	require.NoError(t, err)
	defer b.Close()
	h, err := b.Lock(ctx, "n.json", true)
	require.NoError(t, err)
	require.NoError(t, h.Release(), "Release, its first delete failing")
	require.True(t, failed.Load(), "the delete failed once")
	other := newBackend(t, c, "rd")
	lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	h2, err := other.Lock(lctx, "n.json", true)
	require.NoError(t, err, "another Backend's Lock after the Release")
	require.NoError(t, h2.Release())
}

package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/etcd"
	"github.com/filetxn/filetxn/etcd/internal/etcdtest"
	"github.com/filetxn/filetxn/ledger"
	"github.com/filetxn/filetxn/lock"
)

// wait bounds every wait of these tests: long, so that a slow shared
// machine does not fail them; a test that is right never waits for it.
const wait = 2 * time.Minute

type count struct{ N int }

// rawCodec keeps a document's bytes as they are.
type rawCodec struct{}

func (rawCodec) Decode(data []byte) (*[]byte, error) {
	d := append([]byte(nil), data...)
	return &d, nil
}
func (rawCodec) Encode(d *[]byte) ([]byte, error) { return append([]byte(nil), *d...), nil }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// newBackend returns a Backend on a client of its own (a session of its
// own: another host, as far as the locks go), closed when the test ends.
func newBackend(t *testing.T, c *etcdtest.Cluster, prefix string, opts ...etcd.Option) *etcd.Backend {
	t.Helper()
	b, err := etcd.New(c.Client(t), prefix, opts...)
	require.NoError(t, err, "New(%q)", prefix)
	t.Cleanup(func() { assert.NoError(t, b.Close(), "Close") })
	return b
}

// keys returns the keys under prefix, with their leases.
func keys(t *testing.T, cl *clientv3.Client, prefix string) map[string]clientv3.LeaseID {
	t.Helper()
	resp, err := cl.Get(testCtx(t), prefix, clientv3.WithPrefix())
	require.NoError(t, err)
	m := map[string]clientv3.LeaseID{}
	for _, kv := range resp.Kvs {
		m[string(kv.Key)] = clientv3.LeaseID(kv.Lease)
	}
	return m
}

func TestNewRefusesBadArguments(t *testing.T) {
	cl, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:1"}})
	require.NoError(t, err)
	defer cl.Close()
	for _, tc := range []struct {
		name   string
		client *clientv3.Client
		prefix string
		opts   []etcd.Option
	}{
		{"nil client", nil, "p", nil},
		{"empty prefix", cl, "", nil},
		{"prefix ending in /", cl, "p/", nil},
		{"zero TTL", cl, "p", []etcd.Option{etcd.WithSessionTTL(0)}},
		{"negative limit", cl, "p", []etcd.Option{etcd.WithMaxRequestBytes(-1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := etcd.New(tc.client, tc.prefix, tc.opts...)
			assert.Nil(t, b)
			assert.ErrorIs(t, err, filetxn.ErrInvalidArgument, "New(%q) = %v, want ErrInvalidArgument", tc.prefix, err)
		})
	}
	b, err := etcd.New(cl, "/filetxn/p", etcd.WithSessionTTL(1500*time.Millisecond), etcd.WithMaxRequestBytes(1<<20))
	require.NoError(t, err, "New makes no request: an unreachable endpoint is fine")
	_, err = b.Lock(context.Background(), "", true)
	assert.ErrorIs(t, err, filetxn.ErrInvalidArgument, "Lock of an empty name")
	_, err = b.Get(context.Background(), "")
	assert.ErrorIs(t, err, filetxn.ErrInvalidArgument, "Get of an empty name")
	err = b.Commit(context.Background(), []filetxn.Held{nil}, nil, false)
	assert.ErrorIs(t, err, filetxn.ErrInvalidArgument, "Commit of a hold not of the backend")
	require.NoError(t, b.Close())
}

// TestStoreOnEtcd: a Store[D] with filetxn.JSON runs every operation on
// etcd, with the documented keys: the document at prefix/docs/name, the
// lock at prefix/locks/escaped-name/lease while held, and kept by the
// session after a Mutate that no other session waited for (its value
// "kept", on the session's lease).
func TestStoreOnEtcd(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	raw := c.Client(t)
	b := newBackend(t, c, "/t/store", etcd.WithSessionTTL(6500*time.Millisecond))
	s, err := filetxn.NewStore("proj/count.json", filetxn.JSON[count](), filetxn.WithBackend(b))
	require.NoError(t, err)

	got, err := s.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, got.N, "View of no document")
	commit, err := s.Mutate(ctx, func(d *count) error { d.N = 5; return nil })
	require.NoError(t, err)
	assert.True(t, commit.Written)
	resp, err := raw.Get(ctx, "/t/store/docs/proj/count.json")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	assert.JSONEq(t, `{"N":5}`, string(resp.Kvs[0].Value))
	kept := keys(t, raw, "/t/store/locks/")
	require.Len(t, kept, 1, "lock keys after Mutate")
	for k, lease := range kept {
		assert.Equal(t, fmt.Sprintf("/t/store/locks/proj%%2Fcount.json/%x", int64(lease)), k, "the kept lock key")
	}

	got, err = s.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, got.N)
	commit, err = s.MutateProbed(ctx, func(d *count) error { d.N = 5; return nil })
	require.NoError(t, err)
	assert.False(t, commit.Written, "MutateProbed of no change")

	snap := append([]byte(nil), resp.Kvs[0].Value...)
	commit, err = s.Mutate(ctx, func(d *count) error { d.N = 6; return nil })
	require.NoError(t, err)
	dg, ok := commit.Digest()
	require.True(t, ok)
	_, err = s.Restore(ctx, snap, dg)
	require.NoError(t, err)
	got, err = s.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, got.N, "View after Restore")
	_, err = s.Restore(ctx, []byte(`{"N":1}`))
	assert.ErrorIs(t, err, filetxn.ErrDiverged)

	err = s.Locked(ctx, func(tx *filetxn.Tx) error {
		held := keys(t, raw, "/t/store/locks/proj%2Fcount.json/")
		assert.Len(t, held, 1, "lock keys while held: %v", held)
		for k, lease := range held {
			assert.Equal(t, fmt.Sprintf("/t/store/locks/proj%%2Fcount.json/%x", int64(lease)), k)
			ttl, err := raw.TimeToLive(ctx, lease)
			require.NoError(t, err)
			assert.Equal(t, int64(7), ttl.GrantedTTL, "the lease's TTL for WithSessionTTL(6.5s)")
		}
		data, err := tx.Read("proj/count.json")
		require.NoError(t, err)
		assert.JSONEq(t, `{"N":5}`, string(data))
		if _, err := tx.Write("proj/other.txt", []byte("one")); err != nil {
			return err
		}
		_, err = tx.Write("proj/other.txt", []byte("two")) // a second commit of one hold
		return err
	})
	require.NoError(t, err)
	data, err := b.Get(ctx, "proj/other.txt")
	require.NoError(t, err)
	assert.Equal(t, "two", string(data))
	assert.Empty(t, keys(t, raw, "/t/store/locks/"), "lock keys after Locked")
}

// TestLedgerAndBoardOnEtcd: ledger.Open and board.Open on a Backend, and a
// MutateAll over both that is one transaction: both documents carry its
// one revision. Ablation: a Commit that sends each put as a transaction of
// its own turns it red (two revisions).
func TestLedgerAndBoardOnEtcd(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	raw := c.Client(t)
	b := newBackend(t, c, "proj")
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
	commit, err := ls.MutateProbed(ctx, func(*ledger.Doc) error { return nil })
	require.NoError(t, err)
	assert.False(t, commit.Written)

	commits, err := filetxn.MutateAll(ctx, []filetxn.Member{ls, bs}, func(m *filetxn.Multi) error {
		if _, err := ls.In(m).MarkDone(ids, "2026-12-02", "done"); err != nil {
			return err
		}
		_, err := bs.In(m).Advance("3-2-login", "done")
		return err
	})
	require.NoError(t, err)
	assert.True(t, commits[0].Written && commits[1].Written, "MutateAll = %v", commits)
	lr, err := raw.Get(ctx, "proj/docs/docs/deferred-work.md")
	require.NoError(t, err)
	br, err := raw.Get(ctx, "proj/docs/docs/sprint-status.yaml")
	require.NoError(t, err)
	require.Len(t, lr.Kvs, 1)
	require.Len(t, br.Kvs, 1)
	assert.Equal(t, lr.Kvs[0].ModRevision, br.Kvs[0].ModRevision, "the two documents' revisions: one transaction")

	ld, err := ls.View(ctx)
	require.NoError(t, err)
	e, ok := ld.Entry(ids[0])
	require.True(t, ok)
	assert.Contains(t, strings.ToLower(e.Status), "done")
	bd, err := bs.View(ctx)
	require.NoError(t, err)
	assert.Contains(t, string(bd.Bytes()), "3-2-login: done")
	assert.Len(t, keys(t, raw, "proj/locks/"), 2, "lock keys after MutateAll: kept, one a lock")

	// The ledger's Restore over the version its MutateAll wrote.
	dg, ok := commits[0].Digest()
	require.True(t, ok)
	snap, err := raw.Get(ctx, "proj/docs/docs/deferred-work.md", clientv3.WithRev(lr.Kvs[0].ModRevision-1))
	require.NoError(t, err)
	require.Len(t, snap.Kvs, 1)
	_, err = ls.Restore(ctx, snap.Kvs[0].Value, dg)
	require.NoError(t, err)
	ld, err = ls.View(ctx)
	require.NoError(t, err)
	e, ok = ld.Entry(ids[0])
	require.True(t, ok)
	assert.NotContains(t, strings.ToLower(e.Status), "done", "the entry after Restore")
}

// TestBackendsExcludeEachOther: two Backends on two clients (two sessions,
// as on two hosts), each with goroutines of its own, lose no increment.
// Ablation: a Lock that takes a mutex of its session's own (one that
// excludes no other host) turns it red: commits refused as written since
// their read, and lost increments once the document compares go too.
func TestBackendsExcludeEachOther(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	const backends, workers, each = 2, 3, 15
	var wg sync.WaitGroup
	for i := range backends {
		b := newBackend(t, c, "ex")
		s, err := filetxn.NewStore("n.json", filetxn.JSON[count](), filetxn.WithBackend(b))
		require.NoError(t, err)
		for w := range workers {
			wg.Go(func() {
				for k := range each {
					_, err := s.Mutate(ctx, func(d *count) error { d.N++; return nil })
					assert.NoError(t, err, "backend %d worker %d Mutate %d", i, w, k)
				}
			})
		}
	}
	wg.Wait()
	s, err := filetxn.NewStore("n.json", filetxn.JSON[count](), filetxn.WithBackend(newBackend(t, c, "ex")))
	require.NoError(t, err)
	got, err := s.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, backends*workers*each, got.N, "increments")
}

// TestLostLeaseRefusesCommit: a lease revoked under a hold (as one that
// expired) makes its Commit fail with lock.ErrLockLost and write nothing;
// the Backend then makes a new session for the next call. Ablation: a
// Commit without the IsOwner compares and the session check turns it red.
func TestLostLeaseRefusesCommit(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	raw := c.Client(t)
	b := newBackend(t, c, "lost")
	s, err := filetxn.NewStore("n.json", filetxn.JSON[count](), filetxn.WithBackend(b))
	require.NoError(t, err)
	_, err = s.Mutate(ctx, func(d *count) error { d.N = 1; return nil })
	require.NoError(t, err)

	_, err = s.Mutate(ctx, func(d *count) error {
		held := keys(t, raw, "lost/locks/n.json/")
		require.Len(t, held, 1)
		for _, lease := range held {
			_, err := raw.Revoke(ctx, lease)
			require.NoError(t, err)
		}
		d.N = 2
		return nil
	})
	require.ErrorIs(t, err, lock.ErrLockLost, "Mutate under a revoked lease")
	assert.Contains(t, err.Error(), "n.json")
	got, err := s.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, got.N, "the document after a refused commit")

	_, err = s.Mutate(ctx, func(d *count) error { d.N = 3; return nil })
	require.NoError(t, err, "Mutate on a new session")
	got, err = s.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, got.N)
}

// TestWrittenSinceReadRefused: a document written by someone else between
// a hold's Read and its Commit (a writer that ignores the lock) makes the
// Commit fail with lock.ErrLockLost naming the document. Ablation: a
// Commit without the documents' ModRevision compares turns it red.
func TestWrittenSinceReadRefused(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	raw := c.Client(t)
	b := newBackend(t, c, "since")
	s, err := filetxn.NewStore("n.json", filetxn.JSON[count](), filetxn.WithBackend(b))
	require.NoError(t, err)
	_, err = s.Mutate(ctx, func(d *count) error {
		_, err := raw.Put(ctx, "since/docs/n.json", `{"N":7}`)
		require.NoError(t, err)
		d.N = 1
		return nil
	})
	require.ErrorIs(t, err, lock.ErrLockLost)
	assert.Contains(t, err.Error(), "document n.json written since")
	got, err := s.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, 7, got.N)
}

// TestTooLargeRefusedBeforeAnyWrite: a MutateAll whose request would exceed
// the limit fails with ErrTooLarge naming the large document, and writes
// neither document; the largest request the check lets through (found by
// bisection) is one the cluster takes, so the check counts all it must.
// Ablation: a check that undercounts by the envelope and the size of the
// keys turns the bisection's end red (the cluster refuses it).
func TestTooLargeRefusedBeforeAnyWrite(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	b := newBackend(t, c, "big")
	small, err := filetxn.NewStore("small.json", filetxn.JSON[count](), filetxn.WithBackend(b))
	require.NoError(t, err)
	big, err := filetxn.NewStore("big.txt", rawCodec{}, filetxn.WithBackend(b))
	require.NoError(t, err)
	_, err = small.Mutate(ctx, func(d *count) error { d.N = 1; return nil })
	require.NoError(t, err)

	_, err = filetxn.MutateAll(ctx, []filetxn.Member{small, big}, func(m *filetxn.Multi) error {
		filetxn.In(m, small).N = 2
		*filetxn.In(m, big) = make([]byte, etcd.DefaultMaxRequestBytes)
		return nil
	})
	require.ErrorIs(t, err, etcd.ErrTooLarge)
	assert.Contains(t, err.Error(), "big.txt")
	got, err := small.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, got.N, "the small document after a refused commit")
	data, err := b.Get(ctx, "big.txt")
	require.NoError(t, err)
	assert.Nil(t, data, "the large document after a refused commit")

	// Bisect the largest document the check lets through, between one a
	// few KiB under the limit (which must pass) and the limit.
	lo, hi := etcd.DefaultMaxRequestBytes-4096, etcd.DefaultMaxRequestBytes // lo passes, hi does not
	_, err = big.Mutate(ctx, func(d *[]byte) error { *d = make([]byte, lo); return nil })
	require.NoError(t, err, "Mutate of %d bytes", lo)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		_, err := big.Mutate(ctx, func(d *[]byte) error { *d = make([]byte, mid); return nil })
		if errors.Is(err, etcd.ErrTooLarge) && !strings.Contains(err.Error(), "refused by the cluster") {
			hi = mid
			continue
		}
		require.NoError(t, err, "Mutate of %d bytes, which the check let through", mid)
		lo = mid
	}
	t.Logf("largest document let through: %d bytes", lo)
}

// TestBusyLock: a lock held by another session fails a WithNoWait store at
// once with lock.ErrWouldBlock, and bounds a waiting one by its ctx, which
// leaves no waiter key behind; a waiter takes the lock when it is released.
func TestBusyLock(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	raw := c.Client(t)
	other := newBackend(t, c, "busy")
	h, err := other.Lock(ctx, "n.json", true)
	require.NoError(t, err)

	b := newBackend(t, c, "busy")
	nw, err := filetxn.NewStore("n.json", filetxn.JSON[count](), filetxn.WithBackend(b), filetxn.WithNoWait())
	require.NoError(t, err)
	_, err = nw.Mutate(ctx, func(d *count) error { d.N++; return nil })
	require.ErrorIs(t, err, lock.ErrWouldBlock)
	var be *lock.BusyError
	require.ErrorAs(t, err, &be)
	assert.Len(t, keys(t, raw, "busy/locks/"), 1, "lock keys after a refused TryLock")

	s, err := filetxn.NewStore("n.json", filetxn.JSON[count](), filetxn.WithBackend(b))
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = s.Mutate(short, func(d *count) error { d.N++; return nil })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Len(t, keys(t, raw, "busy/locks/"), 1, "lock keys after a wait ended by ctx")

	cctx, cancel2 := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := s.Mutate(cctx, func(d *count) error { d.N++; return nil })
		errc <- err
	}()
	time.AfterFunc(200*time.Millisecond, cancel2)
	require.ErrorIs(t, <-errc, context.Canceled, "Mutate whose ctx is canceled while it waits")

	go func() {
		_, err := s.Mutate(ctx, func(d *count) error { d.N++; return nil })
		errc <- err
	}()
	select {
	case err := <-errc:
		t.Fatalf("Mutate returned %v while the lock was held", err)
	case <-time.After(500 * time.Millisecond):
	}
	require.NoError(t, h.Release())
	require.NoError(t, <-errc, "Mutate after the release")
	got, err := s.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, got.N)
}

// TestCloseFreesLocksAndLeaksNothing: Close revokes the session, which
// frees its locks (a hold's Commit then fails with lock.ErrLockLost), and
// later Locks fail with fs.ErrClosed; no goroutine outlives the Backend and
// its client. Ablation: a Close that neither ends the session's keep-alive
// nor revokes its lease turns it red (the lock key is still there).
func TestCloseFreesLocksAndLeaksNothing(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	raw := c.Client(t)
	assert.Empty(t, keys(t, raw, "close/"), "keys before") // raw's connection is up: its goroutines are not the Backend's
	ignore := goleak.IgnoreCurrent()
	cl, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: wait})
	require.NoError(t, err)
	b, err := etcd.New(cl, "close")
	require.NoError(t, err)
	s, err := filetxn.NewStore("n.json", filetxn.JSON[count](), filetxn.WithBackend(b))
	require.NoError(t, err)
	_, err = s.Mutate(ctx, func(d *count) error { d.N = 1; return nil })
	require.NoError(t, err)
	h, err := b.Lock(ctx, "n.json", true)
	require.NoError(t, err)
	_, err = h.Read(ctx, "n.json")
	require.NoError(t, err)
	require.NoError(t, b.Close())
	assert.Empty(t, keys(t, raw, "close/locks/"), "lock keys after Close")
	err = b.Commit(ctx, []filetxn.Held{h}, []filetxn.Put{{Name: "n.json", Data: []byte(`{"N":2}`)}}, true)
	require.ErrorIs(t, err, lock.ErrLockLost, "Commit after Close")
	require.NoError(t, h.Release(), "Release of a lost lock")
	_, err = b.Lock(ctx, "n.json", true)
	require.ErrorIs(t, err, fs.ErrClosed, "Lock after Close")
	require.NoError(t, b.Close(), "second Close")
	require.NoError(t, cl.Close())
	goleak.VerifyNone(t, ignore)
}

// TestFenceComparesEveryRevisionRead: a document read by two holds of one
// Commit at two revisions (one read before a change, one after) fails the
// fence, whichever hold comes first; and a Commit fenced by no hold is
// refused. Ablation: a fence that compares each document once, at the
// revision of the first hold that read it, turns the [h1, h2] order red.
func TestFenceComparesEveryRevisionRead(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	raw := c.Client(t)
	b := newBackend(t, c, "twice")
	_, err := raw.Put(ctx, "twice/docs/d", "v0")
	require.NoError(t, err)
	for _, order := range []string{"h1 first", "h2 first"} {
		h2, err := b.Lock(ctx, "B", true)
		require.NoError(t, err)
		_, err = h2.Read(ctx, "d") // v0
		require.NoError(t, err)
		_, err = raw.Put(ctx, "twice/docs/d", "v1-"+order)
		require.NoError(t, err)
		h1, err := b.Lock(ctx, "A", true)
		require.NoError(t, err)
		_, err = h1.Read(ctx, "d") // v1
		require.NoError(t, err)
		holds := []filetxn.Held{h1, h2}
		if order == "h2 first" {
			holds = []filetxn.Held{h2, h1}
		}
		err = b.Commit(ctx, holds, []filetxn.Put{{Name: "x", Data: []byte(order)}}, false)
		require.ErrorIs(t, err, lock.ErrLockLost, order)
		require.NoError(t, h1.Release())
		require.NoError(t, h2.Release())
	}
	resp, err := raw.Get(ctx, "twice/docs/x")
	require.NoError(t, err)
	assert.Empty(t, resp.Kvs, "a refused commit wrote")

	err = b.Commit(ctx, nil, []filetxn.Put{{Name: "x", Data: []byte("blind")}}, false)
	require.ErrorIs(t, err, filetxn.ErrInvalidArgument)
}

// TestCreateTooLargeRefusedBeforeSending: a Create with a long name and a
// document that fit the limit once but not with the name counted twice (the
// request's compare and put both carry the key) is refused by the check,
// before anything is sent. Ablation: counting the key once lets the request
// through and the cluster refuses it ("refused by the cluster").
func TestCreateTooLargeRefusedBeforeSending(t *testing.T) {
	ctx := testCtx(t)
	b := newBackend(t, startCluster(t), "cbig")
	name := strings.Repeat("n", 2000)
	data := make([]byte, etcd.DefaultMaxRequestBytes-len("cbig/docs/")-len(name)-300)
	err := b.Create(ctx, name, data)
	require.ErrorIs(t, err, etcd.ErrTooLarge)
	assert.NotContains(t, err.Error(), "refused by the cluster")
	got, err := b.Get(ctx, name)
	require.NoError(t, err)
	assert.Nil(t, got)
}

// TestHeldDoneWhenTheLeaseEnds: a hold's Done is closed once its session's
// lease ends on the server (revoked here, as an expiry does), which is how
// loopstate stops a harness whose lock another session may now take; the
// client learns it at its next keep-alive. Ablation: a Done that returns a channel never closed times the wait out.
func TestHeldDoneWhenTheLeaseEnds(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t)
	raw := c.Client(t)
	b := newBackend(t, c, "done", etcd.WithSessionTTL(3*time.Second)) // a keep-alive each second
	h, err := b.Lock(ctx, "n.json", true)
	require.NoError(t, err)
	defer h.Release()
	d, ok := h.(interface{ Done() <-chan struct{} })
	require.True(t, ok, "the etcd Held has Done")
	var lease clientv3.LeaseID
	for _, l := range keys(t, raw, "done/locks/") {
		lease = l
	}
	require.NotZero(t, lease, "the lock's key has a lease")
	_, err = raw.Revoke(ctx, lease)
	require.NoError(t, err)
	select {
	case <-d.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("Done not closed after the lease was revoked")
	}
}

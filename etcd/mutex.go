package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// A mutex is one session's place in the queue of a lock: the protocol of
// concurrency.Mutex (and of etcdctl lock), whose keys it shares, but with
// every request bounded by a context of its caller's. concurrency.Mutex's
// Lock cleans up after a wait that its ctx ended with the client's own
// context, which no deadline bounds: while no member is reachable, Lock
// would outlast its ctx. This one also stops waiting as soon as its own
// key is deleted (its lease ended), to queue again on a new session.
type mutex struct {
	s    *concurrency.Session
	pfx  string // the lock's prefix, ending in "/"
	key  string // pfx + the session's lease in hexadecimal
	rev  int64  // the create revision of key: the place in the queue
	kept bool   // key's value is keptValue
	// since is when the session took the lock by queueing: a run of its
	// holds that another session waits behind ends runFor after it.
	since time.Time

	doc string // a document key to read in the request that queues the session ("": none)
	pre *kv    // what that request read of doc, when it took the lock (or the kept bytes)
}

// A kv is a document as one request read it: its bytes (nil: none) and
// its mod revision (0: none); kept if they are a kept lock's cached bytes
// instead, which no request of this hold read (see cached).
type kv struct {
	data []byte
	rev  int64
	kept bool
}

// errBusy is the error of a lock held by another session, without wait.
var errBusy = errors.New("held by another session")

// errExpired is the error of a wait whose session's key vanished: its lease
// ended while it waited.
var errExpired = errors.New("session expired while waiting")

func newMutex(s *concurrency.Session, lockKey string) *mutex {
	pfx := lockKey + "/"
	return &mutex{s: s, pfx: pfx, key: fmt.Sprintf("%s%x", pfx, s.Lease())}
}

// lock queues the session for the lock, if it is not queued yet, and
// returns once it holds it: at once if no key before its own is left, with
// errBusy if one is and wait is false, or once every key before its own is
// deleted. Whatever it returns, the session's key may be left behind: the
// caller deletes it when lock fails.
func (m *mutex) lock(ctx context.Context, cl *clientv3.Client, wait bool) error {
	lease := m.s.Lease()
	val := ""
	if !wait {
		val = noWaitValue // a holder that keeps its lock answers it (see docs/formats/etcd.md)
	}
	then := []clientv3.Op{clientv3.OpPut(m.key, val, clientv3.WithLease(lease)), clientv3.OpGet(m.pfx, clientv3.WithFirstCreate()...)}
	orElse := []clientv3.Op{clientv3.OpGet(m.key), clientv3.OpGet(m.pfx, clientv3.WithFirstCreate()...)}
	if m.doc != "" {
		then, orElse = append(then, clientv3.OpGet(m.doc)), append(orElse, clientv3.OpGet(m.doc))
	}
	resp, err := cl.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(m.key), "=", 0)).Then(then...).Else(orElse...).Commit()
	if err != nil {
		return err
	}
	m.rev = resp.Header.Revision
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			return errExpired
		}
		m.rev, m.kept = kvs[0].CreateRevision, string(kvs[0].Value) == keptValue
	}
	first := resp.Responses[1].GetResponseRange().GetKvs()
	if len(first) == 0 || first[0].CreateRevision == m.rev {
		m.prefetch(resp.Responses[2:])
		return nil
	}
	if !wait {
		if string(first[0].Value) != keptValue {
			return errBusy
		}
		return m.askKeeper(ctx, cl)
	}
	for {
		done, err := m.waitTurn(ctx, cl)
		if err != nil {
			return err
		}
		if done {
			break
		}
	}
	// Every key before this one is gone; this one must still be there, and
	// the same request reads the document, as the lock holds as of it.
	ops := []clientv3.Op{clientv3.OpGet(m.key)}
	if m.doc != "" {
		ops = append(ops, clientv3.OpGet(m.doc))
	}
	own, err := cl.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return err
	}
	if kvs := own.Responses[0].GetResponseRange().GetKvs(); len(kvs) == 0 || kvs[0].CreateRevision != m.rev {
		return errExpired
	}
	m.prefetch(own.Responses[1:])
	return nil
}

// prefetch keeps what resps[0], a read of m.doc by the request that took
// the lock (or found it taken, after a wait), read: as of that request no
// holder has written it since, and the fence refuses a commit if anyone
// has.
func (m *mutex) prefetch(resps []*pb.ResponseOp) {
	if m.doc == "" {
		return
	}
	m.pre = &kv{}
	if kvs := resps[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
		m.pre.data, m.pre.rev = kvs[0].Value, kvs[0].ModRevision
		if m.pre.data == nil {
			m.pre.data = []byte{} // an empty document is not no document
		}
	}
}

// askKeeper is the wait of a Lock without wait behind a holder that keeps
// its lock (its key's value is keptValue): such a holder deletes its key
// when it sees a waiter while no hold has the lock, and marks a waiter
// that will not wait busy while one has. It returns nil once the session
// holds the lock, errBusy on the mark, when the holder's key says nothing
// of the kind or after noWaitBound, and errExpired if the session's own key
// is deleted.
func (m *mutex) askKeeper(ctx context.Context, cl *clientv3.Client) error {
	bctx, cancel := context.WithTimeout(ctx, noWaitBound)
	defer cancel()
	busy := func(err error) error {
		if ctx.Err() == nil && bctx.Err() != nil {
			return errBusy // the bound, not the caller's ctx
		}
		return err
	}
	wch := cl.Watch(clientv3.WithRequireLeader(bctx), m.pfx, clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	if wr, ok := <-wch; !ok || wr.Err() != nil || !wr.Created {
		return busy(ctx.Err())
	}
	for {
		ops := []clientv3.Op{clientv3.OpGet(m.key), clientv3.OpGet(m.pfx, clientv3.WithFirstCreate()...)}
		if m.doc != "" {
			ops = append(ops, clientv3.OpGet(m.doc))
		}
		look, err := cl.Txn(bctx).Then(ops...).Commit()
		if err != nil {
			return busy(err)
		}
		own := look.Responses[0].GetResponseRange().GetKvs()
		if len(own) == 0 || own[0].CreateRevision != m.rev {
			return errExpired
		}
		if string(own[0].Value) == busyValue {
			return errBusy
		}
		first := look.Responses[1].GetResponseRange().GetKvs()
		if len(first) == 0 || first[0].CreateRevision == m.rev {
			m.prefetch(look.Responses[2:])
			return nil
		}
		if string(first[0].Value) != keptValue {
			return errBusy
		}
		// Wait for a change after the look: the watch began before it.
		for changed := false; !changed; {
			wr, ok := <-wch
			if !ok || wr.Err() != nil || wr.Canceled {
				return busy(ctx.Err())
			}
			for _, ev := range wr.Events {
				changed = changed || ev.Kv.ModRevision > look.Header.Revision
			}
		}
	}
}

// waitTurn waits, on one watch of the queue made before it looks at the
// queue, until no key queued before this session's is left: true once none
// is; false, with no error, if the cluster ended the watch first (a
// compaction, a lost leader: the caller looks again); errExpired if the
// session's own key is deleted. The watch has no start revision, so it
// starts after the current one and the server sends each deletion as it
// happens; a watch from an older revision would be caught up only by the
// server's periodic resync of such watches (every 100 ms in etcd 3.x),
// which under contention would pace every hand-over of the lock.
func (m *mutex) waitTurn(ctx context.Context, cl *clientv3.Client) (bool, error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := cl.Watch(wctx, m.pfx, clientv3.WithPrefix(), clientv3.WithFilterPut(), clientv3.WithCreatedNotify())
	if wr, ok := <-wch; !ok || wr.Err() != nil || !wr.Created {
		return false, ctx.Err()
	}
	deleted := map[string]int64{} // the revision of each key's last deletion since the watch began
	for {
		// The last key queued before this session's, if any is left.
		before, err := cl.Get(ctx, m.pfx, append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(m.rev-1))...)
		if err != nil {
			return false, err
		}
		if len(before.Kvs) == 0 {
			return true, nil
		}
		// A deletion at or before the Get's revision is of an earlier
		// life of the key (a lease queues again under the same key): the
		// watch may have begun before it, on a member that lagged.
		for ahead, at := before.Kvs[0].Key, before.Header.Revision; deleted[string(ahead)] <= at; {
			if deleted[m.key] > m.rev {
				return false, errExpired
			}
			wr, ok := <-wch
			if !ok || wr.Err() != nil || wr.Canceled {
				return false, ctx.Err()
			}
			for _, ev := range wr.Events {
				deleted[string(ev.Kv.Key)] = ev.Kv.ModRevision // deletions only: WithFilterPut
			}
		}
		if deleted[m.key] > m.rev {
			return false, errExpired
		}
	}
}

// alone is the compare that holds while no key is queued after the
// session's: it holds for every key of the queue.
func (m *mutex) alone() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(m.pfx), "<", m.rev+1).WithPrefix()
}

// isOwner is the compare that holds while the session holds the lock.
func (m *mutex) isOwner() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(m.key), "=", m.rev)
}

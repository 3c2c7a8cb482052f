package etcd

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
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
	s   *concurrency.Session
	pfx string // the lock's prefix, ending in "/"
	key string // pfx + the session's lease in hexadecimal
	rev int64  // the create revision of key: the place in the queue
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
	resp, err := cl.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(m.key), "=", 0)).
		Then(clientv3.OpPut(m.key, "", clientv3.WithLease(lease)), clientv3.OpGet(m.pfx, clientv3.WithFirstCreate()...)).
		Else(clientv3.OpGet(m.key), clientv3.OpGet(m.pfx, clientv3.WithFirstCreate()...)).
		Commit()
	if err != nil {
		return err
	}
	m.rev = resp.Header.Revision
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			return errExpired
		}
		m.rev = kvs[0].CreateRevision
	}
	first := resp.Responses[1].GetResponseRange().GetKvs()
	if len(first) == 0 || first[0].CreateRevision == m.rev {
		return nil
	}
	if !wait {
		return errBusy
	}
	for {
		// The last key queued before this session's, if any is left.
		before, err := cl.Get(ctx, m.pfx, append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(m.rev-1))...)
		if err != nil {
			return err
		}
		if len(before.Kvs) == 0 {
			break
		}
		gone, err := m.waitDelete(ctx, cl, string(before.Kvs[0].Key), before.Header.Revision+1)
		if err != nil {
			return err
		}
		if gone == m.key {
			return errExpired
		}
	}
	// Every key before this one is gone; this one must still be there.
	own, err := cl.Get(ctx, m.key)
	if err != nil {
		return err
	}
	if len(own.Kvs) == 0 || own.Kvs[0].CreateRevision != m.rev {
		return errExpired
	}
	return nil
}

// waitDelete returns once key or the session's own key is deleted at
// revision rev or later, naming the one deleted, or once ctx is done. A
// watch that the cluster ends (a compaction, a lost leader) returns "" and
// no error: the caller looks again.
func (m *mutex) waitDelete(ctx context.Context, cl *clientv3.Client, key string, rev int64) (string, error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range cl.Watch(wctx, m.pfx, clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithFilterPut()) {
		if wr.Err() != nil || wr.Canceled {
			return "", ctx.Err()
		}
		for _, ev := range wr.Events {
			if k := string(ev.Kv.Key); ev.Type == mvccpb.DELETE && (k == key || k == m.key) {
				return k, nil
			}
		}
	}
	return "", ctx.Err()
}

// isOwner is the compare that holds while the session holds the lock.
func (m *mutex) isOwner() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(m.key), "=", m.rev)
}

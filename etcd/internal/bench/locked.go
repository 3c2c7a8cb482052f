package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A lockedFloor is the least a locked read-modify-write on etcd sends,
// written by hand: the lock is a queue of waiter keys, one per lease, the
// oldest holding it (the protocol of concurrency.Mutex). When the lock is
// free an increment is two requests: a Txn that enqueues this lease's key
// and reads the oldest key and the document, and a Txn that writes the
// document only if this key and the document's mod revision are as read,
// and deletes the key. A waiter waits on a watch of the waiter keys made
// before it reads which keys are ahead of it (a watch without a start
// revision starts after the current one, so the server sends its events
// as they happen), then reads the document; carried, the waiter keys sit
// right after the document's key, the watch covers both, and the waiter
// takes the document from the events that woke it instead of reading it.
type lockedFloor struct {
	cli   *clientv3.Client
	lease clientv3.LeaseID
	doc   string // the document's key
	keys  string // the prefix of the waiter keys
	carry bool   // keys is doc + "/lock/"
}

func (f *lockedFloor) increment(ctx context.Context) error {
	me := fmt.Sprintf("%s%x", f.keys, f.lease)
	resp, err := f.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(me), "=", 0)).
		Then(clientv3.OpPut(me, "", clientv3.WithLease(f.lease)), clientv3.OpGet(f.keys, clientv3.WithFirstCreate()...), clientv3.OpGet(f.doc)).
		Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("waiter key %s left behind", me)
	}
	mine := resp.Header.Revision
	var data []byte
	var rev int64
	if kvs := resp.Responses[2].GetResponseRange().Kvs; len(kvs) > 0 {
		data, rev = kvs[0].Value, kvs[0].ModRevision
	}
	if owner := resp.Responses[1].GetResponseRange().Kvs; len(owner) == 0 || owner[0].CreateRevision != mine {
		if data, rev, err = f.wait(ctx, mine); err != nil {
			f.cli.Delete(context.WithoutCancel(ctx), me)
			return err
		}
	}
	var d counter
	if data != nil {
		if err := json.Unmarshal(data, &d); err != nil {
			return fmt.Errorf("%s: %w", f.doc, err)
		}
	}
	d.N++
	out, err := json.Marshal(&d)
	if err != nil {
		return err
	}
	tr, err := f.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(me), "=", mine), clientv3.Compare(clientv3.ModRevision(f.doc), "=", rev)).
		Then(clientv3.OpPut(f.doc, string(out)), clientv3.OpDelete(me)).
		Else(clientv3.OpGet(me), clientv3.OpGet(f.doc)).Commit()
	if err != nil {
		return err
	}
	if !tr.Succeeded {
		var key, doc int64
		if kvs := tr.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			key = kvs[0].CreateRevision
		}
		if kvs := tr.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
			doc = kvs[0].ModRevision
		}
		return fmt.Errorf("lock %s lost at revision %d: the key's create revision is %d (want %d), the document's mod revision %d (want %d)",
			me, tr.Header.Revision, key, mine, doc, rev)
	}
	return nil
}

// wait returns once every waiter key created before revision mine is
// deleted, with the document as it is then and its mod revision.
func (f *lockedFloor) wait(ctx context.Context, mine int64) ([]byte, int64, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCreatedNotify()}
	at := f.keys
	if f.carry {
		// From the document's key to the end of its waiter keys.
		at, opts = f.doc, []clientv3.OpOption{clientv3.WithRange(strings.TrimSuffix(f.keys, "/") + "0"), clientv3.WithCreatedNotify()}
	}
	wch := f.cli.Watch(wctx, at, opts...)
	if wr, ok := <-wch; !ok || wr.Err() != nil || !wr.Created {
		return nil, 0, fmt.Errorf("watch of %s: %v", at, wr.Err())
	}
	read, err := f.cli.Txn(ctx).Then(
		clientv3.OpGet(f.keys, clientv3.WithPrefix(), clientv3.WithMaxCreateRev(mine-1), clientv3.WithKeysOnly()),
		clientv3.OpGet(f.doc)).Commit()
	if err != nil {
		return nil, 0, err
	}
	left := map[string]bool{}
	for _, kv := range read.Responses[0].GetResponseRange().Kvs {
		left[string(kv.Key)] = true
	}
	var data []byte
	var rev int64
	if kvs := read.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		data, rev = kvs[0].Value, kvs[0].ModRevision
	}
	for len(left) > 0 {
		wr, ok := <-wch
		if !ok || wr.Err() != nil {
			return nil, 0, fmt.Errorf("watch of %s: %v", at, errors.Join(ctx.Err(), wr.Err()))
		}
		for _, ev := range wr.Events {
			if ev.Kv.ModRevision <= read.Header.Revision {
				// Seen by the read already: the watch may have begun earlier
				// (on a member that lagged), and a key deleted then may have
				// been queued again since, by the same lease.
				continue
			}
			switch k := string(ev.Kv.Key); {
			case k == f.doc:
				data, rev = nil, 0
				if ev.Type == clientv3.EventTypePut {
					data, rev = ev.Kv.Value, ev.Kv.ModRevision
				}
			case strings.HasPrefix(k, f.keys) && ev.Type == clientv3.EventTypeDelete:
				delete(left, k)
			}
		}
	}
	if f.carry {
		return data, rev, nil
	}
	g, err := f.cli.Get(ctx, f.doc)
	if err != nil || len(g.Kvs) == 0 {
		return nil, 0, err
	}
	return g.Kvs[0].Value, g.Kvs[0].ModRevision, nil
}

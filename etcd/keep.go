package etcd

import (
	"bytes"
	"context"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The values of waiter keys (see docs/formats/etcd.md): a holder's key that
// keeps the lock between commits, a waiter that will not wait, and a
// holder's answer to it. Any other value (etcdctl's and concurrency.Mutex's
// are empty) promises nothing.
const (
	keptValue   = "kept"
	noWaitValue = "nowait"
	busyValue   = "busy"
)

// noWaitBound bounds how long a Lock without wait waits for a holder that
// keeps its lock to release it or to say it is busy.
const noWaitBound = time.Second

// runFor is how long after a session takes a lock by queueing its
// process's holds may follow one another on it while another session
// waits: a run (as sync.Mutex lets a running goroutine take the lock ahead
// of a woken waiter). Each hold of a run takes the kept lock without a
// write, most with no request at all (see cached); a hand-over costs the
// next session a watch event and two requests before its own commit, so a
// run of a few holds pays for itself under contention. A waiter waits at
// most runFor plus the hold in progress longer than without runs. It is
// a few commits long: etcd's commit is a raft round and an fsync.
const runFor = 10 * time.Millisecond

// A cached is the document that the last commit of a kept lock's hold
// wrote, the one the next hold reads first: while the session still holds
// the lock no fenced writer can have changed it, so that hold's first Read
// takes it from here instead of asking the cluster. The fence still
// compares it: a commit made on it after the lock was lost (its lease
// expired unseen) or after a write that took no lock is refused.
type cached struct {
	doc  string // its key
	data []byte // never nil
	rev  int64
	at   time.Time // when that commit was sent: the session held the lock then
}

// A keeper is a lock whose key its session keeps between holds: after a
// Commit with release that found no waiter (or kept it in the session's
// run), the next Lock of the name by the Backend takes the key from the
// keeper, confirming it by a read or, with fresh cached bytes, by nothing.
// While it lives a goroutine watches the lock's queue and the cached
// document: it deletes the key when a waiter comes while no hold has it
// (idle; at the run's end during a run), and marks a waiter that will not
// wait busy while one has.
type keeper struct {
	name string
	m    *mutex        // the session's key; its pre is unused
	stop func()        // ends the watch
	kick chan struct{} // 1-buffered: marks is not empty

	// Under Backend.mu:
	state   keepState
	waiter  bool               // a waiter that waits came: release at the hold's end (or the run's)
	pending []*mvccpb.KeyValue // waiters that will not wait, come while acquiring (or idle in a run)
	marks   []*mvccpb.KeyValue // waiters that will not wait, to mark busy
	freed   chan struct{}      // closed once the key is deleted (or given up) and the keeper out of the map
	cache   *cached            // the document the last hold wrote, if any
	doc     string             // the key of the documents cached, watched ("": none)
	docRev  int64              // the newest mod revision of doc the watch has seen
	timer   *time.Timer        // ends the run, once a waiter came during it
}

type keepState int

const (
	idle      keepState = iota // no hold has it: a waiter's key makes the watch delete it
	acquiring                  // a Lock is confirming it by a read
	busy                       // a hold has it
	releasing                  // its key is being deleted
	dropped                    // out of the map
)

// keep makes, or makes idle again, the keeper of a hold whose Commit with
// release kept its key, no waiter queued at or before revision at: the
// hold's own keeper, or a new one, which keeps c (nil: none). It releases
// the key at once when a waiter came during the hold, after the run, and
// gives it up when the Backend is closed.
func (b *Backend) keep(h *held, at int64, c *cached) {
	b.mu.Lock()
	k := h.k
	switch {
	case b.closed || h.m.s != b.sess || done(h.m.s):
		// The lease goes (or has gone) with its keys.
		if k != nil {
			b.dropLocked(k)
		}
		b.mu.Unlock()
		return
	case k == nil:
		if old := b.kept[h.name]; old != nil {
			b.dropLocked(old) // a hold granted again alongside (the engine does not do this)
		}
		m := *h.m
		m.pre, m.doc = nil, ""
		ctx, cancel := context.WithCancel(b.life)
		k = &keeper{name: h.name, m: &m, stop: cancel, kick: make(chan struct{}, 1), freed: make(chan struct{}), cache: c}
		if c != nil {
			k.doc, k.docRev = c.doc, c.rev
		}
		if b.kept == nil {
			b.kept = map[string]*keeper{}
		}
		b.kept[h.name] = k
		b.wg.Add(1)
		go b.watchKept(ctx, k, at)
		b.mu.Unlock()
		return
	case k.state != busy:
		b.mu.Unlock()
		return
	case k.waiter && !b.inRun(k):
		b.handOver(k)
		return
	}
	if c != nil && c.doc != k.doc {
		c = nil // not the document k watches
	}
	k.state, k.marks, k.cache = idle, nil, c
	b.mu.Unlock()
}

// inRun reports whether k's session took its lock less than runFor ago;
// b.mu is held. While it is, a waiter that comes does not end the run at
// once: a timer does, or the first hold to end after it, if a hold has the
// lock then.
func (b *Backend) inRun(k *keeper) bool {
	left := runFor - time.Since(k.m.since)
	if left <= 0 {
		return false
	}
	if k.timer == nil && k.state != dropped {
		b.wg.Add(1) // Close waits for it, or dropLocked stops it
		k.timer = time.AfterFunc(left, func() {
			defer b.wg.Done()
			b.runOver(k)
		})
	}
	return true
}

// runOver ends k's run: an idle k with a waiter releases its key.
func (b *Backend) runOver(k *keeper) {
	b.mu.Lock()
	if k.state != idle || (!k.waiter && len(k.pending) == 0) {
		b.mu.Unlock()
		return
	}
	b.handOver(k)
}

// takeKept returns the idle keeper of name for session s, acquiring, or
// nil. A keeper of an older session is dropped; one whose key is being
// deleted is waited for, as ctx lets.
func (b *Backend) takeKept(ctx context.Context, name string) (*keeper, error) {
	b.mu.Lock()
	k := b.kept[name]
	switch {
	case k == nil:
	case k.m.s != b.sess || done(k.m.s):
		b.dropLocked(k)
	case k.state == idle:
		k.state = acquiring
		b.mu.Unlock()
		return k, nil
	case k.state == releasing:
		b.mu.Unlock()
		select {
		case <-k.freed:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	b.mu.Unlock()
	return nil, nil
}

// lockKept takes the lock of k (acquiring) for a hold of the session,
// which reads the document doc first, and makes k busy. If the last hold
// wrote doc, within fresh of now, it sends nothing: the hold's first Read
// is the cached bytes. Otherwise it confirms, by one read, that the key of
// k is still there with its create revision and, after the session's run,
// that no waiter is queued behind it, and reads doc: the session holds the
// lock as of the read. A key lost or a waiter queued gives nil (k is gone,
// its key deleted: the caller queues anew); an error leaves k idle.
func (b *Backend) lockKept(ctx context.Context, k *keeper, doc string) (*mutex, error) {
	m := k.m
	b.mu.Lock()
	c, run := k.cache, b.inRun(k)
	if c != nil && c.rev < k.docRev {
		c = nil // written since by a writer that took no lock
	}
	if !run && k.state == acquiring && (k.waiter || len(k.pending) > 0) {
		// A waiter came before this Lock, after the run: its turn.
		b.handOver(k)
		return nil, nil
	}
	b.mu.Unlock()
	if c != nil && c.doc == doc && time.Since(c.at) < b.fresh() && !done(m.s) {
		got := *m
		got.doc = doc
		got.pre = &kv{data: bytes.Clone(c.data), rev: c.rev, kept: true}
		return b.busy(k, &got), nil
	}
	cmps := []clientv3.Cmp{m.isOwner(), m.alone()}
	if run {
		cmps = cmps[:1] // a waiter queued behind waits for the run's end
	}
	resp, err := b.client.Txn(ctx).If(cmps...).Then(clientv3.OpGet(doc)).Else(clientv3.OpGet(m.key)).Commit()
	if err != nil {
		b.mu.Lock()
		if k.state != acquiring {
			b.mu.Unlock()
			return nil, err
		}
		k.state = idle
		if (k.waiter || len(k.pending) > 0) && !b.inRun(k) {
			// A waiter came meanwhile: idle, k would not see it again.
			b.handOver(k)
			return nil, err
		}
		b.mu.Unlock()
		return nil, err
	}
	if !resp.Succeeded {
		b.mu.Lock()
		own := resp.Responses[0].GetResponseRange().GetKvs()
		if k.state != acquiring || len(own) == 0 || own[0].CreateRevision != m.rev {
			// The key is lost (or k was dropped meanwhile).
			b.dropLocked(k)
			b.mu.Unlock()
			return nil, nil
		}
		// A waiter is queued: it is its turn.
		b.handOver(k)
		return nil, nil
	}
	got := *m
	got.doc = doc
	got.pre = &kv{}
	if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
		got.pre.data, got.pre.rev = kvs[0].Value, kvs[0].ModRevision
		if got.pre.data == nil {
			got.pre.data = []byte{} // an empty document is not no document
		}
	}
	return b.busy(k, &got), nil
}

// fresh is how long after a commit a kept lock's cached document is used:
// a third of the session's TTL, so that the lease cannot have expired on
// the server meanwhile unless its keep-alives had failed for two thirds of
// it before the commit (the fence refuses a commit made on it then).
func (b *Backend) fresh() time.Duration { return time.Duration(b.ttl) * time.Second / 3 }

// busy makes k (acquiring) busy for the hold whose mutex is m: nil if k
// was dropped meanwhile (its key deleted, the Backend closed).
func (b *Backend) busy(k *keeper, m *mutex) *mutex {
	b.mu.Lock()
	if k.state != acquiring {
		b.mu.Unlock()
		return nil
	}
	k.state = busy
	k.marks, k.pending = append(k.marks, k.pending...), nil
	if len(k.marks) > 0 {
		select {
		case k.kick <- struct{}{}:
		default:
		}
	}
	b.mu.Unlock()
	return m
}

// unkeep ends k after a hold that did not keep its key: the hold's Release
// deletes it, or its Commit did.
func (b *Backend) unkeep(k *keeper) {
	b.mu.Lock()
	b.dropLocked(k)
	b.mu.Unlock()
}

// dropLocked takes k out of the map and ends its watch; b.mu is held.
func (b *Backend) dropLocked(k *keeper) {
	if b.kept[k.name] == k {
		delete(b.kept, k.name)
	}
	if k.state != dropped {
		k.state = dropped
		k.stop()
		close(k.freed)
		if k.timer != nil && k.timer.Stop() {
			b.wg.Done() // its function will not run
		}
	}
}

// handOver releases k's key (k releasing); b.mu is held, and unlocked.
func (b *Backend) handOver(k *keeper) {
	k.state = releasing
	b.mu.Unlock()
	b.release(k)
}

// release deletes the key of k (releasing), with a timeout of its own,
// then drops k. If the delete fails, the session is given up, so that the
// key goes with the lease (as cleanup does).
func (b *Backend) release(k *keeper) {
	ctx, cancel := context.WithTimeout(b.life, releaseTimeout)
	defer cancel()
	if err := b.deleteKey(ctx, k.m.key); err != nil && b.life.Err() == nil {
		k.m.s.Orphan()
	}
	b.mu.Lock()
	b.dropLocked(k)
	b.mu.Unlock()
}

// watchKept watches the queue of k's lock until ctx ends or k's key goes:
// a waiter queued after revision at (none was at or before it) makes an
// idle k release the key, and a busy k mark it busy if it will not wait
// (and release at the hold's end if it will). The watch has no start
// revision (one from an old revision is caught up by the server only in
// its periodic resync); a read fills the gap when the server had moved on.
func (b *Backend) watchKept(ctx context.Context, k *keeper, at int64) {
	defer b.wg.Done()
	m := k.m
	seen := at // every waiter queued at or before seen has been handled
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wch := b.client.Watch(wctx, m.pfx, clientv3.WithPrefix(), clientv3.WithCreatedNotify())
		var dch clientv3.WatchChan
		if k.doc != "" {
			dch = b.client.Watch(wctx, k.doc, clientv3.WithCreatedNotify())
		}
		ok := b.watchQueue(ctx, k, wch, dch, &seen)
		cancel()
		if !ok {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond): // a lost leader, a compaction: watch again
		}
	}
}

// watchQueue serves one watch of watchKept, of the queue (wch) and of the
// document cached (dch, nil if none), which marks the cache stale on a
// write; false once k is done with.
func (b *Backend) watchQueue(ctx context.Context, k *keeper, wch, dch clientv3.WatchChan, seen *int64) bool {
	m := k.m
	wr, ok := <-wch
	if !ok || wr.Err() != nil || !wr.Created {
		return ctx.Err() == nil
	}
	began := wr.Header.Revision
	if dch != nil {
		dr, ok := <-dch
		if !ok || dr.Err() != nil || !dr.Created {
			return ctx.Err() == nil
		}
		began = max(began, dr.Header.Revision)
	}
	if began > *seen {
		ops := []clientv3.Op{clientv3.OpGet(m.key), clientv3.OpGet(m.pfx, clientv3.WithPrefix(), clientv3.WithMinCreateRev(*seen+1))}
		if dch != nil {
			ops = append(ops, clientv3.OpGet(k.doc, clientv3.WithKeysOnly()))
		}
		resp, err := b.client.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return ctx.Err() == nil
		}
		if dch != nil {
			rev := resp.Header.Revision // gone: removed since
			if kvs := resp.Responses[2].GetResponseRange().GetKvs(); len(kvs) > 0 {
				rev = kvs[0].ModRevision
			}
			b.docWritten(k, rev)
		}
		if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) == 0 || kvs[0].CreateRevision != m.rev {
			b.unkeep(k)
			return false
		}
		for _, kv := range resp.Responses[1].GetResponseRange().GetKvs() {
			if !b.waiterCame(k, kv) {
				return false
			}
		}
		*seen = resp.Header.Revision
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case <-k.kick:
			b.mark(ctx, k)
			continue
		case dr, ok := <-dch:
			if !ok || dr.Err() != nil || dr.Canceled {
				return ctx.Err() == nil
			}
			for _, ev := range dr.Events {
				b.docWritten(k, ev.Kv.ModRevision)
			}
			continue
		case wr, ok = <-wch:
		}
		if !ok || wr.Err() != nil || wr.Canceled {
			return ctx.Err() == nil
		}
		for _, ev := range wr.Events {
			kv := ev.Kv
			switch {
			case kv.ModRevision <= *seen:
			case string(kv.Key) == m.key:
				if ev.Type == clientv3.EventTypeDelete {
					b.unkeep(k) // its lease ended, or someone deleted it
					return false
				}
			case ev.Type == clientv3.EventTypePut && ev.IsCreate():
				if !b.waiterCame(k, kv) {
					return false
				}
			}
		}
		*seen = max(*seen, wr.Header.Revision)
	}
}

// sawDoc notes that a read found the document at key written (or
// removed) at rev: a kept lock's cache of it older than that is stale, as
// when its watch reports the write. A probed call's read thus spares its
// Mutate the cache's refusal when the watch has not reported yet.
func (b *Backend) sawDoc(key string, rev int64) { b.sawDocs(key, false, rev) }

// sawDocs is sawDoc of key, or with prefix of every key that begins with it.
func (b *Backend) sawDocs(key string, prefix bool, rev int64) {
	b.mu.Lock()
	for _, k := range b.kept {
		if k.doc == key || prefix && strings.HasPrefix(k.doc, key) {
			k.docRev = max(k.docRev, rev)
		}
	}
	b.mu.Unlock()
}

// docWritten notes that k's document was written (or removed) at rev.
func (b *Backend) docWritten(k *keeper, rev int64) {
	b.mu.Lock()
	k.docRev = max(k.docRev, rev)
	b.mu.Unlock()
}

// waiterCame answers the waiter kv of k's queue; false once k is released.
func (b *Backend) waiterCame(k *keeper, kv *mvccpb.KeyValue) bool {
	if string(kv.Key) == k.m.key || kv.CreateRevision <= k.m.rev {
		return true
	}
	noWait := string(kv.Value) == noWaitValue
	b.mu.Lock()
	switch k.state {
	case idle:
		if !b.inRun(k) {
			b.handOver(k)
			return false
		}
		if noWait {
			k.pending = append(k.pending, kv)
		} else {
			k.waiter = true
		}
	case acquiring:
		if noWait {
			k.pending = append(k.pending, kv)
		} else {
			k.waiter = true
		}
	case busy:
		if noWait {
			k.marks = append(k.marks, kv)
			select {
			case k.kick <- struct{}{}:
			default:
			}
		} else {
			k.waiter = true
		}
	case releasing, dropped:
		b.mu.Unlock()
		return false
	}
	b.mu.Unlock()
	return true
}

// mark tells each waiter of k.marks that will not wait that the lock is
// busy: it puts busyValue in its key, keeping the waiter's lease, if the
// key is still the one queued, still says it will not wait, and k's key
// still holds the lock.
func (b *Backend) mark(ctx context.Context, k *keeper) {
	b.mu.Lock()
	marks := k.marks
	k.marks = nil
	if k.state != busy {
		marks = nil
	}
	b.mu.Unlock()
	for _, kv := range marks {
		key := string(kv.Key)
		mctx, cancel := context.WithTimeout(ctx, releaseTimeout)
		_, _ = b.client.Txn(mctx).If(k.m.isOwner(),
			clientv3.Compare(clientv3.CreateRevision(key), "=", kv.CreateRevision),
			clientv3.Compare(clientv3.Value(key), "=", noWaitValue)).
			Then(clientv3.OpPut(key, busyValue, clientv3.WithIgnoreLease())).Commit()
		cancel() // a mark not made: the waiter gives up after noWaitBound
	}
}

package etcd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/lock"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// A held is a lock of a Backend, held by one session until Release.
type held struct {
	b    *Backend
	name string
	doc  string // the document Lock read with the lock, for the first Read of it
	m    *mutex
	k    *keeper // the keeper Lock took the lock from, if any

	mu        sync.Mutex       // protects the fields below
	reads     map[string]int64 // the mod revision of each document read (0: none)
	order     []string         // the documents read, in order
	released  bool             // Release was called
	unlocked  bool             // a Commit with release deleted the lock's key
	kept      int64            // a Commit with release kept the lock's key: no waiter came at or before this revision (0: not kept)
	cache     *cached          // what that Commit wrote of the document read first, for the keeper
	unchecked bool             // a Read returned the kept bytes (see cached), and no decided Commit has checked them since
}

// Done returns a channel closed once the session that holds the lock has
// ended: its lease no longer kept alive (expired, revoked, or the Backend
// closed). The server may have let the lease go some time before.
func (h *held) Done() <-chan struct{} { return h.m.s.Done() }

// Read returns the document named name, nil when there is none, by a
// linearizable read bounded by ctx, and remembers the version read (the
// first, if read twice): a Commit fenced by this hold then requires it
// unchanged. The first Read of the document Lock read with the lock (the
// one the lock is named for, or the one its last hold read first) sends
// nothing: it returns what Lock's own request read, as of the moment the
// lock was taken, or, on a kept lock, the bytes the last hold wrote (then
// a Release without a decided Commit checks that they still stand).
func (h *held) Read(ctx context.Context, name string) ([]byte, error) {
	if err := checkName("Read", name); err != nil {
		return nil, err
	}
	if h.isReleased() {
		return nil, fmt.Errorf("etcd: read %s under lock %s: %w", name, h.name, errReleased)
	}
	h.mu.Lock()
	pre, first := h.m.pre, len(h.order) == 0
	if name == h.doc {
		h.m.pre = nil // the first Read only
		h.unchecked = h.unchecked || pre != nil && pre.kept
	}
	h.mu.Unlock()
	if first {
		h.b.readFirst(h.name, name)
	}
	var data []byte
	var rev int64
	if pre != nil && name == h.doc {
		data, rev = pre.data, pre.rev
	} else {
		var err error
		if data, rev, err = h.b.get(ctx, name); err != nil {
			return nil, err
		}
	}
	h.mu.Lock()
	if _, ok := h.reads[name]; !ok {
		h.reads[name] = rev
		h.order = append(h.order, name)
	}
	h.mu.Unlock()
	return data, nil
}

var errReleased = fmt.Errorf("lock already released: %w", lock.ErrLockLost)

func (h *held) isReleased() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.released
}

// Release unlocks, with a timeout of its own; after a Commit with release
// it sends nothing (the lock is already released, or kept, see Backend). A
// lock already lost (its session ended) releases without error, unless
// the hold read the kept bytes and no Commit checked them: then an error
// matching lock.ErrLockLost says they may not have been current. If the unlock fails, the session
// stops being kept alive, so that the lock is freed when its lease expires,
// and the error is returned; the Backend's other holds are lost then too.
// Releasing twice does nothing.
func (h *held) Release() error {
	h.mu.Lock()
	released, unlocked, kept, check, c := h.released, h.unlocked, h.kept, h.unchecked, h.cache
	h.released = true
	h.mu.Unlock()
	switch {
	case released:
		return nil
	case kept != 0:
		h.b.keep(h, kept, c)
		return nil
	case h.k != nil:
		defer h.b.unkeep(h.k)
	}
	if unlocked {
		return nil
	}
	// A session that is done may still have its lease (one orphaned by a
	// failed clean-up): its key would keep every host out until the lease
	// expires. The key is this lease's alone, so deleting it is always
	// safe; for a lost lock it is best effort.
	ctx, cancel := context.WithTimeout(h.b.life, releaseTimeout)
	defer cancel()
	if check {
		return h.releaseChecked(ctx)
	}
	if err := h.b.deleteKey(ctx, h.m.key); err != nil && !done(h.m.s) {
		h.m.s.Orphan()
		return fmt.Errorf("etcd: release %s (key %s; freed when lease %x expires): %w", h.name, h.m.key, h.m.s.Lease(), err)
	}
	return nil
}

// settle notes that a Commit fenced by h was decided: its fence checked
// every Read so far, and what Lock read may be stale now (a Read after it
// asks the cluster).
func (h *held) settle() {
	h.mu.Lock()
	h.unchecked, h.m.pre = false, nil
	h.mu.Unlock()
}

// releaseChecked is the Release of a hold whose Read returned the kept
// bytes and that no decided Commit checked since: in one request it deletes the key
// and finds out whether the lock and every document read were still as
// read, as a Commit's fence would. If not, or if the request fails, what
// the hold read may not have been current: the error matches
// lock.ErrLockLost.
func (h *held) releaseChecked(ctx context.Context) error {
	t := h.b.fence([]*held{h})
	del := clientv3.OpDelete(h.m.key)
	resp, err := h.b.client.Txn(ctx).If(t.cmps...).Then(del).Else(del).Commit()
	switch {
	case err != nil:
		if !done(h.m.s) {
			h.m.s.Orphan()
		}
		return fmt.Errorf("etcd: release %s (key %s): the hold read the document its session last wrote, and the check that the lock still stood failed: %w: %w",
			h.name, h.m.key, lock.ErrLockLost, err)
	case !resp.Succeeded:
		return fmt.Errorf("etcd: release %s: the hold read the document its session last wrote, but the lock or that document changed before the hold ended: %w",
			h.name, lock.ErrLockLost)
	}
	return nil
}

// Commit publishes puts in one etcd transaction, fenced by holds (of
// this Backend): it writes only if every lock of holds is still held by its
// session and every document they read still has the revision read, and
// writes nothing otherwise, failing with an error matching lock.ErrLockLost
// that names the lock or document found changed. A hold whose session has
// ended fails it at once. A request over the limit (see WithMaxRequestBytes)
// fails it, before any write, with an error matching ErrTooLarge. Any other
// error (ctx done, the cluster unreachable) leaves its outcome unknown.
// With release, the same transaction ends the holds when it writes: it
// deletes each lock's key if another session is queued for it, and keeps
// it for this Backend's next Lock otherwise, or whoever waits during the
// session's run (see Backend); their Release then sends nothing. A Commit fenced by no hold is refused
// (filetxn.ErrInvalidArgument).
func (b *Backend) Commit(ctx context.Context, holds []filetxn.Held, puts []filetxn.Put, release bool) error {
	if len(holds) == 0 {
		return fmt.Errorf("etcd: commit: no locks to fence it by: %w", filetxn.ErrInvalidArgument)
	}
	hs := make([]*held, len(holds))
	for i, x := range holds {
		h, ok := x.(*held)
		if !ok || h.b != b {
			return fmt.Errorf("etcd: commit: hold %d (%T) is not of this backend: %w", i, x, filetxn.ErrInvalidArgument)
		}
		if h.isReleased() {
			return fmt.Errorf("etcd: commit: lock %s: %w", h.name, errReleased)
		}
		if done(h.m.s) {
			h.settle()
			return fmt.Errorf("etcd: commit: lock %s: its session's lease %x expired or is no longer kept alive: %w", h.name, h.m.s.Lease(), lock.ErrLockLost)
		}
		hs[i] = h
	}
	for _, p := range puts {
		if err := checkName("Commit", p.Name); err != nil {
			return err
		}
		if p.Prefix && !p.Remove {
			return fmt.Errorf("etcd: commit: %s: Prefix without Remove: %w", p.Name, filetxn.ErrInvalidArgument)
		}
	}
	if len(puts) == 0 {
		return nil
	}
	t := b.fence(hs)
	for _, p := range puts {
		t.then = append(t.then, b.putOp(p))
	}
	runs := make([]bool, len(hs)) // kept whoever waits
	if release {
		// Each lock's key is kept if no other key is queued for it, and
		// deleted otherwise: a nested transaction whose compare holds for
		// every key of the queue. During the session's run (see runFor)
		// it is kept whoever waits.
		for i, h := range hs {
			runs[i] = time.Since(h.m.since) < runFor
			var keep []clientv3.Op
			if !h.m.kept {
				keep = append(keep, clientv3.OpPut(h.m.key, keptValue, clientv3.WithIgnoreLease()))
			}
			cmps := []clientv3.Cmp{h.m.alone()}
			if runs[i] {
				cmps = nil // holds without compares
			}
			t.then = append(t.then, clientv3.OpTxn(cmps, keep, []clientv3.Op{clientv3.OpDelete(h.m.key)}))
		}
	}
	if err := b.checkSize(t, puts); err != nil {
		return err
	}
	sent := time.Now()
	resp, err := b.client.Txn(ctx).If(t.cmps...).Then(t.then...).Else(t.orElse...).Commit()
	if err != nil {
		if tooLarge(err) {
			return fmt.Errorf("etcd: commit of %s: refused by the cluster: %w: %w", largest(puts), ErrTooLarge, err)
		}
		return fmt.Errorf("etcd: commit of %s: %w", largest(puts), err)
	}
	for _, h := range hs {
		h.settle()
	}
	if !resp.Succeeded {
		return t.failure(resp)
	}
	for _, p := range puts {
		// Another kept lock of this Backend may keep bytes of it.
		b.sawDocs(b.docKey(p.Name), p.Prefix, resp.Header.Revision)
	}
	for i, h := range hs {
		h.mu.Lock()
		if release {
			if resp.Responses[len(puts)+i].GetResponseTxn().GetSucceeded() {
				// Kept in a run, it may have waiters queued before the commit.
				h.kept, h.m.kept = resp.Header.Revision, true
				if runs[i] {
					h.kept = h.m.rev
				}
				h.cache = wrote(b, h, puts, resp.Header.Revision, sent)
			} else {
				h.unlocked = true
			}
		}
		for _, p := range puts {
			for _, name := range touched(p, h.order) {
				h.reads[name] = 0
				if !p.Remove {
					h.reads[name] = resp.Header.Revision
				}
			}
		}
		h.mu.Unlock()
	}
	return nil
}

// wrote returns, for the keeper of h, the document that h read first as
// puts wrote it at revision rev, in a commit sent at sent; nil if they did
// not write it (or removed it: a Create may make it again without a lock).
func wrote(b *Backend, h *held, puts []filetxn.Put, rev int64, sent time.Time) *cached {
	if len(h.order) == 0 {
		return nil
	}
	first := h.order[0]
	var c *cached
	for _, p := range puts {
		switch {
		case len(touched(p, h.order[:1])) == 0:
		case p.Remove:
			c = nil
		default:
			c = &cached{doc: b.docKey(first), data: append([]byte{}, p.Data...), rev: rev, at: sent}
		}
	}
	return c
}

// A txn is a Commit's transaction: its fence (cmps), its writes (then),
// and the reads that tell which of the fence failed (orElse, one for each
// compare, in the order of checks).
type txn struct {
	cmps   []clientv3.Cmp
	then   []clientv3.Op
	orElse []clientv3.Op
	checks []check
}

// A check is one compare of a fence: a lock's waiter key with its create
// revision, or a document with the mod revision read.
type check struct {
	lock, doc string // one of them
	key       string
	rev       int64
}

// fence returns the compares of a Commit fenced by hs.
func (b *Backend) fence(hs []*held) *txn {
	t := &txn{}
	// A document read by two holds is compared at each revision read: a
	// hold that read it before a change must fail the fence.
	type read struct {
		name string
		rev  int64
	}
	seen := map[read]bool{}
	for _, h := range hs {
		t.add(h.m.isOwner(), check{lock: h.name, key: h.m.key, rev: h.m.rev})
		h.mu.Lock()
		for _, name := range h.order {
			if r := (read{name, h.reads[name]}); !seen[r] {
				seen[r] = true
				key := b.docKey(name)
				t.add(clientv3.Compare(clientv3.ModRevision(key), "=", h.reads[name]), check{doc: name, key: key, rev: h.reads[name]})
			}
		}
		h.mu.Unlock()
	}
	return t
}

func (t *txn) add(c clientv3.Cmp, k check) {
	t.cmps = append(t.cmps, c)
	t.orElse = append(t.orElse, clientv3.OpGet(k.key, clientv3.WithKeysOnly()))
	t.checks = append(t.checks, k)
}

// failure is the error of a transaction whose fence failed: the Else reads
// show the keys as they were at its revision.
func (t *txn) failure(resp *clientv3.TxnResponse) error {
	for i, k := range t.checks {
		var kvs []*mvccKV
		if i < len(resp.Responses) {
			if r := resp.Responses[i].GetResponseRange(); r != nil {
				for _, kv := range r.Kvs {
					kvs = append(kvs, &mvccKV{create: kv.CreateRevision, mod: kv.ModRevision})
				}
			}
		}
		switch {
		case k.lock != "" && (len(kvs) == 0 || kvs[0].create != k.rev):
			return fmt.Errorf("etcd: commit: lock %s lost: its key %s is gone (lease expired or revoked) or made anew, at revision %d: %w",
				k.lock, k.key, resp.Header.Revision, lock.ErrLockLost)
		case k.doc != "":
			var now int64
			if len(kvs) > 0 {
				now = kvs[0].mod
			}
			if now != k.rev {
				return fmt.Errorf("etcd: commit: document %s written since it was read under the lock (revision %d, read at %d): %w",
					k.doc, now, k.rev, lock.ErrLockLost)
			}
		}
	}
	return fmt.Errorf("etcd: commit: fence failed at revision %d: %w", resp.Header.Revision, lock.ErrLockLost)
}

type mvccKV struct{ create, mod int64 }

// envelope is what the request's size check allows for what the server
// adds to a transaction before it checks the limit: the user name of an
// authenticated client (the rest of the envelope is counted exactly).
const envelope = 256

// checkSize fails a transaction whose request, as the server will size it
// against its limit, exceeds b.max.
func (b *Backend) checkSize(t *txn, puts []filetxn.Put) error {
	req := &pb.TxnRequest{}
	for i := range t.cmps {
		req.Compare = append(req.Compare, t.cmps[i].GetCompare())
	}
	for _, op := range t.then {
		req.Success = append(req.Success, requestOp(op, false))
	}
	for _, op := range t.orElse {
		req.Failure = append(req.Failure, &pb.RequestOp{Request: &pb.RequestOp_RequestRange{
			RequestRange: &pb.RangeRequest{Key: op.KeyBytes(), KeysOnly: true}}})
	}
	n := proto.Size(&pb.InternalRaftRequest{
		Header: &pb.RequestHeader{ID: math.MaxUint64, AuthRevision: math.MaxUint64},
		ID:     math.MaxUint64,
		Txn:    req,
	}) + envelope
	if n <= b.max {
		return nil
	}
	return fmt.Errorf("etcd: commit of %s: the request would be %d bytes, over the limit of %d; nothing written: %w",
		largest(puts), n, b.max, ErrTooLarge)
}

// requestOp is op (a put, a delete or a transaction of them, as a Commit
// sends) as the server receives it; a put of a nested transaction keeps
// its key's lease, as the keeping of a lock's key does.
func requestOp(op clientv3.Op, nested bool) *pb.RequestOp {
	switch {
	case op.IsPut():
		return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{
			RequestPut: &pb.PutRequest{Key: op.KeyBytes(), Value: op.ValueBytes(), IgnoreLease: nested}}}
	case op.IsTxn():
		cmps, thenOps, elseOps := op.Txn()
		r := &pb.TxnRequest{}
		for i := range cmps {
			r.Compare = append(r.Compare, cmps[i].GetCompare())
		}
		for _, o := range thenOps {
			r.Success = append(r.Success, requestOp(o, true))
		}
		for _, o := range elseOps {
			r.Failure = append(r.Failure, requestOp(o, true))
		}
		return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: r}}
	}
	return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{
		RequestDeleteRange: &pb.DeleteRangeRequest{Key: op.KeyBytes(), RangeEnd: op.RangeBytes()}}}
}

// largest names the largest document of puts, and how many others there are.
func largest(puts []filetxn.Put) string {
	p := slices.MaxFunc(puts, func(a, b filetxn.Put) int { return len(a.Data) - len(b.Data) })
	s := fmt.Sprintf("document %s (%d bytes)", p.Name, len(p.Data))
	if len(puts) > 1 {
		s += fmt.Sprintf(" and %d more", len(puts)-1)
	}
	return s
}

// tooLarge reports whether err is the cluster's or the client's refusal of a
// request as too large.
func tooLarge(err error) bool {
	if errors.Is(err, rpctypes.ErrRequestTooLarge) || errors.Is(err, rpctypes.ErrTooManyOps) ||
		errors.Is(err, rpctypes.ErrGRPCRequestTooLarge) || errors.Is(err, rpctypes.ErrGRPCTooManyOps) {
		return true
	}
	return status.Code(err) == codes.ResourceExhausted
}

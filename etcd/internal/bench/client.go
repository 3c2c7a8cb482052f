package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/etcd"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// A client is an etcd client that counts the requests it sends: every
// unary call (each retry too) and every message on a watch stream. The
// lease's keep-alive messages are not counted: they are periodic, not
// part of an operation.
type client struct {
	*clientv3.Client
	sent atomic.Int64
}

func dial(endpoints []string) (*client, error) {
	c := &client{}
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		c.sent.Add(1)
		return invoke(ctx, method, req, reply, cc, opts...)
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil || !strings.Contains(method, "Watch") {
			return s, err
		}
		return &countedStream{ClientStream: s, sent: &c.sent}, nil
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)},
	})
	if err != nil {
		return nil, fmt.Errorf("client of %v: %w", endpoints, err)
	}
	c.Client = cli
	return c, nil
}

type countedStream struct {
	grpc.ClientStream
	sent *atomic.Int64
}

func (s *countedStream) SendMsg(m any) error {
	s.sent.Add(1)
	return s.ClientStream.SendMsg(m)
}

// The document every variant increments: one JSON object, the same etcd
// key for all of them (the etcd backend keeps a document named name at
// prefix/docs/name).
type counter struct {
	N int `json:"n"`
}

const (
	prefix  = "bench"
	docName = "counter.json"
	docKey  = prefix + "/docs/" + docName
)

// The variants: what one increment of the counter is made of.
const (
	varHand     = "hand"
	varFiletxn  = "filetxn"
	varSTM      = "stm"
	varUnfenced = "unfenced"
	varLocked   = "locked"
)

var variantNames = map[string]string{
	varHand:     "hand-written: Get, Txn(mod revision unchanged: Put), retried",
	varFiletxn:  "filetxn Store.Mutate on the etcd backend",
	varSTM:      "concurrency.NewSTM (serializable snapshot)",
	varUnfenced: "unfenced control: Get, Put",
	varLocked:   "hand-written locked: Txn(enqueue, get doc), Txn(fenced Put, unlock)",
}

// An incrementer increments the counter one way, through its own client.
type incrementer struct {
	c   *client
	inc func(ctx context.Context) error
	end func()
}

func (in *incrementer) close() {
	if in.end != nil {
		in.end()
	}
	in.c.Close()
}

// newIncrementer connects to endpoints and returns variant's incrementer,
// ready: its connection made and, for filetxn, its session's lease granted,
// so that a timed operation pays for neither.
func newIncrementer(ctx context.Context, variant string, endpoints []string) (*incrementer, error) {
	c, err := dial(endpoints)
	if err != nil {
		return nil, err
	}
	in := &incrementer{c: c}
	switch variant {
	case varHand:
		in.inc = func(ctx context.Context) error { return handIncrement(ctx, c.Client, true) }
	case varUnfenced:
		in.inc = func(ctx context.Context) error { return handIncrement(ctx, c.Client, false) }
	case varSTM:
		in.inc = func(ctx context.Context) error { return stmIncrement(ctx, c.Client) }
	case varLocked:
		grant, err := c.Grant(ctx, 60)
		if err != nil {
			c.Close()
			return nil, err
		}
		life, cancel := context.WithCancel(context.Background())
		ka, err := c.KeepAlive(life, grant.ID)
		if err != nil {
			cancel()
			c.Close()
			return nil, err
		}
		go func() {
			for range ka {
			}
		}()
		in.end = func() {
			cancel()
			rctx, done := context.WithTimeout(context.Background(), 5*time.Second)
			c.Revoke(rctx, grant.ID)
			done()
		}
		in.inc = func(ctx context.Context) error { return lockedIncrement(ctx, c.Client, grant.ID) }
	case varFiletxn:
		b, err := etcd.New(c.Client, prefix)
		if err != nil {
			c.Close()
			return nil, err
		}
		in.end = func() { b.Close() }
		st, err := filetxn.NewStore[*counter](docName, filetxn.JSON[counter](), filetxn.WithBackend(b))
		if err != nil {
			in.close()
			return nil, err
		}
		// The session is made at the first lock.
		h, err := b.Lock(ctx, "warm-up", true)
		if err != nil {
			in.close()
			return nil, err
		}
		if err := h.Release(); err != nil {
			in.close()
			return nil, err
		}
		in.inc = func(ctx context.Context) error {
			_, err := st.Mutate(ctx, func(d *counter) error { d.N++; return nil })
			return err
		}
	default:
		c.Close()
		return nil, fmt.Errorf("no variant %q", variant)
	}
	if _, err := c.Get(ctx, docKey); err != nil {
		in.close()
		return nil, err
	}
	return in, nil
}

// handIncrement is what a user writes without a library: read the counter
// with its mod revision, and write it back only if that is unchanged, in a
// loop; unfenced, the write is unconditional (and loses updates).
func handIncrement(ctx context.Context, cli *clientv3.Client, fenced bool) error {
	for {
		resp, err := cli.Get(ctx, docKey)
		if err != nil {
			return err
		}
		var d counter
		var rev int64
		if len(resp.Kvs) > 0 {
			if err := json.Unmarshal(resp.Kvs[0].Value, &d); err != nil {
				return fmt.Errorf("%s: %w", docKey, err)
			}
			rev = resp.Kvs[0].ModRevision
		}
		d.N++
		out, err := json.Marshal(&d)
		if err != nil {
			return err
		}
		if !fenced {
			_, err := cli.Put(ctx, docKey, string(out))
			return err
		}
		tr, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(docKey), "=", rev)).Then(clientv3.OpPut(docKey, string(out))).Commit()
		if err != nil {
			return err
		}
		if tr.Succeeded {
			return nil
		}
	}
}

// lockKeys is the prefix of the hand-written lock's waiter keys.
const lockKeys = prefix + "/bench-locks/counter/"

// lockedIncrement is the least a locked read-modify-write sends when the
// lock is free: one Txn that enqueues this lease's waiter key (the oldest
// waiter holds the lock, as with concurrency.Mutex) and reads the holder
// and the document, and one Txn that writes the document only if the
// waiter key and the document are unchanged, and deletes the key. A
// waiter waits on a watch of the lock's keys made before it reads which
// waiters are ahead of it, so that it sees every deletion at once.
func lockedIncrement(ctx context.Context, cli *clientv3.Client, lease clientv3.LeaseID) error {
	me := fmt.Sprintf("%s%x", lockKeys, lease)
	resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(me), "=", 0)).
		Then(clientv3.OpPut(me, "", clientv3.WithLease(lease)), clientv3.OpGet(lockKeys, clientv3.WithFirstCreate()...), clientv3.OpGet(docKey)).
		Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("waiter key %s left behind", me)
	}
	mine := resp.Header.Revision
	kvs := resp.Responses[2].GetResponseRange().Kvs
	if owner := resp.Responses[1].GetResponseRange().Kvs; len(owner) == 0 || owner[0].CreateRevision != mine {
		if err := waitAhead(ctx, cli, mine); err != nil {
			cli.Delete(context.WithoutCancel(ctx), me)
			return err
		}
		g, err := cli.Get(ctx, docKey)
		if err != nil {
			cli.Delete(context.WithoutCancel(ctx), me)
			return err
		}
		kvs = g.Kvs
	}
	var d counter
	var rev int64
	if len(kvs) > 0 {
		if err := json.Unmarshal(kvs[0].Value, &d); err != nil {
			return fmt.Errorf("%s: %w", docKey, err)
		}
		rev = kvs[0].ModRevision
	}
	d.N++
	out, err := json.Marshal(&d)
	if err != nil {
		return err
	}
	tr, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(me), "=", mine), clientv3.Compare(clientv3.ModRevision(docKey), "=", rev)).
		Then(clientv3.OpPut(docKey, string(out)), clientv3.OpDelete(me)).Commit()
	if err != nil {
		return err
	}
	if !tr.Succeeded {
		return fmt.Errorf("lock %s lost", me)
	}
	return nil
}

// waitAhead waits until every waiter key created before revision mine is
// deleted.
func waitAhead(ctx context.Context, cli *clientv3.Client, mine int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A watch without a start revision starts after the current one, so
	// the server delivers its events as they happen.
	wch := cli.Watch(wctx, lockKeys, clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	if wr, ok := <-wch; !ok || wr.Err() != nil || !wr.Created {
		return fmt.Errorf("watch of %s: %v", lockKeys, wr.Err())
	}
	ahead, err := cli.Get(ctx, lockKeys, clientv3.WithPrefix(), clientv3.WithMaxCreateRev(mine-1), clientv3.WithKeysOnly())
	if err != nil {
		return err
	}
	left := map[string]bool{}
	for _, kv := range ahead.Kvs {
		left[string(kv.Key)] = true
	}
	for len(left) > 0 {
		wr, ok := <-wch
		if !ok || wr.Err() != nil {
			return fmt.Errorf("watch of %s: %v", lockKeys, errors.Join(ctx.Err(), wr.Err()))
		}
		for _, ev := range wr.Events {
			if ev.Type == clientv3.EventTypeDelete {
				delete(left, string(ev.Kv.Key))
			}
		}
	}
	return nil
}

// stmIncrement increments the counter in etcd's software transactional
// memory, which runs its function again after a conflict.
func stmIncrement(ctx context.Context, cli *clientv3.Client) error {
	_, err := concurrency.NewSTM(cli, func(s concurrency.STM) error {
		var d counter
		if v := s.Get(docKey); v != "" {
			if err := json.Unmarshal([]byte(v), &d); err != nil {
				return fmt.Errorf("%s: %w", docKey, err)
			}
		}
		d.N++
		out, err := json.Marshal(&d)
		if err != nil {
			return err
		}
		s.Put(docKey, string(out))
		return nil
	}, concurrency.WithAbortContext(ctx))
	return err
}

// readCounter returns the counter's value, by a linearizable read.
func readCounter(ctx context.Context, cli *clientv3.Client) (int, error) {
	resp, err := cli.Get(ctx, docKey)
	if err != nil {
		return 0, err
	}
	var d counter
	if len(resp.Kvs) > 0 {
		if err := json.Unmarshal(resp.Kvs[0].Value, &d); err != nil {
			return 0, fmt.Errorf("%s: %w", docKey, err)
		}
	}
	return d.N, nil
}

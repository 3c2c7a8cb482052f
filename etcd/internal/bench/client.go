package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/etcd"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.etcd.io/etcd/server/v3/etcdserver/txn"
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

	mu   sync.Mutex                 // protects took
	took map[string][]time.Duration // the duration of every unary call, by method; nil: not kept
}

// keep starts keeping the duration of every unary call.
func (c *client) keep() {
	c.mu.Lock()
	c.took = map[string][]time.Duration{}
	c.mu.Unlock()
}

// kept returns the durations kept since keep, by method ("Txn", "Range").
func (c *client) kept() map[string][]time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.took
}

func dial(endpoints []string) (*client, error) {
	c := &client{}
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		c.sent.Add(1)
		start := time.Now()
		err := invoke(ctx, method, req, reply, cc, opts...)
		c.mu.Lock()
		if c.took != nil {
			name := method[strings.LastIndexByte(method, '/')+1:]
			if r, ok := req.(*pb.TxnRequest); ok && txn.IsTxnReadonly(r) {
				name = "read-only Txn" // the server answers it without a raft entry
			}
			c.took[name] = append(c.took[name], time.Since(start))
		}
		c.mu.Unlock()
		return err
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

// The document a variant increments: one JSON object, under a key of the
// variant's own (the etcd backend keeps a document named name at
// prefix/docs/name), so that no row's writes land between another's: a
// session that keeps its lock reads the document its last commit wrote,
// and a write by another row in between (one that takes no lock) would
// make its next commit fail.
type counter struct {
	N int `json:"n"`
}

const prefix = "bench"

// docName is the name of variant's document, and docKey its key.
func docName(variant string) string { return "counter-" + variant + ".json" }
func docKey(variant string) string  { return prefix + "/docs/" + docName(variant) }

// The variants: what one increment of the counter is made of.
const (
	varHand     = "hand"
	varFiletxn  = "filetxn"
	varSTM      = "stm"
	varUnfenced = "unfenced"
	varLocked   = "locked"
	varCarried  = "carried"
)

var variantNames = map[string]string{
	varHand:     "hand-written: Get, Txn(mod revision unchanged: Put), retried",
	varFiletxn:  "filetxn Store.Mutate on the etcd backend",
	varSTM:      "concurrency.NewSTM (serializable snapshot)",
	varUnfenced: "unfenced control: Get, Put",
	varLocked:   "hand-written locked: Txn(enqueue, get doc), Txn(fenced Put, unlock)",
	varCarried:  "hand-written locked, a waiter woken with the document",
}

// An incrementer increments the counter one way, through its own client.
type incrementer struct {
	key string // its document's key
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
	key := docKey(variant)
	in := &incrementer{c: c, key: key}
	switch variant {
	case varHand:
		in.inc = func(ctx context.Context) error { return handIncrement(ctx, c.Client, key, true) }
	case varUnfenced:
		in.inc = func(ctx context.Context) error { return handIncrement(ctx, c.Client, key, false) }
	case varSTM:
		in.inc = func(ctx context.Context) error { return stmIncrement(ctx, c.Client, key) }
	case varLocked, varCarried:
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
		f := &lockedFloor{cli: c.Client, lease: grant.ID, doc: key, keys: prefix + "/bench-locks/" + variant + "/"}
		if variant == varCarried {
			f.keys, f.carry = key+"/lock/", true
		}
		in.inc = f.increment
	case varFiletxn:
		b, err := etcd.New(c.Client, prefix)
		if err != nil {
			c.Close()
			return nil, err
		}
		in.end = func() { b.Close() }
		st, err := filetxn.NewStore[*counter](docName(variant), filetxn.JSON[counter](), filetxn.WithBackend(b))
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
	if _, err := c.Get(ctx, key); err != nil {
		in.close()
		return nil, err
	}
	return in, nil
}

// handIncrement is what a user writes without a library: read the counter
// with its mod revision, and write it back only if that is unchanged, in a
// loop; unfenced, the write is unconditional (and loses updates).
func handIncrement(ctx context.Context, cli *clientv3.Client, docKey string, fenced bool) error {
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

// stmIncrement increments the counter in etcd's software transactional
// memory, which runs its function again after a conflict.
func stmIncrement(ctx context.Context, cli *clientv3.Client, docKey string) error {
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

// readCounter returns the value of the counter at docKey, by a
// linearizable read.
func readCounter(ctx context.Context, cli *clientv3.Client, docKey string) (int, error) {
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

package etcd

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/filetxn/filetxn"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Create makes the document named name with data if there is none, in one
// transaction (one request, bounded by ctx) that compares the key's
// create_revision with 0; a document there already fails it with an error
// matching fs.ErrExist, writing nothing. It takes no lock. A Commit fenced
// by a hold that read the name as missing is then refused.
func (b *Backend) Create(ctx context.Context, name string, data []byte) error {
	if err := checkName("Create", name); err != nil {
		return err
	}
	key := b.docKey(name)
	// The request names the key twice (the compare and the put): sized as
	// a Commit's is.
	t := &txn{cmps: []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)}, then: []clientv3.Op{clientv3.OpPut(key, string(data))}}
	if err := b.checkSize(t, []filetxn.Put{{Name: name, Data: data}}); err != nil {
		return fmt.Errorf("etcd: create %s: %w", name, err)
	}
	resp, err := b.client.Txn(ctx).If(t.cmps...).Then(t.then...).Commit()
	if err != nil {
		if tooLarge(err) {
			return fmt.Errorf("etcd: create %s: refused by the cluster: %w: %w", name, ErrTooLarge, err)
		}
		return fmt.Errorf("etcd: create %s (key %s): %w", name, key, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("etcd: create %s (key %s): %w", name, key, fs.ErrExist)
	}
	b.sawDoc(key, resp.Header.Revision)
	return nil
}

// List returns the documents whose names begin with prefix, by one
// linearizable range read bounded by ctx: every key under
// PREFIX/docs/<prefix>, as of one revision, in the order of their
// create_revision (the keys one transaction created in the order of their
// names). Its cost grows with what it returns; it takes no lock.
func (b *Backend) List(ctx context.Context, prefix string) ([]filetxn.Entry, error) {
	key := b.docKey(prefix)
	resp, err := b.client.Get(ctx, key, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("etcd: list %s (keys %s...): %w", prefix, key, err)
	}
	kvs := resp.Kvs
	slices.SortStableFunc(kvs, func(x, y *mvccpb.KeyValue) int {
		return cmp.Or(cmp.Compare(x.CreateRevision, y.CreateRevision), strings.Compare(string(x.Key), string(y.Key)))
	})
	out := make([]filetxn.Entry, len(kvs))
	for i, kv := range kvs {
		data := kv.Value
		if data == nil {
			data = []byte{} // an empty document is not no document
		}
		out[i] = filetxn.Entry{Name: string(kv.Key[len(b.docKey("")):]), Data: data, Created: kv.CreateRevision}
	}
	return out, nil
}

// putOp returns the operation of p in a Commit: a put, a delete, or with
// Prefix a delete of every key under the prefix (one operation, whatever
// their number).
func (b *Backend) putOp(p filetxn.Put) clientv3.Op {
	switch {
	case p.Remove && p.Prefix:
		return clientv3.OpDelete(b.docKey(p.Name), clientv3.WithPrefix())
	case p.Remove:
		return clientv3.OpDelete(b.docKey(p.Name))
	}
	return clientv3.OpPut(b.docKey(p.Name), string(p.Data))
}

// touched returns the names of read (a hold's documents read) that p
// writes or removes.
func touched(p filetxn.Put, read []string) []string {
	var out []string
	for _, name := range read {
		if name == p.Name || p.Remove && p.Prefix && strings.HasPrefix(name, p.Name) {
			out = append(out, name)
		}
	}
	return out
}

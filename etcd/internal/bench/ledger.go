package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/etcd"
	"github.com/filetxn/filetxn/internal/benchkit"
	"github.com/filetxn/filetxn/ledger"
)

const ledgerName = "deferred-work.md"

func spec(id int) ledger.Spec {
	return ledger.Spec{
		Title:      fmt.Sprintf("bench entry %d", id),
		Origin:     fmt.Sprintf("bench origin %d", id),
		SourceSpec: "bench.md",
		Reason:     "measured",
	}
}

// A ledgerRow is a ledger the section appends to, where it lives, and how
// to put it back to the seed and read it.
type ledgerRow struct {
	store *ledger.Store
	c     *client // nil on files
	reset func() error
	read  func() ([]byte, error)
	end   func()
}

// ledgerBytes returns the seed, a ledger of n entries, and the bytes it
// holds after ops more appends of one entry each, made on files.
func ledgerBytes(ctx context.Context, dir string, n, ops int) (seed, want []byte, err error) {
	d, err := os.MkdirTemp(dir, "seed-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(d)
	path := filepath.Join(d, ledgerName)
	if err := os.WriteFile(path, []byte("# Deferred Work\n"), 0o644); err != nil {
		return nil, nil, err
	}
	s, err := ledger.Open(path, filetxn.WithLockPath(path+".lock"))
	if err != nil {
		return nil, nil, err
	}
	var specs []ledger.Spec
	for id := 1; id <= n; id++ {
		specs = append(specs, spec(id))
	}
	if _, err := s.Append(ctx, specs...); err != nil {
		return nil, nil, err
	}
	if seed, err = os.ReadFile(path); err != nil {
		return nil, nil, err
	}
	for id := n + 1; id <= n+ops; id++ {
		if _, err := s.Append(ctx, spec(id)); err != nil {
			return nil, nil, err
		}
	}
	want, err = os.ReadFile(path)
	return seed, want, err
}

// runLedger times one durable ledger.Store.Append of one entry to a ledger
// of cfg.entries entries: in a local file, and on each target's etcd.
// Every row must end each round with the bytes the appends make on files.
func runLedger(ctx context.Context, cfg *config, targets []*target) (*section, error) {
	sec := &section{Key: "ledger", Title: fmt.Sprintf("One durable ledger.Store.Append to a %d-entry ledger: files and etcd", cfg.entries)}
	seed, want, err := ledgerBytes(ctx, cfg.dir, cfg.entries, cfg.ledgerOps)
	if err != nil {
		return nil, err
	}
	rows := map[*result]*ledgerRow{}
	defer func() {
		for _, lr := range rows {
			if lr.end != nil {
				lr.end()
			}
		}
	}()
	path := filepath.Join(cfg.dir, ledgerName)
	s, err := ledger.Open(path, filetxn.WithLockPath(path+".lock"))
	if err != nil {
		return nil, err
	}
	r := &result{Row: benchkit.Row{Name: "files: a local ledger, fsync'd", Ref: true}}
	sec.Rows = append(sec.Rows, r)
	rows[r] = &ledgerRow{
		store: s,
		reset: func() error { return os.WriteFile(path, seed, 0o644) },
		read:  func() ([]byte, error) { return os.ReadFile(path) },
	}
	for _, t := range targets {
		c, err := dial(t.endpoints)
		if err != nil {
			return nil, err
		}
		b, err := etcd.New(c.Client, prefix)
		if err != nil {
			c.Close()
			return nil, err
		}
		r := &result{Row: benchkit.Row{Name: "etcd, " + t.name}}
		sec.Rows = append(sec.Rows, r)
		lr := &ledgerRow{c: c, end: func() { b.Close(); c.Close() }}
		rows[r] = lr
		if lr.store, err = ledger.Open(ledgerName, filetxn.WithBackend(b)); err != nil {
			return nil, err
		}
		key := prefix + "/docs/" + ledgerName
		admin := t.admin
		lr.reset = func() error {
			_, err := admin.Put(ctx, key, string(seed))
			return err
		}
		lr.read = func() ([]byte, error) {
			resp, err := admin.Get(ctx, key)
			if err != nil || len(resp.Kvs) == 0 {
				return nil, err
			}
			return resp.Kvs[0].Value, nil
		}
		// Make the session, and check the row, before any timing.
		if err := lr.reset(); err != nil {
			return nil, err
		}
		if _, err := lr.store.Append(ctx, spec(cfg.entries+1)); err != nil {
			return nil, err
		}
	}
	err = sec.Interleave(cfg.rounds, func(r *result) (float64, error) {
		lr := rows[r]
		if err := lr.reset(); err != nil {
			return 0, err
		}
		var sent int64
		if lr.c != nil {
			sent = lr.c.sent.Load()
		}
		start := time.Now()
		for id := cfg.entries + 1; id <= cfg.entries+cfg.ledgerOps; id++ {
			ids, err := lr.store.Append(ctx, spec(id))
			if err != nil {
				return 0, err
			}
			if w := fmt.Sprintf("DW-%d", id); len(ids) != 1 || ids[0] != w {
				return 0, fmt.Errorf("Append(spec(%d)) = %v, want [%s]", id, ids, w)
			}
		}
		elapsed := time.Since(start)
		if lr.c != nil {
			r.requests += lr.c.sent.Load() - sent
			r.ops += int64(cfg.ledgerOps)
		}
		got, err := lr.read()
		if err != nil {
			return 0, err
		}
		if !bytes.Equal(got, want) {
			return 0, fmt.Errorf("the ledger holds %d bytes after %d appends, want the %d bytes they make on files", len(got), cfg.ledgerOps, len(want))
		}
		return float64(elapsed.Nanoseconds()) / float64(cfg.ledgerOps), nil
	})
	return sec, err
}

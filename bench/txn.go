//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/filetxn/filetxn/internal/benchkit"
)

// A txnRow is one way to make one durable append to a store of n entries.
type txnRow interface {
	append(id int) error // one durable append of the entry with this id
	check(want []byte, id int) error
	reset() error // back to the seed, untimed
	close() error
}

type fileRow struct {
	path string
	seed []byte
	do   func(id int) error
}

func (f *fileRow) append(id int) error { return f.do(id) }
func (f *fileRow) reset() error        { return os.WriteFile(f.path, f.seed, 0o644) }
func (f *fileRow) close() error        { return nil }
func (f *fileRow) check(want []byte, _ int) error {
	got, err := os.ReadFile(f.path)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s holds %d bytes after one append, want the %d bytes ledger.Store.Append publishes", f.path, len(got), len(want))
	}
	return nil
}

type dbRow struct {
	name string
	put  func(id int, body []byte) error
	get  func(id int) ([]byte, error)
	rst  func() error
	cls  func() error
}

func (d *dbRow) append(id int) error { return d.put(id, appendEntry(nil, id, "a")) }
func (d *dbRow) reset() error        { return d.rst() }
func (d *dbRow) close() error        { return d.cls() }
func (d *dbRow) check(want []byte, id int) error {
	b, err := d.get(id)
	return checkBody(d.name, id, b, err, want[len(want)-len(appendEntry(nil, id, "a")):])
}

// Row names shared by the txn and scaling sections.
const (
	rowFloor         = "floor (flock + read + renameio + dir fsync)"
	rowFiletxn       = "filetxn ledger.Store.Append"
	rowSQLiteRollbak = "SQLite rollback journal, synchronous=FULL"
	rowSQLiteWAL     = "SQLite WAL, synchronous=FULL"
	rowBolt          = "bbolt Update"
)

// openTxnRow builds the named row on a fresh directory holding n entries.
func openTxnRow(name, dir string, n int, seed []byte) (txnRow, error) {
	switch name {
	case rowFloor, rowFiletxn:
		path := filepath.Join(dir, "deferred-work.md")
		f := &fileRow{path: path, seed: seed}
		if err := f.reset(); err != nil {
			return nil, err
		}
		if name == rowFloor {
			var buf []byte
			f.do = func(id int) error { return floorAppend(&buf, path, id, "a") }
			return f, nil
		}
		s, err := openLedger(path)
		if err != nil {
			return nil, err
		}
		f.do = func(id int) error { return ledgerAppend(s, id, "a") }
		return f, nil
	case rowSQLiteRollbak, rowSQLiteWAL:
		journal := "DELETE"
		if name == rowSQLiteWAL {
			journal = "WAL"
		}
		s, err := openSQLite(dir, "entries.db", journal, n, 1)
		if err != nil {
			return nil, err
		}
		return &dbRow{name: name, put: s.put, get: s.get, rst: s.reset, cls: s.close}, nil
	case rowBolt:
		b, err := openBolt(dir, n)
		if err != nil {
			return nil, err
		}
		return &dbRow{name: name, put: b.put, get: b.get, rst: b.reset, cls: b.close}, nil
	}
	return nil, fmt.Errorf("no txn row %q", name)
}

// runTxn measures one durable append on stores of n entries: each round,
// each row makes ops appends from the seed (ns per append), then is reset.
// Before any timing every row makes one append and must hold what
// ledger.Store.Append publishes.
func runTxn(cfg *config, key, title string, n int, names []string, ops int) (*section, error) {
	seed := seedLedger(n)
	want, err := wantAfterAppend(cfg.dir, n, seed, "a")
	if err != nil {
		return nil, err
	}
	sec := &section{Key: key, Title: title}
	sd, err := os.MkdirTemp(cfg.dir, key+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(sd) // after the rows are closed
	rows := map[*result]txnRow{}
	defer func() {
		for _, r := range rows {
			r.close()
		}
	}()
	for i, name := range names {
		d, err := os.MkdirTemp(sd, "row-")
		if err != nil {
			return nil, err
		}
		row, err := openTxnRow(name, d, n, seed)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", key, name, err)
		}
		r := &result{Row: benchkit.Row{Name: name, Ref: i == 0}, measured: name == rowFiletxn}
		sec.Rows = append(sec.Rows, r)
		rows[r] = row
		if err := row.append(n + 1); err != nil {
			return nil, fmt.Errorf("%s: %s: first append: %w", key, name, err)
		}
		if err := row.check(want, n+1); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", key, name, err)
		}
		if err := row.reset(); err != nil {
			return nil, err
		}
	}
	err = timeSteps(sec, cfg.rounds, ops,
		func(r *result, k int) error { return rows[r].append(n + k) },
		func(r *result) error { return rows[r].reset() })
	return sec, err
}

//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/filetxn/filetxn/internal/benchkit"
	"github.com/filetxn/filetxn/ledger"
)

const (
	rowSQLitePooled  = "SQLite WAL FULL, pooled connections"
	rowSQLiteOneConn = "SQLite WAL FULL, one connection"
	rowBoltUpdate    = "bbolt Update"
	rowBoltBatch     = "bbolt Batch (default MaxBatchSize)"
	rowBoltBatch8    = "bbolt Batch, MaxBatchSize 8"
	rowFiletxnGroup  = "filetxn ledger.Store.Append"
)

// A groupRow is one store written by several goroutines of this process.
type groupRow struct {
	put    func(g, j int) error // goroutine g's j-th durable append
	verify func() error         // every append is stored, as appended
	reset  func() error
	close  func() error
}

const groupSeed = 100

// groupID is the id of goroutine g's j-th append for the database rows.
func groupID(g, j, per int) int { return groupSeed + 1 + g*per + j }

func openGroupRow(name, dir string, goroutines, per int) (*groupRow, error) {
	total := goroutines * per
	switch name {
	case rowSQLitePooled, rowSQLiteOneConn:
		conns := 0
		if name == rowSQLiteOneConn {
			conns = 1
		}
		s, err := openSQLite(dir, "entries.db", "WAL", groupSeed, conns)
		if err != nil {
			return nil, err
		}
		return &groupRow{
			put: func(g, j int) error { id := groupID(g, j, per); return s.put(id, appendEntry(nil, id, "a")) },
			verify: func() error {
				return verifyDB(name, s.count, s.get, total)
			},
			reset: s.reset, close: s.close,
		}, nil
	case rowBoltUpdate, rowBoltBatch, rowBoltBatch8:
		b, err := openBolt(dir, groupSeed)
		if err != nil {
			return nil, err
		}
		put := b.put
		if name != rowBoltUpdate {
			put = b.batchPut
		}
		if name == rowBoltBatch8 {
			b.db.MaxBatchSize = 8
		}
		return &groupRow{
			put:    func(g, j int) error { id := groupID(g, j, per); return put(id, appendEntry(nil, id, "a")) },
			verify: func() error { return verifyDB(name, b.count, b.get, total) },
			reset:  b.reset, close: b.close,
		}, nil
	case rowFiletxnGroup:
		path := filepath.Join(dir, "deferred-work.md")
		seed := seedLedger(groupSeed)
		if err := os.WriteFile(path, seed, 0o644); err != nil {
			return nil, err
		}
		s, err := openLedger(path)
		if err != nil {
			return nil, err
		}
		return &groupRow{
			put: func(g, j int) error {
				_, err := s.Append(bgCtx, spec(groupID(g, j, per), "a"))
				return err
			},
			verify: func() error {
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				doc, err := ledger.Parse(data)
				if err != nil {
					return err
				}
				if got, want := len(doc.Entries()), groupSeed+total; got != want {
					return fmt.Errorf("%s holds %d entries after %d appends to %d, want %d", path, got, total, groupSeed, want)
				}
				return nil
			},
			reset: func() error { return os.WriteFile(path, seed, 0o644) },
			close: func() error { return nil },
		}, nil
	}
	return nil, fmt.Errorf("no group row %q", name)
}

func verifyDB(name string, count func() (int, error), get func(int) ([]byte, error), total int) error {
	n, err := count()
	if err != nil {
		return err
	}
	if n != groupSeed+total {
		return fmt.Errorf("%s holds %d entries after %d appends to %d, want %d", name, n, total, groupSeed, groupSeed+total)
	}
	for id := groupSeed + 1; id <= groupSeed+total; id++ {
		b, err := get(id)
		if err := checkBody(name, id, b, err, appendEntry(nil, id, "a")); err != nil {
			return err
		}
	}
	return nil
}

// runGroup measures the throughput of goroutines goroutines each making
// per durable appends to one store, all started together.
func runGroup(cfg *config) (*section, error) {
	g, per := cfg.groupGoroutines, cfg.groupAppends
	sec := &section{Key: "group", Throughput: true,
		Title: fmt.Sprintf("%d goroutines x %d durable appends, one file", g, per)}
	names := []string{rowSQLitePooled, rowSQLiteOneConn, rowBoltUpdate, rowBoltBatch, rowBoltBatch8, rowFiletxnGroup}
	sd, err := os.MkdirTemp(cfg.dir, "group-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(sd) // after the rows are closed
	rows := map[*result]*groupRow{}
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
		row, err := openGroupRow(name, d, g, per)
		if err != nil {
			return nil, fmt.Errorf("group: %s: %w", name, err)
		}
		r := &result{Row: benchkit.Row{Name: name, Ref: i == 0}, measured: name == rowFiletxnGroup}
		sec.Rows = append(sec.Rows, r)
		rows[r] = row
	}
	err = sec.Interleave(cfg.rounds, func(r *result) (float64, error) {
		row := rows[r]
		var elapsed time.Duration
		err := measure(r, g*per, func() error {
			errs := make([]error, g)
			var wg sync.WaitGroup
			start := time.Now()
			for gi := range g {
				wg.Go(func() {
					for j := range per {
						if err := row.put(gi, j); err != nil {
							errs[gi] = err
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed = time.Since(start)
			for _, err := range errs {
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		if err := row.verify(); err != nil {
			return 0, err
		}
		if err := row.reset(); err != nil {
			return 0, err
		}
		return float64(g*per) / elapsed.Seconds(), nil
	})
	return sec, err
}

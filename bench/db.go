//go:build unix

package main

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"fmt"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
	_ "modernc.org/sqlite"
)

// The database peers keep one entry per row (SQLite) or key (bbolt): the
// entry's id and the bytes the ledger would append for it.

type sqliteDB struct {
	db   *sql.DB
	seed int
}

// openSQLite creates a database of n entries in dir with the given journal
// mode and synchronous=FULL, so that a commit is durable when it returns.
// conns bounds the connection pool (0: database/sql's default, no bound).
func openSQLite(dir, name, journal string, n, conns int) (*sqliteDB, error) {
	dsn := "file:" + filepath.Join(dir, name) + "?_pragma=journal_mode(" + journal + ")&_pragma=synchronous(FULL)&_pragma=busy_timeout(60000)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(conns)
	s := &sqliteDB{db: db, seed: n}
	if err := s.create(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func (s *sqliteDB) create() error {
	if _, err := s.db.Exec(`CREATE TABLE entries (id INTEGER PRIMARY KEY, body BLOB NOT NULL)`); err != nil {
		return err
	}
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for id := 1; id <= s.seed; id++ {
		if _, err := tx.Exec(`INSERT INTO entries (id, body) VALUES (?, ?)`, id, appendEntry(nil, id, "seed")); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (s *sqliteDB) put(id int, body []byte) error {
	_, err := s.db.Exec(`INSERT INTO entries (id, body) VALUES (?, ?)`, id, body)
	return err
}

func (s *sqliteDB) get(id int) ([]byte, error) {
	var b []byte
	err := s.db.QueryRow(`SELECT body FROM entries WHERE id = ?`, id).Scan(&b)
	return b, err
}

func (s *sqliteDB) count() (int, error) {
	var n int
	err := s.db.QueryRow(`SELECT count(*) FROM entries`).Scan(&n)
	return n, err
}

func (s *sqliteDB) reset() error {
	_, err := s.db.Exec(`DELETE FROM entries WHERE id > ?`, s.seed)
	return err
}

func (s *sqliteDB) close() error { return s.db.Close() }

type boltDB struct {
	db   *bolt.DB
	seed int
}

var bucket = []byte("entries")

func boltKey(id int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(id)) }

// openBolt creates a bbolt database of n entries in dir, with bbolt's
// defaults (a commit fsyncs before it returns).
func openBolt(dir string, n int) (*boltDB, error) {
	db, err := bolt.Open(filepath.Join(dir, "entries.bolt"), 0o600, nil)
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(bucket)
		if err != nil {
			return err
		}
		for id := 1; id <= n; id++ {
			if err := b.Put(boltKey(id), appendEntry(nil, id, "seed")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &boltDB{db: db, seed: n}, nil
}

func (b *boltDB) put(id int, body []byte) error {
	return b.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(boltKey(id), body) })
}

// batchPut is put through DB.Batch, whose fn may run more than once: Put of
// the same key and value is idempotent.
func (b *boltDB) batchPut(id int, body []byte) error {
	return b.db.Batch(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(boltKey(id), body) })
}

func (b *boltDB) get(id int) ([]byte, error) {
	var v []byte
	err := b.db.View(func(tx *bolt.Tx) error {
		v = bytes.Clone(tx.Bucket(bucket).Get(boltKey(id)))
		return nil
	})
	if err == nil && v == nil {
		err = fmt.Errorf("bbolt: no key %d", id)
	}
	return v, err
}

func (b *boltDB) count() (int, error) {
	var n int
	err := b.db.View(func(tx *bolt.Tx) error { n = tx.Bucket(bucket).Stats().KeyN; return nil })
	return n, err
}

func (b *boltDB) reset() error {
	return b.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		for k, _ := c.Seek(boltKey(b.seed + 1)); k != nil; k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

func (b *boltDB) close() error { return b.db.Close() }

// checkBody reports whether the stored entry is the one appended.
func checkBody(who string, id int, got []byte, err error, want []byte) error {
	if err != nil {
		return fmt.Errorf("%s: reading entry %d back: %w", who, id, err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s: entry %d = %q, want %q", who, id, got, want)
	}
	return nil
}

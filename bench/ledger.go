//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/ledger"
	"github.com/google/renameio/v2"
	"golang.org/x/sys/unix"
)

// The ledger every file-based row edits: a heading and n entries of the
// shape ledger.Store.Append writes, so that the floor can append an entry
// with a template and publish the bytes the library publishes.
func seedLedger(n int) []byte {
	b := []byte("# Deferred Work\n")
	for id := 1; id <= n; id++ {
		b = appendEntry(b, id, "seed")
	}
	return b
}

// appendEntry appends to b the bytes ledger.Store.Append writes for
// spec(id, tag) at the end of a ledger whose highest id is id-1.
func appendEntry(b []byte, id int, tag string) []byte {
	return fmt.Appendf(b, "\n### DW-%d: bench entry %d\norigin: bench origin %s-%d\nlocation: n/a\nsource_spec: `bench.md`\nreason: measured\nstatus: open\n", id, id, tag, id)
}

func spec(id int, tag string) ledger.Spec {
	return ledger.Spec{
		Title:      fmt.Sprintf("bench entry %d", id),
		Origin:     fmt.Sprintf("bench origin %s-%d", tag, id),
		SourceSpec: "bench.md",
		Reason:     "measured",
	}
}

// openLedger opens the ledger at path with its lock beside it, where the
// floor takes it too (by default the lock would live under bmad-loop's state
// root).
func openLedger(path string) (*ledger.Store, error) {
	return ledger.Open(path, filetxn.WithLockPath(path+".lock"))
}

// ledgerAppend is filetxn's row: one ledger.Store.Append of one spec, checked
// to mint the id the floor's template assumes.
func ledgerAppend(s *ledger.Store, id int, tag string) error {
	ids, err := s.Append(context.Background(), spec(id, tag))
	if err != nil {
		return err
	}
	if want := fmt.Sprintf("DW-%d", id); len(ids) != 1 || ids[0] != want {
		return fmt.Errorf("ledger.Store.Append(spec(%d)) = %v, want [%s]", id, ids, want)
	}
	return nil
}

// wantAfterAppend returns the bytes ledger.Store.Append publishes when it
// appends spec(n+1, tag) to seedLedger(n), and checks that they are the seed
// followed by appendEntry's bytes: every row's check compares against these.
func wantAfterAppend(dir string, n int, seed []byte, tag string) ([]byte, error) {
	d, err := os.MkdirTemp(dir, "want-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(d)
	path := filepath.Join(d, "deferred-work.md")
	if err := os.WriteFile(path, seed, 0o644); err != nil {
		return nil, err
	}
	s, err := openLedger(path)
	if err != nil {
		return nil, err
	}
	if err := ledgerAppend(s, n+1, tag); err != nil {
		return nil, err
	}
	got, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if want := appendEntry(bytes.Clone(seed), n+1, tag); !bytes.Equal(got, want) {
		return nil, fmt.Errorf("ledger.Store.Append on a %d-entry ledger wrote %q at the end, want %q: the floor's template no longer matches the ledger format", n, got[min(len(seed), len(got)):], want[len(seed):])
	}
	return got, nil
}

// floorLock opens and locks the lock file; the returned function unlocks and
// closes it. It is the least an exclusive cross-process lock costs.
func floorLock(lockPath string) (func(), error) {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "flock", Path: lockPath, Err: err}
	}
	return func() {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}

// floorReplace is the least a durable atomic replacement costs: write a
// temp file in the target's directory, fsync it, rename it over the target
// (renameio), then fsync the directory so that the rename survives a crash.
func floorReplace(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := renameio.WriteFile(path, data, 0o644, renameio.WithTempDir(dir)); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// floorAppend is the floor's row: lock, read, append the entry, replace
// durably, unlock. It reads into *buf, which it keeps for the next call with
// room for the entry, so that the floor pays no allocation and no copy for
// the file's bytes (the library keeps its read buffer too).
func floorAppend(buf *[]byte, path string, id int, tag string) error {
	unlock, err := floorLock(path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	data, err := readInto(*buf, path)
	if err != nil {
		return err
	}
	data = appendEntry(data, id, tag)
	*buf = data
	return floorReplace(path, data)
}

// readInto reads the file at path into b[:0], growing it to the file's size
// and some room.
func readInto(b []byte, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if need := int(fi.Size()) + 4096; cap(b) < need {
		b = make([]byte, 0, need+need/4)
	}
	b = b[:cap(b)]
	n := 0
	for {
		m, err := f.Read(b[n:])
		n += m
		if err == io.EOF {
			return b[:n], nil
		}
		if err != nil {
			return nil, err
		}
		if n == len(b) {
			b = append(b, 0)[:n]
			b = b[:cap(b)]
		}
	}
}

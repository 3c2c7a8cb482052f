//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/internal/benchkit"
	"github.com/filetxn/filetxn/ledger"
)

// The commit section: the step of an orchestrator that closes a ledger
// entry and moves its story to done on the board, durably, as one
// filetxn.MutateAll over the two files (one commit a crash cannot split),
// beside the two single-file transactions it replaces (a ledger Mutate,
// then a board Mutate) and one single-file transaction alone. The two
// files and their locks share one project directory and one state root,
// as bmad-loop's do.
const (
	commitEntries = 100 // ledger entries and board stories, every one open
	commitDate    = "2026-12-01"
	commitNote    = "fixed in its story"
)

// Row names of the commit section.
const (
	rowCommitLedger = "filetxn ledger.Store.Mutate: close one entry"
	rowCommitBoard  = "filetxn board.Store.Mutate: advance one story"
	rowCommitTwo    = "two single-file transactions: the ledger close, then the board advance"
	rowCommitAll    = "filetxn.MutateAll: the ledger close and the board advance in one commit"
	rowCommitBound  = "bound: the two files and a record made durable, renamed, directory fsynced"
)

// commitSeeds returns the ledger (every entry open) and the board (every
// story in review) the rows start from.
func commitSeeds() (ledgerSeed, boardSeed []byte) {
	ledgerSeed = seedLedger(commitEntries)
	var b strings.Builder
	b.WriteString("# Sprint status\n\ndevelopment_status:\n  epic-1: in-progress\n")
	for k := 1; k <= commitEntries; k++ {
		fmt.Fprintf(&b, "  %s: review\n", commitStory(k))
	}
	return ledgerSeed, []byte(b.String())
}

func commitStory(k int) string { return fmt.Sprintf("1-%d-bench-story-%d", k, k) }

// commitRow is one row's project directory: its two files, opened with
// their locks under the directory's own state root.
type commitRow struct {
	ledger        *ledger.Store
	board         *board.Store
	ledgerPath    string
	boardPath     string
	ledgerSeed    []byte
	boardSeed     []byte
	step          func(k int) error // step k closes DW-k and advances story k
	touchesBoard  bool
	touchesLedger bool
	unlocked      bool // the bound row: it takes no lock
}

// openCommitRow opens the row name in dir; after is what the bound row
// writes (see boundStep), and nil for every other row.
func openCommitRow(name, dir string, ledgerSeed, boardSeed []byte, after [][2][]byte) (*commitRow, error) {
	dir, err := filepath.Abs(dir) // a state root is absolute
	if err != nil {
		return nil, err
	}
	root := filepath.Join(dir, "state")
	c := &commitRow{
		ledgerPath: filepath.Join(dir, "deferred-work.md"), boardPath: filepath.Join(dir, "sprint-status.yaml"),
		ledgerSeed: ledgerSeed, boardSeed: boardSeed,
	}
	if c.ledger, err = ledger.Open(c.ledgerPath, filetxn.WithStateRoot(root)); err != nil {
		return nil, err
	}
	if c.board, err = board.Open(c.boardPath, filetxn.WithStateRoot(root)); err != nil {
		return nil, err
	}
	ctx := context.Background()
	closeIn := func(d *ledger.Doc, k int) error {
		id := fmt.Sprintf("DW-%d", k)
		done, err := d.MarkDone([]string{id}, commitDate, commitNote)
		if err == nil && len(done) != 1 {
			err = fmt.Errorf("MarkDone(%s) closed %v, want it", id, done)
		}
		return err
	}
	advanceIn := func(d *board.Doc, k int) error {
		st, err := d.Advance(commitStory(k), board.Done)
		if err == nil && st != board.Done {
			err = fmt.Errorf("Advance(%s, done) = %s, want done", commitStory(k), st)
		}
		return err
	}
	closeEntry := func(k int) error {
		_, err := c.ledger.Mutate(ctx, func(d *ledger.Doc) error { return closeIn(d, k) })
		return err
	}
	advance := func(k int) error {
		_, err := c.board.Mutate(ctx, func(d *board.Doc) error { return advanceIn(d, k) })
		return err
	}
	switch name {
	case rowCommitLedger:
		c.step, c.touchesLedger = closeEntry, true
	case rowCommitBoard:
		c.step, c.touchesBoard = advance, true
	case rowCommitTwo:
		c.step = func(k int) error {
			if err := closeEntry(k); err != nil {
				return err
			}
			return advance(k)
		}
		c.touchesLedger, c.touchesBoard = true, true
	case rowCommitAll:
		members := []filetxn.Member{c.ledger, c.board}
		c.step = func(k int) error {
			cs, err := filetxn.MutateAll(ctx, members, func(m *filetxn.Multi) error {
				if err := closeIn(c.ledger.In(m), k); err != nil {
					return err
				}
				return advanceIn(c.board.In(m), k)
			})
			if err == nil && (!cs[0].Written || !cs[1].Written) {
				err = fmt.Errorf("MutateAll wrote %+v, want both files", cs)
			}
			return err
		}
		c.touchesLedger, c.touchesBoard = true, true
	case rowCommitBound:
		record := filepath.Join(root, "bound.record")
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(record, bytes.Repeat([]byte{'0'}, 256), 0o644); err != nil {
			return nil, err
		}
		c.step = boundStep(c, record, after)
		c.touchesLedger, c.touchesBoard, c.unlocked = true, true, true
	default:
		return nil, fmt.Errorf("no commit row %q", name)
	}
	return c, c.reset()
}

// boundStep returns the bound row's step: step k writes the bytes that the
// two single-file transactions' step k leaves (after[k-1]), with only what
// no commit of the two files can skip if no crash may split it and no
// reader may see a file torn, on any file system that keeps only POSIX's
// promises: each file's new bytes in a new file, fsynced before the rename
// that publishes it; a record of the decision made durable before the
// first rename, here the cheapest durable write there is (a fixed-size
// record overwritten in place, fdatasync); and the renames made durable by
// their directory's fsync. The three syncs of the first step go at once, as
// MutateAll's do. It takes no lock and reads, parses and encodes nothing,
// so it is below what any commit costs.
func boundStep(c *commitRow, record string, after [][2][]byte) func(k int) error {
	dir := filepath.Dir(c.ledgerPath)
	rec := bytes.Repeat([]byte{'r'}, 256)
	return func(k int) error {
		var files [3]*os.File
		defer func() {
			for _, f := range files {
				if f != nil {
					f.Close()
				}
			}
		}()
		for i, data := range after[k-1] {
			f, err := os.CreateTemp(dir, ".bound-*")
			if err != nil {
				return err
			}
			files[i] = f
			if _, err := f.Write(data); err != nil {
				return err
			}
		}
		f, err := os.OpenFile(record, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		files[2] = f
		if _, err := f.WriteAt(rec, 0); err != nil {
			return err
		}
		errs := make(chan error, 3)
		for i, f := range files {
			go func() {
				if i == 2 {
					errs <- datasync(f)
				} else {
					errs <- f.Sync()
				}
			}()
		}
		for range files {
			if e := <-errs; e != nil && err == nil {
				err = e
			}
		}
		if err != nil {
			return err
		}
		for i, target := range []string{c.ledgerPath, c.boardPath} {
			if err := os.Rename(files[i].Name(), target); err != nil {
				return err
			}
		}
		d, err := os.Open(dir)
		if err != nil {
			return err
		}
		defer d.Close()
		return d.Sync()
	}
}

// stepBytes returns the bytes that the two single-file transactions leave
// in the ledger and the board after each of their first ops steps from the
// seeds, made in a scratch directory under dir.
func stepBytes(dir string, ops int, ledgerSeed, boardSeed []byte) ([][2][]byte, error) {
	d, err := os.MkdirTemp(dir, "bytes-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(d)
	row, err := openCommitRow(rowCommitTwo, d, ledgerSeed, boardSeed, nil)
	if err != nil {
		return nil, err
	}
	after := make([][2][]byte, ops)
	for k := 1; k <= ops; k++ {
		if err := row.step(k); err != nil {
			return nil, err
		}
		if after[k-1][0], after[k-1][1], err = row.files(); err != nil {
			return nil, err
		}
	}
	return after, nil
}

// reset puts both files back to their seeds, untimed.
func (c *commitRow) reset() error {
	if err := os.WriteFile(c.ledgerPath, c.ledgerSeed, 0o644); err != nil {
		return err
	}
	return os.WriteFile(c.boardPath, c.boardSeed, 0o644)
}

// files returns the bytes of the files the row writes.
func (c *commitRow) files() (ledgerBytes, boardBytes []byte, err error) {
	if c.touchesLedger {
		if ledgerBytes, err = os.ReadFile(c.ledgerPath); err != nil {
			return nil, nil, err
		}
	}
	if c.touchesBoard {
		if boardBytes, err = os.ReadFile(c.boardPath); err != nil {
			return nil, nil, err
		}
	}
	return ledgerBytes, boardBytes, nil
}

// runCommit measures the commit section: each round, each row makes ops
// steps from the seeds (ns per step), then is reset. Before any timing
// every row makes one step and must leave each file it writes with the
// bytes the two single-file transactions leave, and no other file in its
// directory or its state root's lock directory (a staged file or an intent
// record left behind).
func runCommit(cfg *config) (*section, error) {
	const key = "commit"
	ops := min(cfg.commitOps, commitEntries)
	ledgerSeed, boardSeed := commitSeeds()
	sec := &section{Key: key, Title: "A durable two-file commit: close a ledger entry and advance its story"}
	sd, err := os.MkdirTemp(cfg.dir, key+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(sd)
	after, err := stepBytes(sd, ops, ledgerSeed, boardSeed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	names := []string{rowCommitLedger, rowCommitBoard, rowCommitTwo, rowCommitAll, rowCommitBound}
	rows := map[*result]*commitRow{}
	var wantLedger, wantBoard []byte
	for i, name := range names {
		d, err := os.MkdirTemp(sd, "row-")
		if err != nil {
			return nil, err
		}
		row, err := openCommitRow(name, d, ledgerSeed, boardSeed, after)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", key, name, err)
		}
		r := &result{Row: benchkit.Row{Name: name, Ref: i == 0}, measured: true}
		sec.Rows = append(sec.Rows, r)
		rows[r] = row
		if err := row.step(1); err != nil {
			return nil, fmt.Errorf("%s: %s: first step: %w", key, name, err)
		}
		lb, bb, err := row.files()
		if err != nil {
			return nil, err
		}
		if name == rowCommitTwo {
			wantLedger, wantBoard = lb, bb
		}
		if err := checkLeftovers(d, row); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", key, name, err)
		}
	}
	for r, row := range rows {
		lb, bb, err := row.files()
		if err != nil {
			return nil, err
		}
		if (lb != nil && !bytes.Equal(lb, wantLedger)) || (bb != nil && !bytes.Equal(bb, wantBoard)) {
			return nil, fmt.Errorf("%s: %s: after one step the files differ from the two single-file transactions'", key, r.Name)
		}
		if err := row.reset(); err != nil {
			return nil, err
		}
	}
	err = timeSteps(sec, cfg.rounds, ops,
		func(r *result, k int) error { return rows[r].step(k) },
		func(r *result) error { return rows[r].reset() })
	return sec, err
}

// checkLeftovers fails if the row's directory holds anything but its two
// files (or one) and the state root, or the state root's lock directory
// anything but lock files (a row that takes no lock has none).
func checkLeftovers(dir string, row *commitRow) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		switch n := e.Name(); {
		case n == "state" && e.IsDir():
		case n == filepath.Base(row.ledgerPath), n == filepath.Base(row.boardPath):
		default:
			return fmt.Errorf("%s is left in the project directory", n)
		}
	}
	if row.unlocked {
		return nil
	}
	for _, s := range []interface{ LockPath() (string, error) }{row.ledger, row.board} {
		lp, err := s.LockPath()
		if err != nil {
			return err
		}
		ents, err := os.ReadDir(filepath.Dir(lp))
		if err != nil {
			return err
		}
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".lock") {
				return fmt.Errorf("%s is left beside the lock files", e.Name())
			}
		}
	}
	return nil
}

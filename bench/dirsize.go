//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/filetxn/filetxn/internal/benchkit"
)

// The dirsize section: one durable append to a 100-entry ledger whose
// directory also holds 0, 1,000 or 10,000 other files (a story file per
// story beside the ledger, a large repository's docs folder). A write costs
// what its file costs, not what its directory holds: each row is filetxn's
// append with that many neighbours, and the floor's rows show what the file
// system itself charges for the larger directory.
const dirsizeEntries = 100

// dirsizeNeighbours are the neighbour counts of the section's rows; the
// first is the reference.
var dirsizeNeighbours = []int{0, 1000, 10000}

// dirsizeCounts lists the neighbour counts for the report: "0, 1,000 or 10,000".
func dirsizeCounts() string {
	var s string
	for i, k := range dirsizeNeighbours {
		switch {
		case i == 0:
		case i == len(dirsizeNeighbours)-1:
			s += " or "
		default:
			s += ", "
		}
		s += thousands(k)
	}
	return s
}

// dirsizeRow names filetxn's row (or the floor's) with neighbours other
// files in the directory.
func dirsizeRow(row string, neighbours int) string {
	return fmt.Sprintf("%s, %s neighbours", row, thousands(neighbours))
}

// addNeighbours creates n empty files in dir, named as story files are.
func addNeighbours(dir string, n int) error {
	for i := range n {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%d-%d-story-%05d.md", i/100+1, i%100+1, i)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// runDirSize measures one durable append with each count of neighbours, in
// interleaved rounds, as runTxn does: ops appends from the seed per row and
// round (ns per append), then a reset. The reference is filetxn's append in
// an empty directory.
func runDirSize(cfg *config) (*section, error) {
	const key = "dirsize"
	n := dirsizeEntries
	seed := seedLedger(n)
	want, err := wantAfterAppend(cfg.dir, n, seed, "a")
	if err != nil {
		return nil, err
	}
	sec := &section{Key: key, Title: fmt.Sprintf("One durable append, %d-entry ledger, by other files in its directory", n)}
	sd, err := os.MkdirTemp(cfg.dir, key+"-")
	if err != nil {
		return nil, err
	}
	// The tens of thousands of neighbours stay until the scratch directory
	// goes at the end of the whole run: removed here, the file system's
	// work of removing them fell on the fsyncs of the sections after this
	// one, even after a sync.
	rows := map[*result]txnRow{}
	defer func() {
		for _, r := range rows {
			r.close()
		}
	}()
	type spec struct {
		row        string
		neighbours int
	}
	var specs []spec
	for _, k := range dirsizeNeighbours {
		specs = append(specs, spec{rowFiletxn, k})
	}
	specs = append(specs, spec{rowFloor, dirsizeNeighbours[0]}, spec{rowFloor, dirsizeNeighbours[len(dirsizeNeighbours)-1]})
	for i, sp := range specs {
		d, err := os.MkdirTemp(sd, "row-")
		if err != nil {
			return nil, err
		}
		if err := addNeighbours(d, sp.neighbours); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		name := dirsizeRow(sp.row, sp.neighbours)
		row, err := openTxnRow(sp.row, d, n, seed)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", key, name, err)
		}
		r := &result{Row: benchkit.Row{Name: name, Ref: i == 0}, measured: sp.row == rowFiletxn}
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
	syncAll() // the neighbours' creation is committed before any row is timed
	err = timeSteps(sec, cfg.rounds, cfg.txnOps,
		func(r *result, k int) error { return rows[r].append(n + k) },
		func(r *result) error { return rows[r].reset() })
	return sec, err
}

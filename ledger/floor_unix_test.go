//go:build unix

package ledger

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// newFloor returns a function that runs n cycles of the raw floor and returns
// the time they took, excluding the reset of the file to seed before the
// first (BenchmarkAppend resets its ledger as often). A cycle appends one
// entry to the file the cheapest correct way: open and flock a lock file,
// read, write a temp file, fsync, rename, fsync the directory, unlock,
// close.
func newFloor(b *testing.B, seed []byte) func(n int) time.Duration {
	dir := b.TempDir()
	path := filepath.Join(dir, "deferred-work.md")
	block := []byte("\n### DW-99999: benchmark entry\norigin: benchmark origin\nlocation: n/a\nsource_spec: `bench.md`\nseverity: low\nreason: r\nstatus: open\n")
	return func(n int) time.Duration {
		var total time.Duration
		if err := os.WriteFile(path, seed, 0o644); err != nil {
			b.Fatal(err)
		}
		for range n {
			start := time.Now()
			if err := floorCycle(dir, path, block); err != nil {
				b.Fatal(err)
			}
			total += time.Since(start)
		}
		return total
	}
}

func floorCycle(dir, path string, block []byte) error {
	lf, err := os.OpenFile(filepath.Join(dir, "floor.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	defer unix.Flock(int(lf.Fd()), unix.LOCK_UN)
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".floor-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(data, block...)); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

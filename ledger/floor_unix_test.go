//go:build unix

package ledger

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// benchFloor publishes seed plus one appended entry the cheapest correct way:
// flock, read, write a temp file, fsync, rename, fsync the directory, unlock.
// It is the floor the Store's append is measured against.
func benchFloor(b *testing.B, seed []byte) {
	dir := b.TempDir()
	path := filepath.Join(dir, "deferred-work.md")
	lf, err := os.OpenFile(filepath.Join(dir, "floor.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer lf.Close()
	block := []byte("\n### DW-99999: benchmark entry\norigin: benchmark origin\nlocation: n/a\nsource_spec: `bench.md`\nseverity: low\nreason: r\nstatus: open\n")
	b.SetBytes(int64(len(seed)))
	for b.Loop() {
		b.StopTimer()
		if err := os.WriteFile(path, seed, 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
			b.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		tmp, err := os.CreateTemp(dir, ".floor-*")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tmp.Write(append(data, block...)); err != nil {
			b.Fatal(err)
		}
		if err := tmp.Sync(); err != nil {
			b.Fatal(err)
		}
		tmp.Close()
		if err := os.Rename(tmp.Name(), path); err != nil {
			b.Fatal(err)
		}
		d, err := os.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Sync(); err != nil {
			b.Fatal(err)
		}
		d.Close()
		unix.Flock(int(lf.Fd()), unix.LOCK_UN)
	}
}

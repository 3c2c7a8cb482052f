//go:build unix

package loopstate

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// floor replaces a state file the cheapest correct way, as the root
// package's BenchmarkRawFloor does: open and flock the lock file, read the
// file, write a temp file, fsync it, rename it over the file, fsync the
// directory, unlock.
type floor struct {
	path, lock string
	i          int
}

func newFloor(b *testing.B, l *Loop) *floor {
	return &floor{path: l.state, lock: filepath.Join(l.dir, "floor.lock")}
}

func (f *floor) op(b *testing.B, sync bool) {
	lf, err := os.OpenFile(f.lock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		b.Fatal(err)
	}
	f.i++
	data[len(data)-3] = byte('a' + f.i%26) // a change of the same size
	tmp := f.path + ".tmp"
	t, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := t.Write(data); err != nil {
		b.Fatal(err)
	}
	if sync {
		if err := t.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	t.Close()
	if err := os.Rename(tmp, f.path); err != nil {
		b.Fatal(err)
	}
	if sync {
		d, err := os.Open(filepath.Dir(f.path))
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Sync(); err != nil {
			b.Fatal(err)
		}
		d.Close()
	}
	unix.Flock(int(lf.Fd()), unix.LOCK_UN)
	lf.Close()
}

package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchPayload is about 100 lines and 5 KB, the size of a typical state file.
var benchPayload = func() []byte {
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "- id: DW-%04d  status: open  note: some deferred work item text\n", i)
	}
	return []byte(b.String())
}()

// BenchmarkWriteFile measures WriteFile over an existing file; compare "durable"
// with BenchmarkRawFloor and "nosync" with BenchmarkRawFloorNoSync from the same
// run to read off the package's overhead.
func BenchmarkWriteFile(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts []Option
	}{
		{"durable", nil},
		{"nosync", []Option{WithoutSync()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "state.yaml")
			if err := os.WriteFile(path, benchPayload, 0o644); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(benchPayload)))
			for b.Loop() {
				if err := WriteFile(path, benchPayload, 0o644, bc.opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRawFloor is the least a durable replace can do, by hand and with no
// checks: create a temporary file, write, fsync, close, rename, open the
// directory, fsync it, close it.
func BenchmarkRawFloor(b *testing.B) { rawFloor(b, true) }

// BenchmarkRawFloorNoSync is BenchmarkRawFloor without the two fsyncs.
func BenchmarkRawFloorNoSync(b *testing.B) { rawFloor(b, false) }

func rawFloor(b *testing.B, sync bool) {
	dir := b.TempDir()
	path := filepath.Join(dir, "state.yaml")
	tmp := filepath.Join(dir, ".state.yaml.tmp")
	if err := os.WriteFile(path, benchPayload, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(benchPayload)))
	for b.Loop() {
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(benchPayload); err != nil {
			b.Fatal(err)
		}
		if sync {
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			b.Fatal(err)
		}
		if sync {
			d, err := os.Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			if err := d.Sync(); err != nil {
				b.Fatal(err)
			}
			if err := d.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

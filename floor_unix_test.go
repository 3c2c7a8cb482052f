//go:build unix

package filetxn

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkRawFloor is the least any correct implementation must do: open
// and flock the lock file, read the data, write a temp file, fsync it,
// rename it over the data, fsync the directory, unlock.
func BenchmarkRawFloor(b *testing.B) {
	for _, tc := range []struct {
		name string
		sync bool
	}{{"durable", true}, {"nosync", false}} {
		b.Run(tc.name, func(b *testing.B) {
			path := seed(b)
			dir := filepath.Dir(path)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				lf, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
				if err != nil {
					b.Fatal(err)
				}
				if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
					b.Fatal(err)
				}
				data, err := os.ReadFile(path)
				if err != nil {
					b.Fatal(err)
				}
				out := bytes.Join(roll(bytes.SplitAfter(data, []byte("\n")), i), nil)
				tmp := path + ".tmp"
				f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.Write(out); err != nil {
					b.Fatal(err)
				}
				if tc.sync {
					if err := f.Sync(); err != nil {
						b.Fatal(err)
					}
				}
				f.Close()
				if err := os.Rename(tmp, path); err != nil {
					b.Fatal(err)
				}
				if tc.sync {
					d, err := os.Open(dir)
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
		})
	}
}

package filetxn

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/filetxn/filetxn/internal/seam"
)

// seed writes a 100-line file of about 100 bytes a line.
func seed(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "ledger.md")
	var buf bytes.Buffer
	for i := range 100 {
		fmt.Fprintf(&buf, "%-99s\n", fmt.Sprintf("- line %d of the ledger", i))
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// roll drops the first line and appends one of about 100 bytes, so the file
// keeps its size however many iterations run.
func roll(ls [][]byte, i int) [][]byte {
	return append(ls[1:], fmt.Appendf(nil, "%-99s\n", fmt.Sprintf("- appended entry %d", i)))
}

// BenchmarkMutate and BenchmarkRawFloor run the same edit: append about 100
// bytes to a 100-line file under an exclusive lock, durably. Compare them in
// one run: go test -run='^$' -bench='Mutate|RawFloor' .
func BenchmarkMutate(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{{"durable", nil}, {"nosync", []Option{WithoutSync()}}} {
		b.Run(tc.name, func(b *testing.B) {
			s := must(NewStore[*lines](seed(b), linesCodec{}, tc.opts...))
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := s.Mutate(ctx, func(d *lines) error { d.ls = roll(d.ls, i); return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGroup runs 800 durable Mutates on one file, each appending about
// 100 bytes: made by 8 goroutines at once (100 each), and one after another
// by one goroutine. It reports what a caller cares about, Mutates per
// second, and how many Mutates each write published; with group commit the
// concurrent run shares each durable write among the calls queued behind
// the lock. Run: go test -run='^$' -bench=Group -benchtime=3x .
func BenchmarkGroup(b *testing.B) {
	const calls = 800
	for _, tc := range []struct {
		name       string
		goroutines int
	}{{"serial", 1}, {"8goroutines", 8}} {
		b.Run(tc.name, func(b *testing.B) {
			s := must(NewStore[*lines](seed(b), linesCodec{}))
			var n, writes atomic.Int64
			seam.Set(b, func(p seam.Point, path string) error {
				if p == seam.Replaced && path == s.path {
					writes.Add(1)
				}
				return nil
			})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				var wg sync.WaitGroup
				for range tc.goroutines {
					wg.Go(func() {
						for range calls / tc.goroutines {
							i := int(n.Add(1))
							if _, err := s.Mutate(ctx, func(d *lines) error { d.ls = roll(d.ls, i); return nil }); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(n.Load())/b.Elapsed().Seconds(), "mutates/s")
			b.ReportMetric(float64(n.Load())/float64(max(writes.Load(), 1)), "mutates/write")
		})
	}
}

package filetxn

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
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

package ledger

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// syntheticLedger returns a ledger of n canonical entries shaped like the
// appender's, about 330 bytes each, a fifth of them closed.
func syntheticLedger(n int) string {
	var b strings.Builder
	b.WriteString("# Deferred Work\n")
	for i := 1; i <= n; i++ {
		status := "open"
		if i%5 == 0 {
			status = "done 2026-06-11\nresolution: resolved by sweep bundle dw-fix"
		}
		fmt.Fprintf(&b, "\n### DW-%d: A deferred finding number %d about the retry policy\norigin: code review of spec-%d.md\nlocation: src/module%d.go:%d\nsource_spec: `spec-%d.md`\nseverity: medium\nreason: pre-existing behaviour, out of scope for the story that surfaced it; revisit with the next change to this module.\nstatus: %s\n",
			i, i, i%97, i%13, i, i%97, status)
	}
	return b.String()
}

var benchSpec = Spec{Title: "benchmark entry", Origin: "benchmark origin", SourceSpec: "bench.md", Reason: "r", Severity: "low"}

func BenchmarkParse(b *testing.B) {
	for _, n := range []int{100, 10000} {
		data := []byte(syntheticLedger(n))
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				d, _ := Parse(data)
				d.Entries()
			}
		})
	}
}

// BenchmarkDocAppend is the in-memory cost of one append (parse, dedupe,
// next id, encode), without I/O.
func BenchmarkDocAppend(b *testing.B) {
	for _, n := range []int{100, 10000} {
		data := []byte(syntheticLedger(n))
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				d, _ := Parse(data)
				d.Append(benchSpec)
				d.Bytes()
			}
		})
	}
}

// BenchmarkAppend appends one entry through the Store (probe, lock, read,
// parse, append, write, fsync, rename, directory fsync) to a ledger of 100
// and of 10,000 entries, next to the raw floor: the same bytes published with
// flock, read, write, fsync, rename and directory fsync and no parsing
// (see floor_unix_test.go).
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{100, 10000} {
		seed := []byte(syntheticLedger(n))
		b.Run(fmt.Sprintf("entries=%d/store", n), func(b *testing.B) {
			dir := b.TempDir()
			s := Open(filepath.Join(dir, "deferred-work.md"), WithStateRoot(filepath.Join(dir, "state")))
			b.SetBytes(int64(len(seed)))
			for b.Loop() {
				b.StopTimer()
				if err := os.WriteFile(s.Path(), seed, 0o644); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := s.Append(ctx, benchSpec); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("entries=%d/floor", n), func(b *testing.B) {
			benchFloor(b, seed)
		})
	}
}

// BenchmarkBatch compares 100 appends in one Mutate with 100 Mutates of one
// append each, on a 100-entry ledger.
func BenchmarkBatch(b *testing.B) {
	ctx := context.Background()
	seed := []byte(syntheticLedger(100))
	specs := make([]Spec, 100)
	for i := range specs {
		specs[i] = benchSpec
		specs[i].Origin = fmt.Sprintf("batch origin %d", i)
	}
	setup := func(b *testing.B) *Store {
		dir := b.TempDir()
		return Open(filepath.Join(dir, "deferred-work.md"), WithStateRoot(filepath.Join(dir, "state")))
	}
	reset := func(b *testing.B, s *Store) {
		b.StopTimer()
		if err := os.WriteFile(s.Path(), seed, 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.Run("one-append", func(b *testing.B) {
		s := setup(b)
		for b.Loop() {
			reset(b, s)
			if _, err := s.Mutate(ctx, func(d *Doc) error { _, err := d.Append(specs[0]); return err }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("100-in-one-mutate", func(b *testing.B) {
		s := setup(b)
		for b.Loop() {
			reset(b, s)
			if _, err := s.Mutate(ctx, func(d *Doc) error { _, err := d.Append(specs...); return err }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("100-mutates", func(b *testing.B) {
		s := setup(b)
		for b.Loop() {
			reset(b, s)
			for _, sp := range specs {
				if _, err := s.Mutate(ctx, func(d *Doc) error { _, err := d.Append(sp); return err }); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

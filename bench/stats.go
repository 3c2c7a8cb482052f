//go:build unix

package main

import (
	"fmt"
	"runtime"
	"time"

	"github.com/filetxn/filetxn/internal/benchkit"
)

// A result is one row of a section (see benchkit.Row), with the
// allocation counts of filetxn's rows.
type result struct {
	benchkit.Row

	// Allocation counts, for filetxn's rows only (measured is false for
	// the others): the runtime.MemStats deltas summed over every timed batch.
	measured      bool
	mallocs, heap uint64
	ops           int
}

// A section is one table of the report.
type section = benchkit.Section[*result]

// style prints the tables: times under a millisecond to a hundredth of a
// µs, and the allocations per operation of filetxn's rows.
var style = benchkit.Style[*result]{
	MicroDecimals: 2,
	Columns:       []string{"allocs/op", "B/op"},
	Cells:         func(r *result) []string { a, b := r.allocs(); return []string{a, b} },
}

func (r *result) allocs() (string, string) {
	if !r.measured || r.ops == 0 {
		return "", ""
	}
	return fmt.Sprintf("%.0f", float64(r.mallocs)/float64(r.ops)), fmt.Sprintf("%.0f", float64(r.heap)/float64(r.ops))
}

// timeSteps interleaves the rows of sec (see benchkit.Section.Interleave),
// each round timing ops calls of step(r, k), k from 1 to ops, and then
// calling reset(r), untimed: a row's value is its time per call in
// nanoseconds.
func timeSteps(sec *section, rounds, ops int, step func(r *result, k int) error, reset func(r *result) error) error {
	return sec.Interleave(rounds, func(r *result) (float64, error) {
		var elapsed time.Duration
		err := measure(r, ops, func() error {
			start := time.Now()
			for k := 1; k <= ops; k++ {
				if err := step(r, k); err != nil {
					return err
				}
			}
			elapsed = time.Since(start)
			return nil
		})
		if err != nil {
			return 0, err
		}
		if err := reset(r); err != nil {
			return 0, err
		}
		return float64(elapsed.Nanoseconds()) / float64(ops), nil
	})
}

// measure runs fn and, when r counts allocations, adds the heap allocations
// fn made (in this whole process) to r's totals for ops operations.
func measure(r *result, ops int, fn func() error) error {
	if !r.measured {
		return fn()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := fn()
	runtime.ReadMemStats(&after)
	r.mallocs += after.Mallocs - before.Mallocs
	r.heap += after.TotalAlloc - before.TotalAlloc
	r.ops += ops
	return err
}

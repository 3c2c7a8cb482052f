//go:build unix

package main

import (
	"fmt"
	"runtime"
	"sort"
	"time"
)

// A result is one row of a section: its value in every round (nanoseconds per
// operation, or operations per second for a throughput section) and its ratio
// to the section's reference row in the same round.
type result struct {
	name   string
	ref    bool
	values []float64
	ratios []float64

	// Allocation counts, for filetxn's rows only (measured is false for
	// the others): the runtime.MemStats deltas summed over every timed batch.
	measured      bool
	mallocs, heap uint64
	ops           int

	note string // printed after the row (the unlocked control's lost updates)
}

// A section is one table of the report.
type section struct {
	key, title string
	throughput bool // values are ops/s and a higher ratio is better
	rows       []*result
	notes      []string
}

func (s *section) row(name string) *result {
	for _, r := range s.rows {
		if r.name == name {
			return r
		}
	}
	return nil
}

// quartiles returns the first quartile, the median and the third quartile of
// xs, interpolating linearly between order statistics.
func quartiles(xs []float64) (q1, med, q3 float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	at := func(p float64) float64 {
		pos := p * float64(len(s)-1)
		i := int(pos)
		if i+1 >= len(s) {
			return s[len(s)-1]
		}
		return s[i] + (pos-float64(i))*(s[i+1]-s[i])
	}
	return at(0.25), at(0.5), at(0.75)
}

func median(xs []float64) float64 { _, m, _ := quartiles(xs); return m }

// interleave runs rounds rounds of every row of sec, in an order rotated by
// one row each round so that no row always runs first or right after the
// reference, and records each row's value and its ratio to the reference's
// value of the same round. run returns the row's value for one round.
func interleave(sec *section, rounds int, run func(r *result) (float64, error)) error {
	var ref *result
	for _, r := range sec.rows {
		if r.ref {
			ref = r
		}
	}
	if ref == nil {
		return fmt.Errorf("section %s has no reference row", sec.key)
	}
	n := len(sec.rows)
	for round := range rounds {
		got := make(map[*result]float64, n)
		for k := range n {
			r := sec.rows[(round+k)%n]
			v, err := run(r)
			if err != nil {
				return fmt.Errorf("%s: %s: round %d: %w", sec.key, r.name, round+1, err)
			}
			got[r] = v
		}
		for _, r := range sec.rows {
			r.values = append(r.values, got[r])
			r.ratios = append(r.ratios, got[r]/got[ref])
		}
	}
	return nil
}

// timeSteps interleaves the rows of sec (see interleave), each round
// timing ops calls of step(r, k), k from 1 to ops, and then calling
// reset(r), untimed: a row's value is its time per call in nanoseconds.
func timeSteps(sec *section, rounds, ops int, step func(r *result, k int) error, reset func(r *result) error) error {
	return interleave(sec, rounds, func(r *result) (float64, error) {
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

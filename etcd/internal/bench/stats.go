package main

import (
	"fmt"
	"sort"
)

// A result is one row of a section: its value in every round (nanoseconds
// per operation, or operations per second in a throughput section), its
// ratio to the section's reference row in the same round, and the requests
// its clients sent.
type result struct {
	name     string
	ref      bool
	values   []float64
	ratios   []float64
	requests int64 // unary gRPC calls, over every round
	ops      int64 // operations, over every round
	note     string
}

// requestsPerOp returns the row's gRPC calls per operation, or "" if it
// made none.
func (r *result) requestsPerOp() string {
	if r.ops == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", float64(r.requests)/float64(r.ops))
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

// quartiles returns the first quartile, the median and the third quartile
// of xs, interpolating between order statistics.
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

// interleave runs rounds rounds of every row of sec, A B C, B C A, ...: the
// order rotates by one row a round, so that no row always runs first or
// right after another, and machine noise falls on every row alike. run
// returns the row's value in one round.
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

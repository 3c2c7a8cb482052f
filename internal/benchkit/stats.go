package benchkit

import (
	"fmt"
	"slices"
)

// A Row is one row of a section: its value in every round (nanoseconds per
// operation, or operations per second in a throughput section) and its
// ratio to the section's reference row in the same round. A benchmark's
// own row type embeds it.
type Row struct {
	Name   string
	Ref    bool // the section's reference: every other row is a ratio to it
	Values []float64
	Ratios []float64
	Note   string // printed after the row's name (a control's lost updates)
}

// Base returns r itself; a type that embeds Row gets it, and with it
// satisfies [Rower].
func (r *Row) Base() *Row { return r }

// Label returns the row's name as a table shows it: with " (reference)"
// after the reference's name, and the note, if any, after a semicolon.
func (r *Row) Label() string {
	name := r.Name
	if r.Ref {
		name += " (reference)"
	}
	if r.Note != "" {
		name += "; " + r.Note
	}
	return name
}

// A Rower is a benchmark's row type: a pointer to a struct that embeds
// [Row].
type Rower interface {
	Base() *Row
}

// A Section is one table of a report: rows measured in the same rounds,
// each a ratio to the one reference row.
type Section[R Rower] struct {
	Key        string // names the section to flags, targets and charts
	Title      string
	Throughput bool // values are ops/s and a higher ratio is better
	Rows       []R
	Notes      []string // paragraphs printed after the table
}

// Row returns the row named name, or the zero R (nil) if there is none.
func (s *Section[R]) Row(name string) R {
	for _, r := range s.Rows {
		if r.Base().Name == name {
			return r
		}
	}
	var none R
	return none
}

// Interleave runs rounds rounds of every row of s, A B C, B C A, ...: the
// order rotates by one row a round, so that no row always runs first or
// right after another, and machine noise falls on every row alike. run
// returns the row's value in one round; Interleave appends it to the
// row's Values and its ratio to the reference's value of the same round
// to its Ratios. It returns an error, naming the section, the row and the
// round, as soon as run does, and one if s has no reference row.
func (s *Section[R]) Interleave(rounds int, run func(r R) (float64, error)) error {
	var ref *Row
	for _, r := range s.Rows {
		if r.Base().Ref {
			ref = r.Base()
		}
	}
	if ref == nil {
		return fmt.Errorf("section %s has no reference row", s.Key)
	}
	n := len(s.Rows)
	for round := range rounds {
		got := make(map[*Row]float64, n)
		for k := range n {
			r := s.Rows[(round+k)%n]
			v, err := run(r)
			if err != nil {
				return fmt.Errorf("%s: %s: round %d: %w", s.Key, r.Base().Name, round+1, err)
			}
			got[r.Base()] = v
		}
		for _, r := range s.Rows {
			b := r.Base()
			b.Values = append(b.Values, got[b])
			b.Ratios = append(b.Ratios, got[b]/got[ref])
		}
	}
	return nil
}

// Sections is a run's sections in order.
type Sections[R Rower] []*Section[R]

// Find returns the section keyed key, or nil if there is none.
func (ss Sections[R]) Find(key string) *Section[R] {
	for _, s := range ss {
		if s.Key == key {
			return s
		}
	}
	return nil
}

// Ratios returns the ratios of the row named row in the section keyed key,
// one a round, or nil if the run has no such section or row (a section it
// did not measure).
func (ss Sections[R]) Ratios(key, row string) []float64 {
	if s := ss.Find(key); s != nil {
		for _, r := range s.Rows {
			if r.Base().Name == row {
				return r.Base().Ratios
			}
		}
	}
	return nil
}

// Quartiles returns the first quartile, the median and the third quartile
// of xs, interpolating linearly between order statistics; all three are 0
// if xs is empty. It does not change xs.
func Quartiles(xs []float64) (q1, med, q3 float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Sorted(slices.Values(xs))
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

// LostNote says how many of total updates an unfenced control lost in
// each round: the range over the rounds and its median; "" if none ran.
func LostNote(lost []int, total int) string {
	if len(lost) == 0 {
		return ""
	}
	xs := make([]float64, len(lost))
	for i, n := range lost {
		xs[i] = float64(n)
	}
	return fmt.Sprintf("lost %d-%d of %d per round (median %.0f)", slices.Min(lost), slices.Max(lost), total, Median(xs))
}

// Median returns the median of xs (see [Quartiles]), or 0 if xs is empty.
func Median(xs []float64) float64 { _, m, _ := Quartiles(xs); return m }

package main

import (
	"fmt"

	"github.com/filetxn/filetxn/internal/benchkit"
)

// A result is one row of a section (see benchkit.Row), with the requests
// its clients sent.
type result struct {
	benchkit.Row
	requests int64 // unary gRPC calls, over every round
	ops      int64 // operations, over every round
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
type section = benchkit.Section[*result]

// style prints the tables: times under a millisecond in whole µs, and the
// requests per operation of every row.
var style = benchkit.Style[*result]{
	Columns: []string{"requests/op"},
	Cells:   func(r *result) []string { return []string{r.requestsPerOp()} },
}

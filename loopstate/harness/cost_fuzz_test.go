package harness

import (
	"bytes"
	"math"
	"testing"
	"time"
)

// FuzzCostLine: whatever a harness prints as its last line, reading it as
// a cost line never panics; a line that does not name "cost" is no cost
// line, a cost read is finite and not negative, and a refusal says why.
func FuzzCostLine(f *testing.F) {
	for _, s := range []string{
		`{"cost": {"usd": 0.09, "tokens": 21000, "seconds": 63.0}, "note": "3 issues triaged"}`,
		`{"cost": {}}`,
		`{"cost": {"usd": "a lot"}}`,
		`{"cost": {"usd": -1}}`,
		`{"cost": {"tokens": 1e400}}`,
		`{"cost": null}`,
		`{"cost": [1]}`,
		`["cost"]`,
		`{"cost": {"usd": 1}} trailing`,
		`the "cost" of it all`,
		`no cost here`,
		"",
	} {
		f.Add([]byte(s), int64(time.Second))
	}
	f.Fuzz(func(t *testing.T, line []byte, wallNanos int64) {
		wall := time.Duration(wallNanos)
		c, note, err := parseCostLine(line, wall)
		switch {
		case !bytes.Contains(line, []byte(`"cost"`)) && (c != nil || err != nil || note != ""):
			t.Fatalf("parseCostLine(%q) = %v, %q, %v; want no cost line", line, c, note, err)
		case err != nil && (c != nil || err.Error() == ""):
			t.Fatalf("parseCostLine(%q) = %v, %q, %v; want no cost and a reason", line, c, note, err)
		case c != nil && wall >= 0 && (bad(c.USD) || bad(c.Seconds) || c.Tokens < 0):
			t.Fatalf("parseCostLine(%q) = %+v, want a finite cost of at least 0", line, *c)
		}
	})
}

func bad(v float64) bool { return v < 0 || math.IsNaN(v) || math.IsInf(v, 0) }

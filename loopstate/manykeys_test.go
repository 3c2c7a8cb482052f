package loopstate

import (
	"fmt"
	"strings"
	"testing"
)

// TestDecodeOfManyUnknownKeysKeepsThemAndFindsADuplicate: a state with
// 100,000 top-level keys it does not know decodes, encodes unchanged to its
// own bytes, and a key repeated among them (past the first 32, where the
// duplicate check moves from a scan to a map) is refused as a duplicate.
// Ablation: with the map's check left out (seen[key] never consulted), the
// repeated key goes unnoticed and the second half of the test fails.
func TestDecodeOfManyUnknownKeysKeepsThemAndFindsADuplicate(t *testing.T) {
	d, _ := New("x", epoch0, Template{})
	good := d.canonical()
	var b strings.Builder
	b.WriteString("{\n")
	for i := range 100000 {
		fmt.Fprintf(&b, "  \"x-%d\": %d,\n", i, i)
	}
	many := b.String() + good[2:]
	got, err := (codec{}).Decode([]byte(many))
	if err != nil {
		t.Fatalf("Decode(100,000 unknown keys) = %v", err)
	}
	if out, err := (codec{}).Encode(got); err != nil || string(out) != many {
		t.Fatalf("Encode(Decode(100,000 unknown keys)) = %d bytes, %v; want the %d bytes read", len(out), err, len(many))
	}
	dup := strings.Replace(many, `"x-70000": 70000,`, `"x-70000": 70000, "x-50000": 1,`, 1)
	if _, err := (codec{}).Decode([]byte(dup)); !keyIs(err, "x-50000") || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("Decode(x-50000 twice among 100,000 keys) = %v, want a *filetxn.FormatError naming the duplicate key", err)
	}
}

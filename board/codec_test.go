package board

import (
	"reflect"
	"sync"
	"testing"
)

// TestCodecCacheHandsOutCopies checks that a cached parse is handed out as a copy: a
// caller that edits its Doc changes neither the cache nor a later Decode of the same bytes.
// Ablation: returning c.doc itself from lastParse.get makes this red.
func TestCodecCacheHandsOutCopies(t *testing.T) {
	c := NewCodec("sprint-status.yaml")
	src := []byte(sprint)
	d1, err := c.Decode(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d1.Advance("3-2-digest-delivery", InProgress); err != nil {
		t.Fatal(err)
	}
	d2, err := c.Decode(src)
	if err != nil {
		t.Fatal(err)
	}
	fresh, _ := Parse("sprint-status.yaml", src)
	if !reflect.DeepEqual(docState(d2), docState(fresh)) || d2.Changed() {
		t.Fatalf("Decode(same bytes) after an edit of the first Doc = %+v, want a fresh parse", docState(d2))
	}
	// The second Doc came from the cache: editing it must not edit the cache either.
	if _, err := d2.Advance("4-1-thing", Done); err != nil {
		t.Fatal(err)
	}
	if d, _ := c.Decode(src); !reflect.DeepEqual(docState(d), docState(fresh)) {
		t.Fatalf("Decode(same bytes) after an edit of a cached Doc = %+v, want a fresh parse", docState(d))
	}
	// Encode remembers the edited board: decoding those bytes gives the Doc a parse would.
	out, err := c.Encode(d1)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.cache.slots[0].src, out) {
		t.Fatalf("Encode did not remember the bytes it returned")
	}
	d3, err := c.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Parse("sprint-status.yaml", out)
	if !reflect.DeepEqual(docState(d3), docState(want)) || d3.Changed() {
		t.Fatalf("Decode(encoded bytes) = %+v, want %+v", docState(d3), docState(want))
	}
	// The old bytes are still remembered: a locked read after the probe's Encode hits.
	if d := c.cache.get(src); d == nil {
		t.Fatalf("the board decoded before the last Encode was forgotten")
	}
	if d, err := c.Decode(nil); err != nil || d.Exists() {
		t.Fatalf("Decode(nil) = %v, %v, want a missing board", d, err)
	}
}

// TestCodecIsSafeForConcurrentUse runs decodes and encodes of two boards at once; run it
// with -race.
func TestCodecIsSafeForConcurrentUse(t *testing.T) {
	c := NewCodec("sprint-status.yaml")
	srcs := [][]byte{[]byte(sprint), []byte("development_status:\n  1-1-a: backlog\n")}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				src := srcs[(i+j)%2]
				d, err := c.Decode(src)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := d.Advance("1-1-a", Review); err != nil {
					t.Error(err)
					return
				}
				if _, err := c.Encode(d); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, src := range srcs {
		d, err := c.Decode(src)
		if err != nil {
			t.Fatal(err)
		}
		fresh, _ := Parse("sprint-status.yaml", src)
		if !reflect.DeepEqual(docState(d), docState(fresh)) {
			t.Errorf("after concurrent use, Decode(%q) differs from a fresh parse", src)
		}
	}
}

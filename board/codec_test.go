package board

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/filetxn/filetxn/internal/seam"
)

// TestCodecCacheHandsOutCopies checks that a cached parse is handed out as a copy: a
// caller that edits its Doc changes neither the cache nor a later Decode of the same bytes.
// Ablation: returning c.doc itself from lastParse.get makes this red.
func TestCodecCacheHandsOutCopies(t *testing.T) {
	c := newCodec()
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
	fresh, _ := Parse(src)
	if !reflect.DeepEqual(docState(d2), docState(fresh)) || string(d2.Bytes()) != string(src) {
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
	if !c.cache.docs[0].hasBytes(out) {
		t.Fatalf("Encode did not remember the bytes it returned")
	}
	d3, err := c.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Parse(out)
	if !reflect.DeepEqual(docState(d3), docState(want)) || string(d3.Bytes()) != string(out) {
		t.Fatalf("Decode(encoded bytes) = %+v, want %+v", docState(d3), docState(want))
	}
	// The old bytes are still remembered: a locked read after the probe's Encode hits.
	if d := c.cache.get(src); d == nil {
		t.Fatalf("the board decoded before the last Encode was forgotten")
	}
	if d, err := c.Decode(nil); err != nil || (d.Bytes() != nil) {
		t.Fatalf("Decode(nil) = %v, %v, want a missing board", d, err)
	}
}

// TestCodecIsSafeForConcurrentUse runs decodes and encodes of two boards at once; run it
// with -race.
func TestCodecIsSafeForConcurrentUse(t *testing.T) {
	c := newCodec()
	srcs := [][]byte{[]byte(sprint), []byte("development_status:\n  3-2-digest-delivery: backlog\n")}
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
				if _, err := d.Advance("3-2-digest-delivery", Review); err != nil {
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
		fresh, _ := Parse(src)
		if !reflect.DeepEqual(docState(d), docState(fresh)) {
			t.Errorf("after concurrent use, Decode(%q) differs from a fresh parse", src)
		}
	}
}

// TestCodecCacheMatchesParsing drives one cached Codec through many transactions, each a
// probe and a locked pass as Store.Advance makes them, on a board of 30 stories, so that
// cached Docs pile up more than maxCachedEdits edits and get folded. Every board the Codec
// encodes must be the one a fresh parse of the previous board gives after the same
// Advance, and after the first Decode nothing is parsed again. Ablations: folding a
// cached Doc's edits onto its old bytes (rebased(d.src) instead of rebased(string(src)))
// makes this red (the folded Doc no longer answers for its bytes, so they are parsed
// again); so does a hasBytes that compares lengths only (wrong bytes are published), and
// a fold that leaves the lines' offsets as they were (checkLines).
func TestCodecCacheMatchesParsing(t *testing.T) {
	var b strings.Builder
	b.WriteString("development_status:\n  epic-1: in-progress\n")
	var keys []string
	for i := 1; i <= 30; i++ {
		keys = append(keys, fmt.Sprintf("1-%d-story-%d", i, i))
		fmt.Fprintf(&b, "  %s: done  # note %d\n", keys[i-1], i)
	}
	c := newCodec()
	parses := 0
	onPoint(t, seam.BoardParse, func() { parses++ })
	data := []byte(b.String())
	for i := range 100 {
		key, target := keys[i*7%len(keys)], AwaitingOperator
		if ref, _ := Parse(data); ref.status(ref.index[key]) == AwaitingOperator {
			target = Done
		}
		var out []byte
		for range 2 { // the probe, then the locked pass on the same bytes
			d, err := c.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.Advance(key, target, AllowRegression()); err != nil {
				t.Fatal(err)
			}
			out, err = c.Encode(d)
			if err != nil {
				t.Fatal(err)
			}
		}
		ref, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ref.Advance(key, target, AllowRegression()); err != nil {
			t.Fatal(err)
		}
		if want := ref.Bytes(); !bytes.Equal(out, want) {
			t.Fatalf("round %d: Encode after Advance(%q, %q) = %q, want %q", i, key, target, out, want)
		}
		data = out
		for _, d := range c.cache.docs {
			checkLines(t, d)
		}
	}
	if parses != 1 {
		t.Errorf("parses in 100 transactions = %d, want 1", parses)
	}
}

// checkLines checks the invariant that pieces relies on: a Doc's parsed lines are its
// parsed text, and each knows where it starts in it.
func checkLines(t *testing.T, d *Doc) {
	t.Helper()
	if d == nil {
		return
	}
	if j := string(joinLines(d.lines)); j != d.src {
		t.Fatalf("lines of a Doc join to %q, its text is %q", j, d.src)
	}
	off := 0
	for i, l := range d.lines {
		if l.off != off {
			t.Fatalf("line %d starts at %d in the text, says %d", i+1, off, l.off)
		}
		off += len(l.text) + len(l.term)
	}
}

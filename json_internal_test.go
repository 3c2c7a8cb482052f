package filetxn

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestJSONForgetsFreedDocuments checks that the JSON codec's memory of what
// each document was decoded from goes when the documents do: a long-running
// process that decodes a file in every transaction does not grow. The
// cleanups run after a garbage collection, on their own goroutine, so the
// test collects until the memory is empty, within a generous bound.
// Ablation: not registering the cleanup in Decode makes it red.
func TestJSONForgetsFreedDocuments(t *testing.T) {
	c := JSON[map[string]int]().(*jsonCodec[map[string]int])
	for i := range 100 {
		doc, err := c.Decode([]byte(`{"n": 1}`))
		require.NoError(t, err, "Decode #%d", i)
		_, err = c.Encode(doc)
		require.NoError(t, err, "Encode #%d", i)
	}
	remembered := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.docs)
	}
	require.Eventually(t, func() bool { runtime.GC(); return remembered() == 0 }, 30*time.Second, 10*time.Millisecond,
		"JSON codec remembers documents after all 100 were freed, want none")
}

// TestJSONPanicsOnAZeroSizeType checks that JSON refuses, as a programmer
// error, a type whose documents all share one address (Go may give every
// zero-size value the same pointer), under which it would hand one file's
// bytes to another's unchanged document.
func TestJSONPanicsOnAZeroSizeType(t *testing.T) {
	require.PanicsWithValue(t, "filetxn: JSON[struct {}]: a type of size zero, whose documents cannot be told apart",
		func() { JSON[struct{}]() }, "JSON[struct{}]() did not panic, want a panic")
}

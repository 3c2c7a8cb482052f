package proc

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGoroutineID checks that ID is stable within a goroutine, whatever
// its stack depth, differs between goroutines, and agrees with the id in the
// goroutine's stack trace (stackGoid) in every goroutine, including ones
// started long after goidOffset was found. Ablation: ID reading the word
// after the one goidOffset found (off+8) makes it red.
func TestGoroutineID(t *testing.T) {
	me := ID()
	require.Equal(t, stackGoid(), me, "ID() = %d, want stackGoid() %d", me, stackGoid())
	got := atDepth(30, ID)
	require.Equal(t, me, got, "ID() 30 frames deeper = %d, want %d", got, me)

	const n = 64
	ids := make([][2]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			runtime.Gosched() // let the scheduler move some of them
			ids[i] = [2]int64{atDepth(i%8, ID), stackGoid()}
		})
	}
	wg.Wait()
	seen := map[int64]bool{me: true}
	for i, id := range ids {
		require.Equal(t, id[1], id[0], "ID() in goroutine %d = %d, want stackGoid() %d", i, id[0], id[1])
		require.False(t, seen[id[0]], "ID() in goroutine %d = %d, an id already seen", i, id[0])
		seen[id[0]] = true
	}
}

// TestGoroutineIDReadsTheDescriptor checks that where getg exists the id is
// read from the goroutine's descriptor, not parsed from a stack trace: the
// fallback is correct but its cost grows with the stack's depth.
func TestGoroutineIDReadsTheDescriptor(t *testing.T) {
	if getg() == nil {
		t.Skipf("no getg on %s/%s (%s): ID parses stack traces", runtime.GOOS, runtime.GOARCH, runtime.Compiler)
	}
	off := goidOffset()
	require.GreaterOrEqual(t, off, 0, "goidOffset() = %d, want the offset of the id in the g", off)
}

// atDepth calls f with n more frames on the stack.
//
//go:noinline
func atDepth(n int, f func() int64) int64 {
	if n == 0 {
		return f()
	}
	return atDepth(n-1, f)
}

// BenchmarkGoroutineID is the price of reading the goroutine id, which every
// Acquire pays once, at several stack depths, by ID (what Acquire uses)
// and by stackGoid (the fallback, whose runtime walks the whole stack to
// print the trace header it is parsed from).
func BenchmarkGoroutineID(b *testing.B) {
	for _, bc := range []struct {
		name string
		f    func() int64
	}{{"ID", ID}, {"stack", stackGoid}} {
		for _, depth := range []int{0, 10, 30} {
			b.Run(fmt.Sprintf("%s/depth=%d", bc.name, depth), func(b *testing.B) {
				for b.Loop() {
					atDepth(depth, bc.f)
				}
			})
		}
	}
}

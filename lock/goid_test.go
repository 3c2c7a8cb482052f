package lock

import (
	"fmt"
	"testing"
)

// TestGoroutineID checks that goid is stable within a goroutine, whatever
// its stack depth, and differs between goroutines.
func TestGoroutineID(t *testing.T) {
	me := goid()
	if got := atDepth(30, goid); got != me {
		t.Errorf("goid() 30 frames deeper = %d, want %d", got, me)
	}
	other := make(chan int64)
	go func() { other <- goid() }()
	if id := <-other; id == me || id <= 0 {
		t.Errorf("goid() in another goroutine = %d; this one's is %d", id, me)
	}
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
// Acquire pays once, at several stack depths: the runtime walks the whole
// stack to print the trace header it is parsed from.
func BenchmarkGoroutineID(b *testing.B) {
	for _, depth := range []int{0, 10, 30} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			for b.Loop() {
				atDepth(depth, goid)
			}
		})
	}
}

package testkit

import (
	"testing"
	"time"
)

// Bound is how long Recv waits before it fails the test.
const Bound = 20 * time.Second

// Recv returns the next value from ch. Past Bound it fails the test with
// t.Fatalf naming what, so it must run on the test's goroutine.
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(Bound):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

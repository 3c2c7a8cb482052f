package testkit

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Make returns the paths of files that are not regular, by kind, one of
// each kind this system can make without privileges: "directory" everywhere;
// on Unix also "fifo" (a named pipe nobody writes to), "socket" (a listening
// unix socket) and "device" (a symbolic link to /dev/null). Each lives in a
// directory of its own, so that a lock file beside it has room. Everything
// is removed when the test ends.
func Make(t testing.TB) map[string]string {
	t.Helper()
	paths := map[string]string{"directory": filepath.Join(t.TempDir(), "data")}
	if err := os.Mkdir(paths["directory"], 0o755); err != nil {
		t.Fatal(err)
	}
	makeSpecial(t, paths)
	return paths
}

// Within returns f's result, failing t if f has not returned after a
// generous bound: a call that hangs is the failure, reported instead of
// hanging the test binary. (The hung goroutine is left behind.)
func Within[T any](t testing.TB, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not return within 30s: it hangs")
		panic("unreachable")
	}
}

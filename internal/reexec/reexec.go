// Package reexec is the former home of the re-execution harness, now package
// github.com/filetxn/filetxn/filetxntest, which has the same names: this
// package only forwards to it, and goes once the project's tests import
// filetxntest. (It carries no "Deprecated:" markers so that staticcheck stays
// quiet about its remaining users meanwhile.)
package reexec

import (
	"testing"

	"github.com/filetxn/filetxn/filetxntest"
)

// Timeout is filetxntest.Timeout.
const Timeout = filetxntest.Timeout

type (
	// C is filetxntest.C.
	C = filetxntest.C
	// Group is filetxntest.Group.
	Group = filetxntest.Group
	// Options is filetxntest.Options.
	Options = filetxntest.Options
)

// Child is filetxntest.Child.
func Child(t testing.TB) *C { return filetxntest.Child(t) }

// Start is filetxntest.Start.
func Start(t testing.TB, n int, dir string) *Group {
	t.Helper()
	return filetxntest.Start(t, n, dir)
}

// StartWith is filetxntest.StartWith.
func StartWith(t testing.TB, n int, dir string, o Options) *Group {
	t.Helper()
	return filetxntest.StartWith(t, n, dir, o)
}

// WaitFor is filetxntest.WaitFor.
func WaitFor(t testing.TB, path string) {
	t.Helper()
	filetxntest.WaitFor(t, path)
}

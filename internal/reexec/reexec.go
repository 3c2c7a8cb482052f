// Package reexec is the former home of the re-execution harness, now package
// filetxntest.
//
// Deprecated: use github.com/filetxn/filetxn/filetxntest, which has the same
// names; this package only forwards to it until the project's tests have
// switched their imports.
package reexec

import (
	"testing"

	"github.com/filetxn/filetxn/filetxntest"
)

// Deprecated: use filetxntest.Timeout.
const Timeout = filetxntest.Timeout

type (
	// Deprecated: use filetxntest.C.
	C = filetxntest.C
	// Deprecated: use filetxntest.Group.
	Group = filetxntest.Group
	// Deprecated: use filetxntest.Options.
	Options = filetxntest.Options
)

// Deprecated: use filetxntest.Child.
func Child(t testing.TB) *C { return filetxntest.Child(t) }

// Deprecated: use filetxntest.Start.
func Start(t testing.TB, n int, dir string) *Group {
	t.Helper()
	return filetxntest.Start(t, n, dir)
}

// Deprecated: use filetxntest.StartWith.
func StartWith(t testing.TB, n int, dir string, o Options) *Group {
	t.Helper()
	return filetxntest.StartWith(t, n, dir, o)
}

// Deprecated: use filetxntest.WaitFor.
func WaitFor(t testing.TB, path string) {
	t.Helper()
	filetxntest.WaitFor(t, path)
}

// Package fault lets the module's tests make one step of the file-system
// work fail, from any package: the steps of atomicfile (creating the
// temporary file, writing it, fsyncing it, renaming it, fsyncing the
// directory), the engine's read of a data file, and the lock package's
// acquisition and creation of a lock file's directory. Outside tests no hook
// is set, and each step costs one atomic load.
//
// It is a seam in the code, not a mock of the file system: the step that is
// told to fail does not run, and the code around it handles the error as it
// would handle the system's.
package fault

import "sync/atomic"

// A Step is a point where a hook may fail the work.
type Step string

// The steps.
const (
	Create  Step = "create"  // atomicfile creates the temporary file (path: the target)
	Write   Step = "write"   // atomicfile writes the temporary file (path: the target)
	Sync    Step = "sync"    // atomicfile fsyncs the temporary file (path: the target)
	Rename  Step = "rename"  // atomicfile renames the temporary file over the target
	SyncDir Step = "syncdir" // atomicfile, or the engine's removal of a file, fsyncs a directory (path: the directory)
	Read    Step = "read"    // the engine reads a data file
	Lock    Step = "lock"    // package lock takes a lock (path: the lock file)
	Mkdir   Step = "mkdir"   // package lock creates a lock file's directory
)

// hook is the test's function, or nil.
var hook atomic.Pointer[func(Step, string) error]

// Set makes every step call fn with the step and its path until the test
// ends; a non-nil error from fn is what the step fails with. Tests that set
// a hook must not run in parallel with other tests of their binary.
func Set(t interface {
	Helper()
	Cleanup(func())
}, fn func(step Step, path string) error) {
	t.Helper()
	hook.Store(&fn)
	t.Cleanup(func() { hook.Store(nil) })
}

// At returns the error a test's hook gives for step on path, or nil.
func At(step Step, path string) error {
	if fn := hook.Load(); fn != nil {
		return (*fn)(step, path)
	}
	return nil
}

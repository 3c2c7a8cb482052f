// Package seam is the module's one way for a test to act at a named point
// of the production code: fail a file-system step, or pause, count or
// change the world there.
//
// # Use
//
// A test calls Set with a function of the point and its path; every call of
// At in the process, from any package, then calls it, until the test ends
// (or the test calls the remove function that Set returns):
//
//	seam.Set(t, func(p seam.Point, path string) error {
//		if p == seam.Rename && path == target {
//			return syscall.ENOSPC // the rename fails with ENOSPC, and does not run
//		}
//		return nil
//	})
//
// The hook fires for every call of the process, not only for the call the
// test makes, so it filters: by point, by path, by a first-hit-only guard.
// At a file-system step (Create, Write, Sync, Rename, SyncDir, Read, Lock,
// Mkdir, Intent, Retire, Close, Append: those Point.Fails reports) a non-nil error
// is what the step fails with, and the step does not run: it is a seam in
// the code, not a mock of the file system, and the code around it handles
// the error as it would handle the system's. At
// every other point the error is ignored: the hook may only act there
// (block on a channel, count, remove a file). A hook at Queued runs under a
// mutex and must not block. Several Sets in one test add up: At calls each
// hook in the order set and returns the first error. A test that calls Set
// must not run in parallel with any other test of its binary.
//
// # Production
//
// Outside tests nothing calls Set, and At costs one atomic load.
package seam

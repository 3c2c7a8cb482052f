package seam

import (
	"slices"
	"sync"
	"sync/atomic"
)

// A Point is a place in the code where a test's hook is called.
type Point string

// File-system steps: a hook's error fails the step, which does not run.
const (
	Create  Point = "create"  // atomicfile creates the temporary file (path: the target)
	Write   Point = "write"   // atomicfile writes the temporary file (path: the target)
	Sync    Point = "sync"    // atomicfile fsyncs the temporary file (path: the target)
	Rename  Point = "rename"  // atomicfile renames the temporary file over the target
	SyncDir Point = "syncdir" // atomicfile, or the engine's removal of a file, fsyncs a directory (path: the directory)
	Read    Point = "read"    // the engine, or a typed store's lock-free probe, reads a data file
	Lock    Point = "lock"    // package lock takes a lock (path: the lock file)
	Mkdir   Point = "mkdir"   // package lock creates a lock file's directory
	Intent  Point = "intent"  // a multi-file commit writes, or fsyncs, its intent record (path: the record)
	Retire  Point = "retire"  // a multi-file commit, or its recovery, removes its intent record (path: the record)
	Close   Point = "close"   // a multi-file commit closes a staged file it detaches, after its commit point and before its renames (path: the target)
	Append  Point = "append"  // a multi-file commit, or its recovery, writes, or fsyncs, a line it appends to a log after its renames (path: the log)
)

// Fails reports whether a hook's error at p fails the work: whether p is
// a file-system step.
func (p Point) Fails() bool {
	switch p {
	case Create, Write, Sync, Rename, SyncDir, Read, Lock, Mkdir, Intent, Retire, Close, Append:
		return true
	}
	return false
}

// The engine's points (package filetxn, and loopstate's own publish): a
// hook's error is ignored.
const (
	TempWritten Point = "tempwritten" // a transaction's write has written its temporary file, not yet fsynced, renamed or the lock re-checked (path: the target)
	Check       Point = "check"       // a write, append or remove (or a loop's Delete) is about to re-check the lock and publish (path: the file published; a loop's state file)
	Replaced    Point = "replaced"    // a transaction's rename is done, the lock still held (path: the target)
	Queued      Point = "queued"      // a Mutate joined its store's group commit queue (path: the data file); under the group's mutex: the hook must not block
	Gather      Point = "gather"      // a group commit leader holds the lock and is about to yield and take the queue (path: the data file)
	MayQueue    Point = "mayqueue"    // a Mutate checks that it may wait in the queue (path: the data file)
	Taken       Point = "taken"       // a Mutate whose ctx ended finds its call taken into a batch, or promoted, and waits for its answer (path: the data file)
	Committed   Point = "committed"   // a multi-file commit's staged files and intent records are durable, and its locks about to be checked (path: the intent record of its first lock)
	Published   Point = "published"   // a multi-file commit (or its recovery) has renamed one staged file over its target (path: the target)
	Recovering  Point = "recovering"  // a single-file transaction found an unfinished multi-file commit beside its lock, and is about to take the commit's other locks (path: the intent record); MutateAll's own settling has no such point
)

// A typed store's points: a hook's error is ignored.
const (
	BoardDecode Point = "boarddecode" // a board codec's Decode of existing bytes begins (path: none, "")
	BoardParse  Point = "boardparse"  // a board codec's Decode parses, its cache not answering (path: none, "")
)

// Package lock's points: a hook's error is ignored. The path is a lock
// file's.
const (
	Opened    Point = "opened"    // an acquisition has the lock file open (or found in the table) and is about to ask for or join its lock; possibly twice in one Acquire
	Inherited Point = "inherited" // between a failed non-blocking attempt and the look at a descriptor inherited through HandOver
	Unlock    Point = "unlock"    // a release is about to do the I/O that lets the OS-level lock go
	Ordered   Point = "ordered"   // a round of AcquireAll has fixed its order (path: the first lock file of it), before its first acquisition
	Acquiring Point = "acquiring" // AcquireAll is about to acquire the next lock of its round's order
)

// A hook is a test's function.
type hook = func(p Point, path string) error

var (
	// hooks is the hooks set, in order, or nil: At's one load.
	hooks atomic.Pointer[[]*hook]
	// mu serialises the changes to hooks.
	mu sync.Mutex
)

// Set makes At call fn with each point and its path until the test ends,
// or until the returned remove is called, whichever comes first. A test may
// set several; each is called in the order set. Tests that call Set must
// not run in parallel with other tests of their binary.
func Set(t interface {
	Helper()
	Cleanup(func())
}, fn func(p Point, path string) error) (remove func()) {
	t.Helper()
	h := &fn
	change(func(hs []*hook) []*hook { return append(hs, h) })
	var once sync.Once
	remove = func() {
		once.Do(func() {
			change(func(hs []*hook) []*hook { return slices.DeleteFunc(hs, func(x *hook) bool { return x == h }) })
		})
	}
	t.Cleanup(remove)
	return remove
}

// change replaces the hooks by edit's result on a copy of them.
func change(edit func([]*hook) []*hook) {
	mu.Lock()
	defer mu.Unlock()
	var hs []*hook
	if p := hooks.Load(); p != nil {
		hs = slices.Clone(*p)
	}
	if hs = edit(hs); len(hs) == 0 {
		hooks.Store(nil)
		return
	}
	hooks.Store(&hs)
}

// At calls the tests' hooks at point p on path, and returns the first error
// one of them gives, or nil. Where no hook is set, it costs one atomic load.
func At(p Point, path string) error {
	if hooks.Load() == nil {
		return nil
	}
	return call(p, path)
}

// call calls each hook, and returns the first error.
func call(p Point, path string) error {
	hs := hooks.Load()
	if hs == nil {
		return nil // the last hook was removed meanwhile
	}
	var first error
	for _, h := range *hs {
		if err := (*h)(p, path); err != nil && first == nil {
			first = err
		}
	}
	return first
}

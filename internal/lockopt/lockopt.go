// Package lockopt is the configuration of one acquisition by package lock,
// shared with the engine: lock's options type is an alias of [Options], so
// that the engine, which can import this package, makes a lock.Option (a
// func over *Options) that sets the field no user can set, without an
// exported name in package lock. R is *lock.BusyError, which this package
// cannot name without an import cycle.
package lockopt

import "time"

// Options is the resolved configuration of one Acquire or TryAcquire.
type Options[R any] struct {
	Purpose     string        // WithPurpose: why the lock is held, for the holder record
	NoHolder    bool          // WithoutHolder: the lock file is not written
	ReportAfter time.Duration // WithWaitReport: how long a wait lasts before OnWait
	OnWait      func(R)       // WithWaitReport: called once by a long wait
	NoCreate    bool          // WithoutCreate: a missing lock file is an error
	AnyFS       bool          // WithAnyFileSystem: no refusal of the file system

	// HeldOnly makes TryAcquire take nothing and ask the kernel nothing:
	// it only answers, from the process's lock table, whether the calling
	// goroutine holds the lock on the file at the path. It returns a nil
	// Handle with an error matching lock.ErrReentrant (in an *fs.PathError
	// naming the path) if it does, and a nil Handle and a nil error if it
	// does not. Every other option is ignored. It is how the engine's
	// group commit tells a caller that would wait in the queue for itself
	// without briefly holding the lock, which a concurrent leader's
	// non-blocking attempt would see as busy.
	HeldOnly bool
}

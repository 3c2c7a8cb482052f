package lock

import "errors"

// Errors returned by this package. OS failures are *fs.PathError values whose
// Op names the Go-level operation ("Acquire", "Release", ...); the sentinels
// below are matched with errors.Is.
var (
	// ErrWouldBlock is returned when a lock is held by someone else and the
	// caller asked not to wait: by TryAcquire at once, or wrapped in a
	// *BusyError. It is matched with errors.Is.
	ErrWouldBlock = errors.New("lock: would block")

	// ErrReentrant is returned when a goroutine asks for a lock that it
	// already holds. Nothing is acquired. Without this check the request
	// would deadlock, because the holder would wait for itself.
	ErrReentrant = errors.New("lock: already held by this goroutine")

	// ErrNotSupported is returned when the operating system or the file
	// system cannot lock the file (for example ENOLCK or EOPNOTSUPP on a
	// network file system), when the lock file is on a file system where
	// flock may not exclude other hosts and WithAnyFileSystem was not
	// given, or when an operation such as HandOver does not exist on this
	// platform.
	ErrNotSupported = errors.New("lock: not supported")

	// ErrLockLost is returned when the lock file at a held lock's path is no
	// longer the file whose lock is held: it was deleted, or another file was
	// renamed over it, while the lock was held. Another process may then hold
	// a lock on the file now at the path, so a holder that finds its lock lost
	// must publish nothing. The error wrapping it names the lock file. A
	// filetxn.Backend's lost lock (on etcd, a lease that expired) matches it
	// too, with an error that says how it was lost.
	ErrLockLost = errors.New("lock: lock lost while held")

	// ErrHandOverBroken is returned by Acquire and TryAcquire in a child
	// process whose parent handed it the lock (see Handle.HandOver) and
	// still holds it for the hand-over, when none of the descriptors the
	// child inherited holds that lock: the parent's cmd.ExtraFiles lost the
	// lock file after HandOver (it was replaced or cut). Nothing is acquired,
	// and nothing is waited for: the wait would be for the parent, which
	// holds the lock until the child is done. The error wrapping it names
	// the lock file.
	ErrHandOverBroken = errors.New("lock: handed-over lock not inherited")
)

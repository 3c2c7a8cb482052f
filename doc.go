// Package filetxn runs read-modify-write transactions on small state files
// that several processes share, without lost updates or torn files.
//
// A Store[D] pairs a data file with a Codec[D] (JSON is one) and a lock file.
// The typed stores of packages ledger, board and loopstate are built on it
// (the README's table covers their calls; docs/design.md says why).
//
// # Which call to use
//
//	Mutate        change the document: fn once, under the lock; a write if the bytes changed
//	MutateProbed  a Mutate whose no-op needs no lock (a replay, a read-only state root); fn may run more than once
//	View          read one whole version without the lock; decide under Mutate, not on it
//	MutateAll     several stores' documents, fn once under all their locks; all changed files or none
//	Locked        several files under one lock, through a Tx; never shares a write
//	Restore       put back bytes taken earlier, only over versions this caller published
//
// # Guarantees
//
//   - No lost update: every Mutate on one file, from any goroutine or process
//     using this package (or bmad-loop, with a shared state root), runs under
//     one exclusive lock and reads the file only after taking it.
//   - No torn file: write-and-rename (package atomicfile), fsynced with its
//     directory unless WithoutSync, so a reader or a crash sees old or new. A
//     document that encodes as decoded is not written (no needless write).
//   - Group commit: Mutates (and MutateProbeds) made at once on one Store
//     share one write and its fsyncs. Each fn still runs once under the lock
//     on its caller's goroutine; each caller gets its own Commit, error and
//     panic, and a failing fn is undone alone. Nobody waits for a batch to
//     fill. The lock is released before the directory fsync, callers answered
//     after it: a nil error means published durably.
//   - No silent no-op: NewStore refuses a D whose changes fn would lose.
//   - Several files, one commit: MutateAll publishes all it changed or none,
//     through any crash (the next transaction completes an interrupted one).
//   - Proof of authorship: Commit.Digest hashes only bytes the call published,
//     so Restore puts a snapshot back only over the caller's own versions.
//   - Re-entry is an error, not a deadlock: locking a file from inside a
//     transaction on it (or on a file its batch's leader holds) returns at
//     once an error matching lock.ErrReentrant.
//   - A lost lock publishes nothing: before every rename, append or removal, a
//     transaction checks that the lock file at its path is the one it locked;
//     if not, it removes its temporary file and fails with an error matching
//     lock.ErrLockLost that names the data file and the lock file.
//   - Reads cannot hang: a FIFO or any other non-regular file is refused,
//     unread (atomicfile.ErrNotRegular).
//   - ctx bounds waiting only (backends too): a done ctx takes a free lock,
//     fails at once on a busy one (ctx.Err(), a *lock.BusyError), leaves no goroutine.
//
// # Caveats
//
//   - Local file systems only (across hosts: WithBackend). The lock is
//     advisory; its placement (WithStateRoot, WithLockPath, ...) must agree.
//   - Transactions nested on two files in opposite orders wait for each other
//     until their contexts end: use MutateAll, or lock.AcquireAll.
//   - fn must do nothing slow under the lock that the caller does not control
//     (a subprocess, a person), unless it uses lock.Handle.HandOver.
//   - A read may see a version stale at once, or whose writer is still
//     fsyncing; a write made on it is durable, with it, when it returns.
//   - Never delete lock files: the lost-lock check misses a lock file replaced
//     during the rename, and one lost between two writes of a Locked callback
//     leaves the first published.
package filetxn

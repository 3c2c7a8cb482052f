// Package filetxn runs read-modify-write transactions on small state files
// that several processes share, without lost updates or torn files.
//
// A Store[D] pairs a data file with a Codec[D] (JSON is one) and a lock file.
// The typed stores in packages ledger, board and loopstate are built on it.
//
// # Which call to use
//
//	Mutate        change the document: lock, read, fn once, write if the bytes changed; calls made at once on one Store share a write
//	MutateProbed  Mutate that must succeed without the lock when it changes nothing and the lock is busy or cannot be taken (a read-only state root, a replayed command); fn may run more than once
//	View          read one whole version without the lock; decide under Mutate, not on it
//	Locked        several files under one lock (an archive, then the data; a log beside the state), through a Tx; never shares a write
//	Restore       put back bytes taken earlier, only over versions this caller published (Commit.Digest)
//
// # Guarantees
//
//   - No lost update: every Mutate on one file, from any goroutine or process
//     using this package (or bmad-loop, with a shared state root), runs under
//     one exclusive lock, and reads the file only after taking it.
//   - No torn file: the file is replaced by write-and-rename (package
//     atomicfile), fsynced with its directory unless WithoutSync is given, so
//     a reader or a crash sees the old or the new version.
//   - No needless write: when fn leaves the document encoding as it did when
//     decoded, nothing is written (however the file was spelled), and
//     Commit.Written is false.
//   - Group commit: Mutates (and MutateProbeds) that goroutines
//     make at once on one Store are published with one write, and so one
//     fsync of the file and one of its directory, instead of one each: the
//     caller that takes the lock hands one document to the callers queued
//     behind it, in order. Each fn still runs once under the lock (a
//     MutateProbed's may also run on lock-free probes first), on its own
//     caller's goroutine, and each caller gets its own Commit, error and
//     panic; a failing fn is undone alone. Nobody waits
//     for a batch to fill, so a lone call costs what it did alone. A Mutate
//     releases the lock before its directory fsync, so another process can
//     take it meanwhile, and answers its callers only after that fsync: a
//     call that returns nil has published durably.
//   - No silent no-op: a document type that fn would change a copy of (a
//     struct or an int by value), or find nil (a pointer to a pointer), is
//     refused by NewStore; so is a nil fn, by every call that takes one.
//   - Proof of authorship: Commit.Digest hashes exactly the bytes the call
//     published, never bytes it only read, so Restore puts a snapshot back
//     only over versions the caller wrote itself.
//   - Re-entry is an error, not a deadlock: Mutate (or any call that locks)
//     made on a file from inside a transaction on the same file returns at
//     once an error matching lock.ErrReentrant. So does one from a fn that
//     a group commit runs for a queued caller, on any file that the caller
//     holding the lock holds, since that caller waits for fn.
//   - A lost lock publishes nothing: right before every rename, append or
//     removal, a transaction checks that the lock file at the lock's path is
//     still the file it locked. If it was deleted or replaced meanwhile (a
//     cleaner of the state directory), another process may hold a lock on
//     the new file, so the transaction publishes nothing more, removes its
//     temporary file and returns an error matching lock.ErrLockLost that
//     names the data file and the lock file.
//   - Reads cannot hang: every read opens without blocking and refuses
//     anything but a regular file (a named pipe, a directory, a socket, a
//     device) with an error wrapping atomicfile.ErrNotRegular that names the
//     path; such a file is never read or replaced.
//   - ctx bounds waiting and nothing else: a done ctx never makes a call wait
//     and never leaves a goroutine behind. With one, the calls that lock run
//     as usual on a free lock, and on a busy one return at once an error
//     matching ctx.Err() that carries a *lock.BusyError; View, which never
//     waits, reads. A transaction that holds the lock is not interrupted by
//     ctx.
//
// # Deadlock
//
// One lock per file, taken and released by each call, cannot deadlock by
// itself, and re-entry on one file fails at once (above). What is not
// prevented: two goroutines or processes that nest transactions on two files
// in opposite orders (Mutate on A calling Mutate on B, while another calls
// Mutate on B calling Mutate on A) wait for each other until their contexts
// end. To hold several locks at once, take them in one global order, the
// same in every program: lock.AcquireAll does that, ordering by file
// identity.
//
// # Caveats
//
//   - The lock is advisory: a program that writes the file without taking the
//     same lock file is not stopped. Lock placement (WithStateRoot,
//     WithLockPath, the default <path>.lock) must agree between all writers.
//   - Local file systems only: flock(2) is unreliable on NFS.
//   - fn must not do anything slow that the caller does not control (a
//     subprocess, a network call, a person) while the lock is held, unless it
//     hands the lock over on purpose (lock.Handle.HandOver).
//   - View may return a version that is stale by the time it is used, or
//     not yet durable (its writer may still be fsyncing the directory, and a
//     crash then may undo it). So may a transaction under the lock, since a
//     Mutate releases the lock before that fsync: a decision made on a
//     version is as durable as the version is, and a write made on it is
//     durable when it returns, together with the version it read.
//   - The lost-lock check narrows the window, it does not close it: it comes
//     after the temporary file's fsync, right before the rename, and a lock
//     file deleted or replaced during the rename itself goes unnoticed. A lock lost between two writes of
//     one Locked callback leaves the first published and refuses the rest,
//     as a crash there would. Never delete lock files.
package filetxn

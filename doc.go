// Package filetxn runs read-modify-write transactions on small state files
// that several processes share, without lost updates, torn files or deadlocks.
//
// A Store[D] pairs a data file with a Codec[D] and a lock file. Mutate takes
// the lock, reads and decodes the file, calls fn once, encodes, and replaces
// the file atomically only if its bytes changed, then releases the lock. View
// reads one whole version without locking. Update is Mutate without the
// Commit's digests, for callers that only need to know whether it wrote. The
// typed stores in packages ledger, board and loopstate are built on it.
//
// # Guarantees
//
//   - No lost update: every Mutate on one file, from any goroutine or process
//     using this package (or bmad-loop, with a shared state root), runs under
//     one exclusive lock, and reads the file only after taking it.
//   - No torn file: the file is replaced by write-and-rename (package
//     atomicfile), fsynced with its directory unless WithoutSync is given, so
//     a reader or a crash sees the old or the new version.
//   - No needless write: when fn leaves the encoded bytes unchanged nothing is
//     written, and Commit.Written is false.
//   - No deadlock on re-entry: Mutate called from inside a Mutate callback on
//     the same file returns an error matching lock.ErrReentrant.
//   - Proof of authorship: Commit.Digest is the SHA-256 of exactly the bytes
//     published, taken under the lock, so Restore can later put a snapshot
//     back only over versions the caller owns.
//   - A lost lock publishes nothing: right before every rename, append or
//     removal, a transaction checks that the lock file at the lock's path is
//     still the file it locked. If it was deleted or replaced meanwhile (a
//     cleaner of the state directory), another process may hold a lock on
//     the new file, so the transaction publishes nothing more, removes its
//     temporary file and returns an error matching lock.ErrLockLost that
//     names the data file and the lock file.
//   - Reads cannot hang: every read (Mutate's, View's, the probes') opens
//     without blocking and refuses anything but a regular file (a named
//     pipe, a directory, a socket, a device) with an error wrapping
//     atomicfile.ErrNotRegular that names the path; such a file is never
//     read or replaced.
//   - ctx bounds waiting and nothing else: a done ctx never makes a call
//     wait and never leaves a goroutine behind. With one, Mutate, Update,
//     MutateProbed, Locked and Restore run as usual on a free lock, and on a
//     busy one return at once an error matching ctx.Err() that carries a
//     *lock.BusyError; View and the ReadBytes calls, which never wait, read.
//     A transaction that holds the lock is not interrupted by ctx.
//
// # Caveats
//
//   - The lock is advisory: a program that writes the file without taking the
//     same lock file is not stopped. Lock placement (WithStateRoot,
//     WithLockPath, WithLockBeside) must agree between all writers.
//   - Local file systems only: flock(2) is unreliable on NFS.
//   - fn must not do anything slow that the caller does not control (a
//     subprocess, a network call, a person) while the lock is held, unless it
//     hands the lock over on purpose (lock.Handle.HandOver).
//   - View may return a version that is stale by the time it is used; decide
//     under Mutate.
//   - The lost-lock check narrows the window, it does not close it: a lock
//     file deleted or replaced after the check, while the temporary file is
//     fsynced and renamed, goes unnoticed. A lock lost between two writes of
//     one Locked callback leaves the first published and refuses the rest,
//     as a crash there would. Never delete lock files.
package filetxn

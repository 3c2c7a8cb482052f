// Package lock provides advisory file locks that exclude other processes and
// other goroutines alike, detect re-entry instead of deadlocking, and honour a
// context while waiting.
//
// A lock lives in a lock file of its own, never in the data it guards (data
// replaced by rename gets a new inode); SidecarPath names one under a state
// directory.
//
// # Guarantees
//
//   - Exclusion across processes (flock(2); LockFileEx on Windows), released
//     by the kernel when its holder exits or is killed: no stale locks.
//   - Exclusion across goroutines: those of one process that ask for one
//     lock file, by any spelling, queue on a gate keyed by its identity.
//   - Re-entry: a goroutine that asks again for a lock it holds gets
//     ErrReentrant at once; Held asks without taking anything.
//   - A lock file deleted or replaced while held lets no second holder in
//     unnoticed: Acquire always ends holding the file now at the path, and
//     the old holder's Handle.Current turns false, so a writer that checks
//     it before publishing (as this module's stores do) publishes nothing
//     and returns an error matching ErrLockLost.
//   - Waiting costs no CPU and ends when the holder releases; one lock's
//     stalled file system stalls only that lock. ctx bounds waiting only: a
//     done ctx never makes a call wait nor leaves a goroutine behind.
//   - A holder writes a one-line record (pid, host, program, purpose,
//     acquired-at) into the lock file: ReadHolder, BusyError and
//     WithWaitReport report it.
//   - Hand-over (Unix): HandOver lends a held lock to a child process, which
//     borrows it only with proof that the parent holds it then; a child
//     whose inherited descriptors lost it gets ErrHandOverBroken at once.
//   - Lock files are made 0600, their directories 0700 (under the umask),
//     and never deleted.
//
// # Caveats
//
//   - The locks are advisory: a process that does not lock the file is not
//     stopped. Do not delete lock files of a live program: a holder that does
//     not check Handle.Current, or between its check and its publication,
//     is not excluded.
//   - Exclusion needs a file system whose flock(2) excludes every process
//     that can open the file. Acquire refuses those known not to (NFS with
//     nolock or local_lock, FUSE, CIFS/SMB, 9p, vboxsf, AFS, Coda, Lustre),
//     found by statfs on Linux, macOS and the BSDs, with an error matching
//     ErrNotSupported unless WithAnyFileSystem is given (NFSv4 and NFSv3 with
//     lockd need it too), as it does one that refuses locks. Unknown file
//     systems are allowed; Windows, illumos and the data file's are unchecked.
//   - Re-entry is judged per goroutine: waiting for another goroutine that
//     asks for your lock deadlocks, as with sync.Mutex. Two parties taking
//     two locks in opposite orders wait until their contexts end: use
//     AcquireAll (ordered by file identity), or one order everywhere.
//   - Re-entry detection reads the goroutine's id, which Go hides; off gc on
//     amd64 and arm64 it parses a stack trace, costlier on deep stacks. A
//     cancelled wait returns, but the process keeps a kernel wait till release.
//   - Up to 16 released lock files stay open per process on Unix; after a
//     chdir, a relative path used before first locks, for one stat, the
//     file it named before.
//   - On Linux SidecarPath hashes names as spelled: two spellings on a
//     case-insensitive file system get two lock files.
//   - Windows: the lock covers byte 0 of the lock file (as bmad-loop's), and
//     is mandatory for it (the record starts at byte 1); no HandOver.
package lock

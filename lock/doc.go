// Package lock provides advisory file locks that exclude other processes and
// other goroutines alike, detect re-entry instead of deadlocking, and honour a
// context while waiting.
//
// A lock lives in a dedicated lock file, never in the data it guards: data is
// replaced by rename, which gives it a new inode, and a lock on the old inode
// would guard nothing. SidecarPath names a lock file for a data file under a
// state directory, outside the data directory.
//
// # Guarantees
//
//   - Exclusion across processes: an exclusive flock(2) on Unix, LockFileEx on
//     Windows. The kernel releases the lock when its holder
//     exits or is killed, so there are no stale locks to break.
//   - Exclusion across goroutines: goroutines of one process that ask for one
//     lock file, by any spelling (symlink, relative, dot-dot), queue on an
//     in-process gate keyed by the file's identity (device and inode).
//   - Re-entry: a goroutine that holds a lock and asks for it again gets
//     ErrReentrant at once, with nothing acquired. Other goroutines wait.
//     Held asks the same question without taking anything.
//   - A lock file deleted, or replaced by a rename, while its lock is held
//     does not let two holders in unnoticed: Acquire checks after locking
//     that the path still names the file it locked, and otherwise locks the
//     file now at the path, so a new holder always holds the file at the
//     path; the old holder's Handle.Current turns false, and a writer that
//     checks it before publishing (as this module's stores do) publishes
//     nothing and returns an error matching ErrLockLost.
//   - Waiting costs no CPU and honours ctx; the waiter wakes as soon as the
//     holder releases. ctx bounds waiting and nothing else: a ctx that is
//     already done never makes a call wait and never leaves a goroutine
//     behind, and does not stop a call that need not wait (a free lock is
//     taken).
//   - One lock's stalled file system stalls that lock only: the process-wide
//     table does no I/O under its mutex.
//   - Diagnostics: a holder writes a one-line record (pid, host, program,
//     purpose, acquired-at) into the lock file; ReadHolder reads it,
//     BusyError carries it and WithWaitReport reports long waits with it.
//   - Hand-over (Unix): HandOver lends a held lock to a child process, which
//     borrows it only with proof that the parent holds it at that moment (the
//     inherited descriptor holds the lock and the holder record carries the
//     hand-over's nonce); otherwise the child owns what it takes, and its
//     Release unlocks it. A child whose parent holds the lock for it but
//     whose inherited descriptors lost it gets ErrHandOverBroken at once,
//     rather than waiting for its parent.
//   - Lock files are created 0600 in directories created 0700 (under the
//     umask) and never deleted by this package.
//
// # Caveats
//
//   - The locks are advisory: they exclude only processes that lock the same
//     file. A process that writes the data without locking is not stopped.
//   - Deleting or replacing a lock file that is held still breaks exclusion
//     for a holder that does not check Handle.Current before it publishes,
//     and for the moment between its check and its publication: do not
//     delete lock files of a live program.
//   - Exclusion holds only where the file system makes flock(2) exclude
//     every process that can open the file. Local file systems do (ext4,
//     xfs, btrfs, tmpfs, zfs, f2fs, overlayfs over a local one; APFS and
//     HFS+ on macOS; UFS and ZFS on the BSDs; NTFS on Windows, whose
//     LockFileEx locks on an SMB share are kept by the server). On NFS
//     mounted with nolock or local_lock, on FUSE file systems (sshfs,
//     rclone, virtiofs: up to the daemon), CIFS/SMB, 9p, vboxsf, AFS, Coda
//     and Lustre, a lock may exclude only the processes of one host.
//     Acquire therefore looks at the lock file's file system (statfs f_type
//     on Linux, f_fstypename on macOS and the BSDs), once, when it opens the
//     descriptor, and refuses those with an error matching ErrNotSupported
//     that names the file system, unless the caller passes
//     WithAnyFileSystem. NFSv4, and NFSv3 with lockd, do lock across hosts,
//     but statfs cannot tell them from a nolock mount, so they need the
//     option too. A file system not on that list is allowed, so that a
//     local file system this package does not know keeps working: the list
//     is of the network and user-space file systems that are known to break
//     exclusion, and one that is missing from it is not caught. Windows,
//     illumos and the data file's file system are not checked. A file
//     system that refuses locks outright gives an error matching
//     ErrNotSupported too.
//   - Re-entry is judged per goroutine. A goroutine that holds a lock and
//     waits for another goroutine that asks for the same lock still
//     deadlocks, as with sync.Mutex.
//   - Two goroutines or processes that take two locks in opposite orders
//     wait for each other until their contexts end: nothing detects that.
//     Take several locks with AcquireAll, which orders them by file
//     identity (and starts again in the new order when a lock file is
//     replaced meanwhile), or in one order of your own used everywhere.
//   - Re-entry detection reads the goroutine's id, which Go does not
//     expose. With the gc toolchain on amd64 and arm64 it is read from the
//     goroutine's runtime descriptor, at a place in it found once per
//     process and checked against stack traces; elsewhere, or if a Go
//     release moves it out of reach, it is parsed from the header of a stack
//     trace (runtime.Stack), which is exact but costs a walk of the whole
//     stack on every Acquire, so deep call stacks make every acquisition
//     dearer (BenchmarkGoroutineID compares the two).
//   - A cancelled wait returns at once, but the kernel-level wait cannot be
//     interrupted: the process keeps it, in one goroutine, until the other
//     holder releases, and then lets the lock go at once.
//   - The process keeps up to 16 descriptors of recently released lock files
//     open on Unix, with the paths that named them, so that re-acquiring a
//     lock opens nothing; on Windows each is closed when its last handle is
//     released. After a change of working directory, the first Acquire of a
//     relative path used before locks the file that path named before for
//     the moment of one stat, then lets it go and locks the file the path
//     names now.
//   - SidecarPath follows the file system's own spelling of a name on
//     Windows and macOS only. On Linux it hashes names as spelled, so a
//     case-insensitive file system mounted there (vfat, exfat, ext4 with
//     casefold, an SMB share) gives two spellings in two cases two
//     sidecars, and two lock files.
//   - Windows: the lock covers byte 0 of the lock file (as bmad-loop's Python
//     lock does), and such locks are mandatory for that byte; the holder
//     record starts at byte 1. HandOver is not supported.
package lock

// Package atomicfile replaces a file's contents so that every reader, and the
// file system after a crash, sees either the whole old file or the whole new one.
//
// [WriteFile] replaces a file's contents with a byte slice; [AppendFile] adds
// a record to an append-only log. Both take the same options ([Option]), and
// so do the writes of the filetxn engine. A caller that streams a file too
// large to hold in memory has github.com/google/renameio/v2's PendingFile,
// which this package builds on; it leaves out what this package adds (listed
// below), the directory fsync first.
//
// The sequence is the classic one, with the step most implementations forget:
// create a temporary file in the target's directory, write it, fsync it, close it,
// rename it over the target, and fsync the directory, because the rename itself
// lives in the directory and is not durable until that directory is synced.
//
// # Guarantees
//
//   - Old or new, never torn. The target is only ever changed by a rename of a
//     complete, closed file, so a concurrent reader that opens the path gets one
//     whole version, and (unless [WithoutSync]) a crash at any point leaves the
//     old file or the new one.
//     If any step fails, the temporary file is removed and the target is untouched
//     (the one exception is a failed directory sync, after the rename: see
//     [WriteFile]).
//   - Durable on return. Unless [WithoutSync] is given, the new contents and the
//     new directory entry have been fsynced when WriteFile returns nil
//     (F_FULLFSYNC on Darwin), and so have the record and, for a log the call
//     created, the log's directory entry when AppendFile returns nil.
//   - Symlinks are followed. If path is a symbolic link (or a chain of them), the
//     link stays a link and the file it finally points to is replaced; a dangling
//     link gets its target created. A relative link target is read relative to the
//     link's own directory, with ".." taken the way the kernel takes it.
//   - Permissions. An existing file keeps its permission bits exactly (including
//     setuid, setgid and sticky; the umask does not apply), and on Unix, when the
//     caller is root, its owner and group too (best effort). A new file is created
//     with perm minus the umask, like [os.WriteFile].
//   - Nothing is staged for a refused target. A target that exists and is read-only
//     is refused with an error wrapping [fs.ErrPermission]; a target that exists
//     and is not a regular file (a directory, a named pipe, a device) is refused
//     with [ErrNotRegular]. In both cases no temporary file is created.
//   - Errors. Every error is an [*fs.PathError] whose Path is the path the caller
//     passed and whose Op names the call ("WriteFile", "AppendFile").
//
// "Read-only" is decided on the file itself, not by the rename: a rename would
// happily replace a file nobody may write, since only the directory's permissions
// count. A target is read-only if opening it with O_WRONLY|O_NONBLOCK fails with
// EACCES or EPERM (or EROFS), or if its mode grants no write bit to anyone
// (mode&0o222 == 0). The second clause is there for root, for whom the open
// succeeds regardless: a file chmodded 0444 says "do not write me" to root too,
// and tests and CI usually run as root.
//
// The temporary file is made by github.com/google/renameio/v2's PendingFile
// (except on Windows, where renameio does not build); this package fsyncs,
// closes and renames it itself, and adds what renameio leaves out: the
// directory fsync, the owner and exact mode of an existing target, the
// refusals, and following symlinks.
//
// Temporary files are named the way renameio names them, "." + base + a random
// decimal number (".state.json4982630124857716"), in the target's directory, so
// they are hidden from ls; on Windows, and for a target name too long to leave
// room for the number, ".<base>.tmp-<random>", with a base longer than 200
// bytes cut to its first 200 (at a character boundary) so that the name
// stays within 255 bytes. One left behind by a killed
// process is never read by this package and may be deleted by anyone;
// nothing deletes it, since without a lock no writer can tell it from a live
// writer's. (The engine's writes, which hold a lock, name theirs after the
// target and the lock file, and the next write under that lock removes a
// dead writer's: see the root package.)
//
// # Caveats
//
//   - Concurrent writers need a lock. Two writers both succeed and the last rename
//     wins; a read-modify-write cycle can lose an update. Serialising writers is
//     the job of package lock, not of this package.
//   - The directory must be writable, since the temporary file lives there, and the
//     target must not be a mount point or bind mount of a single file (a rename
//     cannot replace those).
//   - Network file systems. On NFS and similar, rename is atomic on the server but
//     clients may cache the old contents, and fsync semantics are the server's;
//     the guarantees above are only as good as the file system's.
//   - Read-only is checked once, when the file is created; the mode is copied then
//     too. A chmod in between is not noticed.
//   - Windows. The replace is MoveFileEx with MOVEFILE_REPLACE_EXISTING (and
//     MOVEFILE_WRITE_THROUGH unless WithoutSync). A reader or a virus scanner that
//     holds the target open without FILE_SHARE_DELETE makes it fail with a sharing
//     violation or access denied; those are retried with a short, growing backoff
//     for about three seconds in total, so the call can block that long, and then
//     the error is returned. Directories cannot be fsynced on Windows; the
//     write-through flag is what makes the rename durable there. Permission bits
//     are only the read-only attribute: ACLs are not copied (the new file inherits
//     the directory's), nor are owners.
//   - [WithoutSync] skips both fsyncs. The replace is still atomic for readers, but
//     after a power loss or kernel crash the target may be the old version, the
//     new one, or on some file systems an empty or partial file.
package atomicfile

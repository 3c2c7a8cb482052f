// Package atomicfile replaces a file's contents so that every reader, and the
// file system after a crash, sees either the whole old file or the whole new one.
//
// [WriteFile] replaces a file's contents with a byte slice; [AppendFile] adds
// a record to an append-only log. Both take the same options ([Option]), and
// so do the writes of the filetxn engine. A write stages a temporary file in
// the target's directory, fsyncs it, renames it over the target and fsyncs
// the directory. A caller that streams a file too large to hold in memory
// has github.com/google/renameio/v2's PendingFile, which this package builds
// on; it leaves out the directory fsync, the owner and exact mode of an
// existing target, the refusals and the following of symlinks.
//
// # Guarantees
//
//   - Old or new, never torn: a reader gets one whole version, and (unless
//     [WithoutSync]) so does a crash at any point. If any step fails, the
//     temporary file is removed and the target is untouched (except for a
//     failed directory sync, after the rename: see [WriteFile]).
//   - Durable on return, unless [WithoutSync]: contents and directory entry
//     are fsynced (F_FULLFSYNC on Darwin) when WriteFile returns nil; the
//     record, and a new log's directory entry, when AppendFile does.
//   - Symlinks are followed: the file a chain of links finally names is
//     replaced and the links kept; a dangling link gets its target created;
//     a relative target is read from the link's directory, ".." as the
//     kernel takes it.
//   - Permissions: an existing file keeps its permission bits exactly
//     (setuid, setgid and sticky included; no umask), and on Unix, for root,
//     its owner and group (best effort). A new file gets perm minus the
//     umask, like [os.WriteFile].
//   - Nothing is staged for a refused target: one that exists and is
//     read-only (an O_WRONLY|O_NONBLOCK open fails with EACCES, EPERM or
//     EROFS, or its mode has no write bit, which binds root too) gives an
//     error wrapping [fs.ErrPermission], one that is not a regular file
//     [ErrNotRegular].
//   - Every error is an [*fs.PathError] whose Path is the caller's path and
//     whose Op names the call ("WriteFile", "AppendFile").
//
// # Caveats
//
//   - Concurrent writers need a lock (package lock): two both succeed and
//     the last rename wins, so a read-modify-write can lose an update.
//   - The directory must be writable, and the target no mount point or bind
//     mount of a single file (a rename cannot replace those).
//   - On NFS and similar, clients may cache old contents and fsync means
//     what the server makes of it.
//   - Read-only is checked, and the mode copied, once, when the temporary
//     file is created: a chmod in between is not noticed.
//   - A temporary file left by a killed process (hidden: "." + base + a
//     random number, or ".<base>.tmp-<random>") is never read, and never
//     removed, since without a lock no writer can tell it from a live one's;
//     anyone may delete it. The engine's writes, under a lock, clean theirs.
//   - Windows: the replace is MoveFileEx (write-through unless WithoutSync,
//     directories cannot be fsynced); a reader holding the target open
//     without FILE_SHARE_DELETE makes it fail, retried for about three
//     seconds, so a call can block that long. Permission bits are only the
//     read-only attribute; ACLs (a new file inherits the directory's) and
//     owners are not copied.
//   - [WithoutSync] skips both fsyncs: still atomic for readers, but after a
//     power loss the target may be old, new, or on some file systems empty
//     or partial.
package atomicfile

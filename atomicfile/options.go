package atomicfile

import "github.com/filetxn/filetxn/internal/fsys"

// An Option changes how [WriteFile] and [AppendFile] work (and, given to the
// filetxn engine's writes, how those work). No options means the safe
// defaults: every write is fsynced and the directory is fsynced after the
// rename.
type Option func(*options)

// options is the resolved configuration of one call. It is the engine's too,
// so that the options a caller gives its writes mean the same there.
type options = fsys.Options

// WithoutSync skips the fsync of the temporary file and of the directory (and,
// on Windows, asks MoveFileEx for no write-through). The replace stays atomic for
// other processes, which still see the old file or the new one, but it is no
// longer durable: after a power loss or a kernel crash the target may hold the
// old version, the new one or, on file systems that reorder metadata before data,
// an empty or partial file. Use it for files that can be rebuilt, or in tests.
func WithoutSync() Option {
	return func(o *options) { o.NoSync = true }
}

// WithoutDirSync skips only the fsync of the directory after the rename (and,
// on Windows, MoveFileEx's write-through); the new contents are still fsynced
// before the rename. After a power loss or a kernel crash the target holds
// the old version or the new one, never an empty or partial file, but the
// replacement may have been undone. It suits a write whose loss matters less
// than its latency, when a durable write follows later (for example a
// "running" marker before a long step). For [AppendFile] it skips the fsync
// of the directory of a log that the call creates: the first record is
// fsynced, but a power loss may take the new log away with it.
func WithoutDirSync() Option {
	return func(o *options) { o.NoDirSync = true }
}

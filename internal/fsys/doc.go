// Package fsys holds the module's file-system primitives: staging and
// publishing a file by rename, appending to a log, opening and reading
// regular files without blocking, creating a directory that appears
// complete or not at all, the names of the engine's temporary files, and
// where bmad-loop keeps its state. Each part lives in the files its heading
// names.
//
// # Staging (stage.go, append.go)
//
// Staging is the implementation of package atomicfile: a [PendingFile] stages a replacement of a target beside it and publishes it
// by rename, and [Append] appends to a log. Package atomicfile documents the
// guarantees and caveats of both, and its WriteFile is [Create],
// [PendingFile.Write] and [PendingFile.CloseAtomicallyReplace] in one call.
//
// The engine (the root package's Tx.write) stages its writes here directly,
// rather than through atomicfile.WriteFile, for the two steps it takes
// between them: it checks its lock after the slow fsync and right before the
// rename ([Options.Check]), and makes the directory fsync itself, after it
// has released the lock ([Options.Published]). A user who wants to stream a
// large file into place has renameio's PendingFile, which is what stages the
// temporary file here on Unix.
//
// # Regular files (osfile.go)
//
// OpenFile, OpenRegular, ReadFile, ReadFileInto and ReadState open and read
// regular files with fewer system calls than package os.
//
// os.OpenFile tries to register every new descriptor with the runtime's
// network poller (fcntl to set O_NONBLOCK, epoll_ctl, which a regular file
// refuses, and fcntl twice more to undo it): five calls that cost more than
// the open itself on a virtual machine. A transaction opens three files, so
// the engine and package atomicfile open theirs here. The *os.File returned
// behaves as usual (os.NewFile: blocking, not in the poller).
//
// ReadFile and ReadFileInto read regular files only. They open without
// waiting (a named pipe with no writer would otherwise block the open
// forever) and refuse a directory, a pipe, a socket or a device with an
// error wrapping ErrNotRegular: such a file is never read, so a read cannot
// hang on one.
//
// # Directories (atomicdir.go)
//
// CreateDir creates a directory that appears complete or not at
// all, and renames without ever replacing what is at the new name: what
// package loopstate needs to create and delete a loop's directory.
//
// # Temporary names (staletemp.go)
//
// Names and Key name the temporary files of the engine's locked
// writes, so that the next writer under the same lock finds what a dead
// writer left by its name alone, without reading the directory.
//
// A write stages its replacement under a hidden name in the target's
// directory and renames it over the target; a process killed in between (by
// SIGKILL, an OOM kill, a power loss) leaves that temporary file behind. The
// engine's writes hold a lock, and name their temporary file after the target
// and the lock file ([Names], [Key]): "." + the target's name + "." + 16
// hexadecimal digits + "-0.tmp" or "-1.tmp", such as
// ".deferred-work.md.3f9c0a1b2d4e5f60-0.tmp". Only a holder of that lock
// file ever makes a file of these names, one holder at a time, so under the
// lock a file of one of them is a dead writer's and may be removed. The
// reasoning, and how package fsys uses the two names so that no
// writer ever writes into a file it did not create, is in docs/design.md,
// "Temporary files".
//
// No other file has these names: the name ends in a suffix of fixed length,
// so for a target name of up to [MaxTempBase] bytes the name gives the
// target's name back exactly; a longer target name is cut to that many bytes
// (at a character boundary), and two such targets sharing their first ones
// are told apart by the hexadecimal digits, which hash the whole name with
// the key. A user's file such as a dated backup ".sprint-status.yaml20260101",
// a temporary file of atomicfile.WriteFile (renameio's "." + name + a number,
// or ".<name>.tmp-<random>") and bmad-loop's ("<name>.<random>.tmp") never
// have one.
//
// # bmad-loop's state root (bmadloop.go)
//
// StateRoot knows where the Python orchestrator bmad-loop keeps its
// state, so that the module's stores for bmad-loop's files (ledger, board)
// and its command line lock the files that bmad-loop locks, by default and
// without configuration. It is the one place that derives that directory.
package fsys

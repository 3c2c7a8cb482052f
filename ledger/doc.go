// Package ledger reads and edits deferred-work ledgers (deferred-work.md, with
// "### DW-<n>: title" entries) byte-compatibly with bmad-loop, so that a Go
// process and bmad-loop can append to and close entries of one file side by side.
//
// A [Doc] is one version of the file: its read methods ([Doc.Entries],
// [Doc.Classify], ...) answer from the text, its operations
// ([Doc.Append], [Doc.MarkDone], [Doc.MarkOpen], [Doc.RecordDecision],
// [Doc.MarkSeenAgain], [Doc.ArchiveInto], [Doc.Merge]) edit it in memory. A
// [Store] is the file shared by goroutines and processes through the filetxn
// engine: [Store.Mutate] runs any batch of Doc operations under the ledger's
// lock with one read and one write. The format, the archive stubs and every
// deliberate difference from bmad-loop are in docs/formats/ledger.md in this
// repository.
//
// # Guarantees
//
//   - Unchanged, a ledger encodes to exactly its bytes; an operation touches
//     only the lines it must, and text that is not an entry is kept verbatim.
//     Reading fails only on bytes that are not UTF-8 (a *[ParseError] naming
//     the line).
//   - Batches are folds, byte-identical to the serial single calls. No
//     operation mints an id twice or creates a duplicate; an operation naming
//     an id several entries carry fails with a *[DuplicateIDError].
//   - A close made [Reopenable] is undone by MarkOpen character for character;
//     nothing else reopens.
//   - Every Store write takes the lock, reads under it and replaces the file
//     atomically, so no update is lost across processes. An operation that
//     writes nothing takes no lock, so it succeeds where no state root exists;
//     a real write there fails with an error wrapping [ErrNoStateRoot].
//     Archive writes the archive, then the ledger, under one hold; a crash in
//     between copies no body twice.
//   - Bad arguments are *[ArgError] values, returned before any I/O. An id
//     no entry carries is an error matching [ErrNotFound] for Store.MarkDone,
//     MarkOpen and RecordDecision, decided without the lock; an id already
//     closed is a replay that succeeds without writing. Each returns a
//     [Report] of what it did with every id.
//
// # Caveats
//
//   - The lock is advisory: by default the sidecar bmad-loop takes under
//     [BmadLoopStateRoot]. Writers that do not take it (an editor, bmad-loop
//     with another state root) are not excluded.
//   - A changed ledger is written with LF line endings on every OS.
//   - A Doc is not safe for concurrent use; a Store is.
//   - A Store operation reads the whole file twice when it writes and
//     rewrites it whole: a ledger is meant to be small enough for that.
//     [Store.Append] keeps its read buffer for the next append (in a
//     sync.Pool; none above 64 MiB).
package ledger

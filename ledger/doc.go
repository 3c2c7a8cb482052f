// Package ledger reads and edits deferred-work ledgers (deferred-work.md, with
// "### DW-<n>: title" entries) byte-compatibly with bmad-loop, so that a Go
// process and bmad-loop can append to and close entries of one file side by side.
//
// A [Doc] is one version of the file: its read methods ([Doc.Entries],
// [Doc.Entry], ...) answer from the text, its operations ([Doc.Append],
// [Doc.MarkDone], [Doc.MarkOpen], [Doc.RecordDecision], [Doc.MarkSeenAgain],
// [Doc.ArchiveInto], [Doc.Merge]) edit it in memory. A [Store] is the file
// shared by goroutines and processes through the filetxn engine:
// [Store.Mutate] runs any batch of Doc operations with one lock, one read and
// one write ([Store.MutateProbed] too, answering a batch that changes nothing
// without the lock), and [Store.Append] and [Store.Archive] are the two operations
// with more to do than that. The format, the archive stubs and every
// deliberate difference from bmad-loop are in docs/formats/ledger.md in this
// repository.
//
// # Guarantees
//
//   - Unchanged, a ledger encodes to exactly its bytes; an operation touches
//     only the lines it must, and text that is not an entry is kept verbatim.
//     Reading fails only on bytes that are not UTF-8 (a
//     *[filetxn.FormatError] naming the line and column); such a file is
//     never rewritten.
//   - Batches are folds, byte-identical to the serial single calls. No
//     operation mints an id twice or creates a duplicate. An operation naming
//     an id that several entries carry fails with a *[filetxn.FormatError]
//     whose Key is the id and whose message names the lines of its entries;
//     closing, reopening or deciding on an id that none carries fails with
//     an error wrapping [filetxn.ErrNotFound] (a typo is not a replay), from
//     a Store inside an *fs.PathError naming the ledger; an id already closed
//     is a replay that changes nothing. A refused operation changes nothing.
//   - A close made [Reopenable] is undone by MarkOpen character for character;
//     nothing else reopens.
//   - Every Store write takes the lock, reads under it and replaces the file
//     atomically, so no update is lost across processes. A batch that writes
//     nothing needs no lock, so it succeeds where the lock cannot be taken (a
//     read-only or missing state root); a real write there fails. Archive
//     publishes the archive and the ledger as one commit, both or neither;
//     the next transaction completes one a crash cut short, and the bodies
//     an older version left in the archive are not copied twice.
//   - A refused argument is an error wrapping [filetxn.ErrInvalidArgument]
//     whose message names the operation, the argument and its value,
//     returned before the text is touched (before any I/O by Store.Append and
//     Store.Archive).
//
// # Caveats
//
//   - The lock is advisory: by default the sidecar bmad-loop takes under
//     [BmadLoopStateRoot]. Writers that do not take it (an editor, bmad-loop
//     with another state root) are not excluded.
//   - A Mutate callback runs once, under the lock; a MutateProbed callback
//     may run more than once (on lock-free reads, then under the lock), so
//     it must only decide on and change the Doc. Neither may call the Store.
//   - A changed ledger is written with LF line endings on every OS.
//   - A Doc is not safe for concurrent use; a Store is.
//   - A Store rewrites the whole file on every change: a ledger is meant to be
//     small enough for that. An append to a file the Store wrote last costs
//     the read and write of any atomic replace and a pass over the bytes in
//     memory (see [Store]); a file another writer changed is parsed afresh.
//     The Store keeps the text it wrote last, the ledger's size once more.
package ledger

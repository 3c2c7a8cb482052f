// Package ledger reads and edits deferred-work ledgers (deferred-work.md, with
// "### DW-<n>: title" entries) byte-compatibly with bmad-loop, so that a Go
// process and bmad-loop can append to and close entries of one file side by side.
//
// A [Doc] is one version of the file. Its read methods ([Doc.Entries],
// [Doc.Entry], [Doc.OpenIDs], [Doc.Classify], [Doc.Duplicates], [Doc.NextID])
// answer from the text; its operations ([Doc.Append], [Doc.MarkDone],
// [Doc.MarkOpen], [Doc.RecordDecision], [Doc.MarkSeenAgain],
// [Doc.ArchiveInto], [Doc.Merge]) edit the text in memory.
//
// A [Store] is the file itself, shared by goroutines and processes through
// the filetxn engine ([Codec] is the bridge): [Store.Mutate] runs any batch of
// Doc operations under the ledger's lock with one read and one write, and the
// convenience methods ([Store.Append], [Store.MarkDone], ...) each do one
// operation that way. By default the lock is the sidecar bmad-loop itself
// takes, <state root>/locks/<hash>-deferred-work.md.lock under
// [BmadLoopStateRoot], so that Go processes and bmad-loop exclude each other.
//
// # What is an entry
//
// An entry is a line "### DW-<digits>: <title>" in column 0, outside fenced
// code blocks, up to the next such heading, cut short at the first other
// Markdown heading of any level (up to three spaces of indent) and, after its
// first status line, at a flat "- source_spec: " bullet. Its status is the
// value of its first "status:" line (column 0, lowercase). An entry is open
// when the status's first word is "open", done when it is "done", and
// malformed otherwise: no status line, or "closed", "resolved", "accepted
// <date>", "opne". Malformed entries are listed by Entries and Classify and are
// never closed, reopened or archived; a decision can still be recorded on them.
//
// Everything else is prose and is kept verbatim: a title line, BMAD's
// "## Deferred from:" sections of bullets, headerless "- source_spec:" blocks,
// tables, "## DW-N1 — title" and "### DW-10 extension (...)" variants, quoted
// entries inside ``` or ~~~ fences, free text. Reading never fails on prose;
// only bytes that are not UTF-8 are refused, with the line of the first bad
// byte. Prose counts in one place: NextID is one past the highest DW-<n>
// written anywhere, so a number that appears in prose is never minted.
//
// # Guarantees
//
//   - Round trip. Encoding an unchanged Doc returns the bytes it was parsed
//     from, CRLF and lone CR line endings included. A changed Doc is written
//     with LF line endings, as bmad-loop writes on POSIX.
//   - Minimal edits. Every operation touches only the lines it must: an append
//     adds bytes at the end and changes none before them; a close replaces one
//     status line and inserts lines directly under it; other entries and prose
//     stay byte for byte the same.
//   - Batches are folds. Each operation takes many ids or specs and applies
//     them one after another to the text the previous step produced, so a
//     batch is byte-identical to the serial sequence of single calls.
//   - Ids. An append mints one past the highest DW-<n> in the text, counting
//     the entries the same batch just added; an append whose origin and
//     source_spec an open entry already carries is skipped. No operation
//     creates a duplicate id; Merge reports a collision instead.
//   - Reopen is exact. A close made with [Reopenable] records the original
//     status line, and MarkOpen with the same operation id and note restores it
//     character for character; nothing else reopens.
//   - No lost update across processes. Every Store write takes the ledger's
//     lock, reads the file under it, and replaces the file atomically; two
//     appenders never mint one id and a close is never reverted by a rival's
//     write (checked with real processes in the tests).
//   - No lock for a no-op. A Store operation that writes nothing (an empty
//     batch, a missing ledger, specs all filed, ids all closed, nothing
//     eligible) is decided on a lock-free read and returns without the lock, so
//     it succeeds where no state root exists or the lock cannot be taken; a
//     real write there fails with an error wrapping [ErrNoStateRoot].
//   - Archive is crash-safe. [Store.Archive] writes the archive, then the
//     ledger, under one hold of the ledger's lock; a crash in between leaves
//     the ledger whole, and the next run stubs it without copying a body twice.
//   - Arguments are checked before the text is touched (and, for a Store,
//     before any I/O). Bad dates, statuses,
//     severities, notes and empty operation ids are *[ArgError] values naming
//     the value, and an operation naming an id that several entries carry fails
//     with a *[DuplicateIDError] naming the lines; either way nothing changes,
//     and operations on other ids work as usual.
//
// # Choices where the format left room
//
//   - An empty title is written as "(untitled DW-<n>)", like a title that is
//     blank after line breaks are collapsed; bmad-loop writes "### DW-<n>: ",
//     a heading no reader recognizes.
//   - Location "" in a [Spec] means "n/a" (the default), and Status "" means
//     "open".
//   - Per-id notes are a map that must hold exactly the batch's ids.
//   - Archiving refuses a ledger in which an eligible entry's id is
//     duplicated, rather than moving one of the copies.
//   - Merge compares bodies without their trailing newlines, carries an entry
//     as its text plus one newline, and reports as a collision an entry that
//     would not read back as itself once appended (a fence that would pair with
//     text around it). Remainder is each stretch of snapshot prose between
//     entries, trimmed, that does not occur in the ledger.
//   - [Store.MarkSeenAgain] answers a batch that writes nothing (every id a
//     replay or stale) from the lock-free read, like the other operations;
//     bmad-loop always takes the lock for it.
//   - A changed ledger is written with LF line endings on every OS;
//     bmad-loop on Windows writes CRLF (its text mode translates). Both read
//     either.
//   - The default lock placement is bmad-loop's state root, not a .lock file
//     beside the ledger: interoperating with bmad-loop is the point, and a
//     sibling lock file would be committed by a "git add -A".
//   - Invalid UTF-8 in a value is replaced by U+FFFD (a UTF-8 encoded
//     surrogate by one U+FFFD), as bmad-loop neutralizes lone surrogates.
//
// # Caveats
//
//   - Digits are ASCII. bmad-loop's \d also matches other scripts' digits
//     (DW-١); here those are neither ids nor counted by NextID.
//   - Word boundaries around DW-<n> and the whitespace that is trimmed follow
//     Python's Unicode classes (letters, numbers and "_"; str.isspace), up to
//     differences between Python's and Go's Unicode tables.
//   - Offsets are bytes, not Python's code points; they are consistent within
//     one text.
//   - Line endings are read as Python's universal newlines do (CRLF and CR);
//     the other characters str.splitlines breaks on (U+2028, \v, ...) are not
//     line breaks in the file, but they are collapsed in the values written.
//   - A Doc is not safe for concurrent use; a Store is.
//   - The lock is advisory. Writers that do not take it (an editor, an LLM
//     session editing the file directly, bmad-loop with a different state
//     root) are not excluded; the state roots of all writers must agree.
//   - A Store operation reads the whole file twice when it writes (once for
//     the lock-free probe, once under the lock) and rewrites it whole: a
//     ledger is meant to be small enough for that (10,000 entries is 3 MB).
//     [Store.Append] reads into a buffer it keeps for the next append (in a
//     sync.Pool, so until a garbage collection or two; none above 64 MiB).
package ledger

// Package board reads and advances BMAD sprint-status boards (sprint-status.yaml), where
// stories only move forward, byte-compatibly with bmad-loop's board writer.
//
// Parse loads a board into a Doc, and New makes a new one; Doc.Advance moves one row to a
// Status (batch several on one Doc) and Doc.Bytes returns the edited board. Open returns a
// Store: the board on disk behind the filetxn engine, with Mutate, MutateProbed, View and
// Advance. The
// format, every decision on real boards and every deliberate difference from bmad-loop are
// in docs/formats/board.md in this repository.
//
// # Guarantees
//
//   - Unchanged, a board encodes to exactly its bytes. An edit replaces only the value of
//     the rows it moves (the story, or a map row's status key; the epic it lifts; the
//     top-level last_updated) and keeps every other byte, comments and line endings
//     included. No line is ever added or removed.
//   - A row is found by the parser's position inside development_status, never by a
//     textual match elsewhere; any disagreement between parser and bytes refuses the row.
//   - Advance never moves a row backwards (AllowRegression permits only done to
//     awaiting-operator) and never overwrites a status outside the order without
//     AllowUnordered. On any error nothing changes.
//   - A board it does not understand is refused by Parse with a *filetxn.FormatError
//     naming the line (a Store's inside an *fs.PathError naming the board), and never
//     rewritten. A row it cannot edit safely, or one without a status (listed by
//     Doc.Unread), is refused by Advance with a *filetxn.FormatError naming its key and
//     line; the rest of the board works. A move the order forbids wraps
//     ErrUnorderedStatus or ErrIllegalTransition.
//   - A Store.MutateProbed or Store.Advance that moves nothing (and an absent row,
//     filetxn.ErrNotFound, for Store.Advance; Doc.Advance refuses one too, so a
//     MutateProbed decides it under the lock) needs no lock: when the lock is busy or
//     cannot be taken it is decided on a lock-free read. Every move is decided under the
//     lock on fresh bytes; N moves in one Mutate cost one lock, one read, one write.
//
// # Caveats
//
//   - The lock is advisory, and writers must agree on its placement. By default Open
//     takes the sidecar bmad-loop takes under its state root (the ledger's default too);
//     a filetxn.WithStateRoot or filetxn.WithLockPath given to Open must match every
//     other writer's, and a .lock file beside the board is not one bmad-loop takes.
//   - A Doc is a snapshot and is not safe for concurrent use; decide under Store.Mutate or
//     Store.Advance what must not be stale. A Store is safe for concurrent use.
//   - A Mutate callback runs once, under the lock; a MutateProbed callback may run more
//     than once (on lock-free reads, then under the lock), so it must only decide on and
//     change the Doc. Neither may call the Store (that fails with lock.ErrReentrant).
//   - A Store keeps the parse of the last two boards it read or wrote, keyed by their
//     exact bytes, so another writer's change is always parsed afresh.
package board

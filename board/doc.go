// Package board reads and edits BMAD sprint-status boards (sprint-status.yaml), where
// stories only move forward, byte-compatibly with bmad-loop's board writer.
//
// A board is a YAML file whose development_status mapping holds rows such as
// "epic-3: backlog" and "3-2-digest-delivery: in-progress". Keys are classified as
// bmad-loop does (retro item, retrospective, epic, story, otherwise unknown), and statuses
// follow one order:
//
//	backlog < ready-for-dev < in-progress < review < awaiting-operator < done
//
// A story reading the legacy "drafted" reports ready-for-dev. Parse loads a board into a
// Doc; Doc.Advance moves one row (batch several on one Doc); Doc.Bytes returns the edited
// board. AdvancedBytes and StatusInBytes do the same on bytes, with no file and no lock.
// Open returns a Store: the board on disk behind the filetxn engine, with Mutate, View
// and Advance. Codec adapts Doc to the engine.
//
// # Guarantees
//
//   - The YAML is read with a real parser (go.yaml.in/yaml/v3) and never re-serialized.
//     Edits are made by a line editor on the original bytes: unchanged, a board encodes
//     to exactly the bytes it was parsed from; an edit replaces only the value of the
//     rows it moves (the story, the epic it lifts, last_updated) and keeps every other
//     byte, including indentation, gaps, trailing comments, blank lines, a missing final
//     newline, and each line's own terminator (LF, CRLF, lone CR, mixed).
//   - A row is found by the parser's node position inside development_status, never by
//     the first textual match in the file, so a same-named key elsewhere (in
//     action_items, in a comment, in a nested map) is never edited by mistake. Every
//     position the parser reports is checked against the bytes; any disagreement refuses
//     the row rather than guessing.
//   - Advance never moves a row backwards. A row already at or past the target is left
//     alone and its status returned. The one allowlisted regression, done to
//     awaiting-operator, needs AllowRegression; with it, any other backward move fails
//     with ErrIllegalTransition.
//   - When a story moves to exactly in-progress, its epic row is lifted from backlog to
//     in-progress, judged on the board as it was before the edit. With Stamp(now), the
//     top-level last_updated value is set to now, only when the row's line was written.
//     No line is ever added or removed.
//   - On any error nothing is changed: no epic lift, no last_updated.
//   - Store.Advance decides a no-op (missing board, absent row, row at or past the
//     target or already holding it byte for byte) on a lock-free read and then takes no
//     lock at all, so it succeeds where no lock can be taken; every other decision is
//     made again under the lock on fresh bytes, so a rival's move made in between is
//     never lost or regressed. Store.Mutate runs fn once under the lock; N moves in one
//     fn cost one lock, one read, one write.
//   - With WithStateRoot set to bmad-loop's state root, the lock is the sidecar file
//     bmad-loop's own board writer takes, so Go and Python writers serialize.
//
// # Decisions on real boards
//
// The boards found in public projects are messier than bmad-loop's fixtures. Each case is
// decided here:
//
//   - A current status outside the order (completed, blocked, skipped, contexted,
//     deferred, in_progress, "In progress", ...) is never silently overwritten: Advance
//     fails with a *RowError wrapping ErrUnorderedStatus. AllowUnordered opts in to
//     bmad-loop's behaviour (overwrite unless the row already reads the target) and
//     allows a target outside the order; without it such a target is ErrInvalidArgument.
//   - A file that is not valid UTF-8 YAML (an unquoted "{project-root}/..." that opens a
//     flow map, a plain value holding ": "), holds more than one document, has no
//     top-level mapping, no development_status, or a development_status that is null, a
//     list, a scalar or a flow mapping (including "development_status: {}") is refused
//     by Parse with a *ParseError naming path and line (ErrInvalidYAML, ErrNotBoard).
//     Another schema (sprints:, stories: lists) is refused the same way. For invalid
//     YAML the line is found by bisecting on whole-line prefixes, because the parser's
//     own error lines are unreliable.
//   - A story key that appears twice, or development_status that appears twice, is
//     refused (ErrDuplicateKey). A repeated epic, retrospective or unknown key is
//     tolerated: the last value wins, as in PyYAML, and neither line is ever rewritten
//     (Advance on it fails with ReasonDuplicateKey; a lift of such an epic is skipped).
//   - A story, epic or retrospective key holding a mapping or a list (per-story maps of
//     status, beads_id, title) is refused by Parse (ErrNestedRow). An unknown key holding
//     one (a nested stories: map) is tolerated: Status reports it absent, Advance refuses
//     it with ReasonValueNotScalar.
//   - A row whose line cannot be rewritten safely is refused by Advance with a *RowError
//     (ErrNotRewritable) carrying path, line, key, current status, target and a Reason:
//     a quoted, tagged, anchored or explicit ("? key") key, or a space before its colon
//     (key-not-plain); a mapping or list (value-not-scalar); an alias (value-is-alias); a
//     block scalar or a value that starts or continues on another line
//     (multiline-value); an empty, tagged or anchored value, or trailing blanks with no
//     comment (unreadable-value, as bmad-loop); a row brought in by a merge key or through
//     an aliased mapping (row-not-in-mapping). The row is refused only once the decision
//     to move it is made: a no-op on such a row still succeeds.
//   - A quoted value is replaced by the plain target and its trailing comment is kept.
//     (bmad-loop drops the comment after a quoted value; this package keeps comments.)
//   - An epic lift or a last_updated line that cannot be rewritten (quoted, repeated,
//     absent) is skipped: they are best effort, the story's move is not. last_updated is
//     the top-level key only; one inside a nested map is never touched.
//   - Advance accepts any scalar row of development_status, not only stories: epics and
//     retrospectives move under the same rules (bmad-loop answers None for them).
//   - A "---" start marker, a byte order mark, CJK keys and long non-Latin comments need
//     nothing special.
//
// # Line splitting
//
// Lines are split on exactly the breaks the YAML parser counts: LF, CRLF, a lone CR, NEL
// (U+0085), LS (U+2028) and PS (U+2029). That keeps the parser's line numbers and ours
// in step even when an LS hides in a quoted value elsewhere in the file. bmad-loop
// splits with Python's str.splitlines, which also breaks on \v, \f and \x1c-\x1e; those
// are control characters the parser rejects, so on every board that loads the two splits
// agree.
//
// # Caveats
//
//   - A Doc is a snapshot of bytes: decide on a Doc from Store.View only what may be
//     stale; decide under Store.Mutate or Store.Advance.
//   - A Doc is not safe for concurrent use. A Store is.
//   - The lock is advisory and its placement must agree between writers: without
//     WithStateRoot it is a .lock file beside the board, which bmad-loop does not take.
//   - Calling Store.Mutate or Store.Advance on the same board from inside a Mutate
//     callback fails with lock.ErrReentrant; it is not a deadlock and not re-entrant.
//   - The Codec from NewCodec (which Open uses) keeps a copy of the last two boards it
//     read or wrote, so that a transaction's second read and the process's next
//     transaction need no parse. The copy is keyed by the exact bytes, so another
//     writer's change is always parsed afresh.
//   - Key classification uses ASCII digits; Python's \d also accepts other Unicode
//     digits. No real board uses them.
//   - Status reports the value as written and trimmed; for a YAML null it is "" (PyYAML
//     would read "None"), for true it is "true" (PyYAML: "True"). Both are outside the
//     order either way.
package board

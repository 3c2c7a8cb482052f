package board

import (
	"errors"
	"fmt"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/bmadloop"
)

// ErrNotBoard is returned, inside a *ParseError that names the path and line, when a
// board is refused as a whole: it is not valid UTF-8 YAML, or holds more than one YAML
// document; it is valid YAML but not a sprint-status board (the document is empty or not
// a mapping, it has no development_status key, or development_status is not a non-empty
// block mapping: null, a list, a scalar, or a flow mapping such as "{}", which a line
// editor cannot edit); or a story key appears twice in development_status, or
// development_status twice at the top level. (A repeated epic, retrospective or other
// non-story key is tolerated: the last value wins, as in every YAML reader that accepts
// duplicates, and the row is never rewritten.) Such a board is never rewritten.
var ErrNotBoard = errors.New("board: not a sprint-status board")

// Row refusals. Each is returned wrapped in a *RowError that names the path, key, current
// status, target and reason; nothing is changed.
var (
	// ErrNotRewritable is returned when a row must move but its line cannot be rewritten
	// safely (quoted or complex key, alias, anchored or tagged value, multi-line or
	// unreadable value, row outside the development_status mapping), or when the row has
	// no status at all (a list, or a mapping without a status key; see Doc.Unread).
	ErrNotRewritable = errors.New("board: row cannot be rewritten safely")

	// ErrUnorderedStatus is returned when a row's current status is outside the status
	// order (completed, blocked, in_progress, ...) and the caller did not pass
	// AllowUnordered: such a row is never silently overwritten.
	ErrUnorderedStatus = errors.New("board: status outside the known order")

	// ErrIllegalTransition is returned when AllowRegression is given and the requested
	// backward move is not on the allowlist (only done to awaiting-operator is).
	ErrIllegalTransition = errors.New("board: illegal transition")
)

// ErrInvalidArgument is returned, before any I/O and before any lock, when a key, target or
// timestamp could not be written as a single plain YAML value, or a target is outside the
// status order without AllowUnordered; by New for a story it cannot write; and by Open
// for an empty path or an invalid engine option. It is filetxn.ErrInvalidArgument, so
// one test covers every refused argument of the module.
var ErrInvalidArgument = filetxn.ErrInvalidArgument

// ErrNotFound is returned by Doc.Advance and Store.Advance, naming the board and the key,
// when the board (missing or not) has no row for the key: a mistyped key is an error, not
// a no-op.
var ErrNotFound = errors.New("board: no such row")

// ErrNoStateRoot is returned, wrapped in an *fs.PathError naming the board, by a write
// that needs the board's default lock when bmad-loop's state root cannot be derived from
// the environment (see Open). Advances that write nothing still succeed. It is the
// ledger's ErrNoStateRoot too.
var ErrNoStateRoot = bmadloop.ErrNoStateRoot

// ParseError reports a board that was refused as a whole. It unwraps to ErrNotBoard.
type ParseError struct {
	Path string // file path, "" for bytes given directly
	Line int    // 1-based line, 0 when unknown

	kind string // what kind of refusal: "not valid YAML", "not a sprint-status board", "duplicate key"
	msg  string // what is wrong, for humans
}

// Error returns "board: <kind>: <path>:<line>: <what is wrong>".
func (e *ParseError) Error() string {
	where := e.Path
	if where == "" {
		where = "<bytes>"
	}
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", where, e.Line)
	}
	return fmt.Sprintf("board: %s: %s: %s", e.kind, where, e.msg)
}

// Unwrap returns ErrNotBoard.
func (e *ParseError) Unwrap() error { return ErrNotBoard }

// reason says why a row was refused, in RowError's message. The first six values are bmad-loop's own reasons
// (SprintStatusWriteRefused.reason); the last three are ours.
type reason string

// Reasons carried by RowError.
const (
	reasonKeyNotPlain     reason = "key-not-plain"      // quoted, tagged, anchored or explicit ("? key") key
	reasonValueNotScalar  reason = "value-not-scalar"   // the value is a list, or a mapping without a scalar status key
	reasonValueIsAlias    reason = "value-is-alias"     // the value is "*name"
	reasonMultilineValue  reason = "multiline-value"    // block scalar, or a value that continues on another line
	reasonUnreadableValue reason = "unreadable-value"   // empty, tagged or anchored value or mapping, trailing blanks, text the editor cannot locate, or a target a flow mapping cannot hold
	reasonRowNotInMapping reason = "row-not-in-mapping" // the row comes from a merge key or an aliased mapping
	reasonDuplicateKey    reason = "duplicate-key"      // a non-story key that appears more than once, or a map row with two status keys
	reasonUnorderedStatus reason = "status-not-ordered" // current status outside the order (ErrUnorderedStatus)
	reasonIllegalRegress  reason = "illegal-transition" // backward move not on the allowlist (ErrIllegalTransition)
)

// RowError reports a row that was not moved, or (from Doc.Unread, with Target "") a row
// that has no status. Nothing was changed: no epic lift, no last_updated. It unwraps to
// ErrNotRewritable, ErrUnorderedStatus or ErrIllegalTransition.
type RowError struct {
	Path    string // file path, "" for bytes given directly
	Line    int    // 1-based line of the row's key
	Key     string // the row's key
	Current Status // its status (drafted folded to ready-for-dev for stories)
	Target  Status // the status that was asked for
	reason  reason // why, one of the reasons above
	Detail  string // a human-readable explanation, may be ""
	err     error  // the sentinel
}

// Error returns "<sentinel>: <path>:<line>: <key> <current> -> <target>: <reason> (<detail>)",
// or without a target "<sentinel>: <path>:<line>: <key>: <reason> (<detail>)".
func (e *RowError) Error() string {
	where := e.Path
	if where == "" {
		where = "<bytes>"
	}
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", where, e.Line)
	}
	msg := fmt.Sprintf("%v: %s: %s: %s", e.err, where, e.Key, e.reason)
	if e.Target != "" {
		msg = fmt.Sprintf("%v: %s: %s %q -> %q: %s", e.err, where, e.Key, e.Current, e.Target, e.reason)
	}
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg
}

// Unwrap returns ErrNotRewritable, ErrUnorderedStatus or ErrIllegalTransition.
func (e *RowError) Unwrap() error { return e.err }

package board

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/filetxn/filetxn"
)

// Refused moves. Each is returned wrapped in an error whose message names the row's line
// and key, its current status and the target (and, from a Store, inside an *fs.PathError
// naming the board); nothing is changed.
//
// The other errors of the package are the module's: a board Parse does not understand,
// and a row whose line cannot be rewritten safely, are a *filetxn.FormatError; an absent
// row matches filetxn.ErrNotFound; an argument refused before any I/O matches
// filetxn.ErrInvalidArgument.
var (
	// ErrUnorderedStatus is returned when a row's current status is outside the status
	// order (completed, blocked, in_progress, ...) and the caller did not pass
	// AllowUnordered: such a row is never silently overwritten.
	ErrUnorderedStatus = errors.New("board: status outside the known order")

	// ErrIllegalTransition is returned when AllowRegression is given and the requested
	// backward move is not on the allowlist (only done to awaiting-operator is).
	ErrIllegalTransition = errors.New("board: illegal transition")
)

// The refusals of a board as a whole: what its FormatError says after "board: ".
const (
	kindYAML      = "not valid YAML"
	kindNotBoard  = "not a sprint-status board"
	kindDuplicate = "duplicate key"
)

// reason says why a row was refused, in its error's message. The first six values are
// bmad-loop's own reasons (SprintStatusWriteRefused.reason); the last three are ours.
type reason string

// Reasons of a refused row.
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

// rowError is why a row was not moved. A row whose line cannot be rewritten safely comes
// as the Err of a *filetxn.FormatError that gives its line and key (err is nil); a
// refused transition comes inside an error that gives them (err is its sentinel).
type rowError struct {
	current, target Status // target is "" for a row Unread lists
	reason          reason
	detail          string // a human-readable explanation, may be ""
	err             error  // ErrUnorderedStatus or ErrIllegalTransition; nil for a row that cannot be rewritten
}

// Error returns `"<current>" -> "<target>": <what> (<detail>)`, or for a row Unread
// lists, the detail alone.
func (e *rowError) Error() string {
	if e.target == "" {
		return e.detail
	}
	msg := fmt.Sprintf("%q -> %q: ", e.current, e.target)
	if e.err == nil {
		msg += "cannot rewrite the row safely: " + string(e.reason)
		if e.detail != "" {
			msg += " (" + e.detail + ")"
		}
		return msg
	}
	msg += e.err.Error()
	if e.detail != "" {
		msg += ": " + e.detail
	}
	return msg
}

// Unwrap returns the sentinel of a refused transition, nil for a row that cannot be
// rewritten.
func (e *rowError) Unwrap() error { return e.err }

// rowRefusal returns the error of the refused row key at 0-based line li.
func rowRefusal(li int, key string, e *rowError) error {
	if e.err == nil {
		return &filetxn.FormatError{Line: li + 1, Key: key, Err: e}
	}
	return fmt.Errorf("line %d: %s: %w", li+1, key, e)
}

// formatError returns the refusal of a board as a whole: kind says which, at 1-based line
// (0 when unknown), about key ("" when about nothing in particular).
func formatError(line int, key, kind, format string, args ...any) error {
	return &filetxn.FormatError{Line: line, Key: key, Err: errors.New("board: " + kind + ": " + fmt.Sprintf(format, args...))}
}

// notFound is the error of an operation on the absent row key.
func notFound(key string) error {
	return fmt.Errorf("board: no row %q: %w", key, filetxn.ErrNotFound)
}

// invalid is the error of an argument refused before any I/O: op and what name the
// operation, the argument and its value.
func invalid(op, format string, args ...any) error {
	return fmt.Errorf("board: %s: %s: %w", op, fmt.Sprintf(format, args...), filetxn.ErrInvalidArgument)
}

// named returns err inside an *fs.PathError naming the board, with op, when it is a
// refusal that comes from the board's content (an absent row, a row it cannot rewrite, a
// refused transition) and names no file yet; otherwise it returns err.
func named(op, path string, err error) error {
	var pe *fs.PathError
	if err == nil || errors.As(err, &pe) {
		return err
	}
	var fe *filetxn.FormatError
	if errors.Is(err, filetxn.ErrNotFound) || errors.As(err, &fe) ||
		errors.Is(err, ErrUnorderedStatus) || errors.Is(err, ErrIllegalTransition) {
		return &fs.PathError{Op: op, Path: path, Err: err}
	}
	return err
}

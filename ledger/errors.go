package ledger

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/filetxn/filetxn"
)

// The package's errors are the module's (see the package doc): an argument
// refused before the text is touched wraps filetxn.ErrInvalidArgument, an
// id no entry carries wraps filetxn.ErrNotFound, and bytes that are not
// UTF-8 or an id that several entries carry are a *filetxn.FormatError.
// The helpers below make them, so that every message has one shape.

// invalidArg returns the error for an argument that op refuses: it names
// the operation, the argument and its value verbatim, says what the value
// must be, and wraps filetxn.ErrInvalidArgument, for example
// `ledger: MarkDone: date "2026-02-30": must be a calendar date, YYYY-MM-DD: filetxn: invalid argument`.
func invalidArg(op, arg, value, want string) error {
	return fmt.Errorf("ledger: %s: %s %s: %s: %w", op, arg, strconv.Quote(value), want, filetxn.ErrInvalidArgument)
}

// What a refused argument must be: the want of invalidArg.
const (
	wantDate        = "must be a calendar date, YYYY-MM-DD"
	wantStatus      = "must be open or done YYYY-MM-DD"
	wantSeverity    = "must be one of critical, high, medium, low"
	wantOperationID = "must not be empty"
	wantIdentity    = "Origin and SourceSpec are both empty, so the spec has no identity to file it under"
)

// notFound returns the error for ids that no entry carries, naming each.
func notFound(ids []string) error {
	return fmt.Errorf("ledger: no entry %s: %w", strings.Join(ids, ", "), filetxn.ErrNotFound)
}

// errInvalidUTF8 is the Err of the *filetxn.FormatError for ledger bytes
// that are not valid UTF-8.
var errInvalidUTF8 = errors.New("not valid UTF-8")

// duplicateIDError is the Err of the *filetxn.FormatError, keyed by the id,
// for an operation on an id that several entries carry. Lines are the
// 1-based line numbers of every heading with the id, in file order.
type duplicateIDError struct {
	Lines []int
}

func (e *duplicateIDError) Error() string {
	ls := make([]string, len(e.Lines))
	for i, l := range e.Lines {
		ls[i] = strconv.Itoa(l)
	}
	return fmt.Sprintf("carried by %d entries (lines %s): renumber or merge them by hand", len(e.Lines), strings.Join(ls, ", "))
}

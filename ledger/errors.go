package ledger

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/filetxn/filetxn/internal/bmadloop"
)

// Errors returned by this package, matched with errors.Is. Argument errors are
// [*ArgError] values, a duplicated id is a [*DuplicateIDError], and an unreadable
// file is a [*ParseError]; each unwraps to one sentinel below.
var (
	// ErrInvalidDate is returned when a date argument is not a real calendar
	// date spelled YYYY-MM-DD with ASCII digits (2026-02-30 and 0000-01-01 are
	// refused).
	ErrInvalidDate = errors.New("ledger: date must be YYYY-MM-DD")

	// ErrInvalidStatus is returned when a [Spec] carries a status other than
	// "open" or "done YYYY-MM-DD".
	ErrInvalidStatus = errors.New("ledger: status must be 'open' or 'done YYYY-MM-DD'")

	// ErrInvalidSeverity is returned when a [Spec] carries a severity outside
	// critical, high, medium and low.
	ErrInvalidSeverity = errors.New("ledger: severity must be one of [critical high low medium]")

	// ErrNotes is returned when per-id notes given with [WithNotes] are not
	// exactly one per id: an id without a note, or a note for an id that is not
	// in the batch.
	ErrNotes = errors.New("ledger: notes must be one per id")

	// ErrEmptyOperationID is returned when a reopenable close or a reopen is
	// asked for with an empty operation id.
	ErrEmptyOperationID = errors.New("ledger: operation id must not be empty")

	// ErrDuplicateID is returned when an operation names an id that two or more
	// entries of the ledger carry. The ledger is corrupt for that id; nothing is
	// changed, and it has to be renumbered or merged by hand.
	ErrDuplicateID = errors.New("ledger: duplicate entry id")

	// ErrInvalidUTF8 is returned when ledger bytes are not valid UTF-8. Such a
	// file is never rewritten.
	ErrInvalidUTF8 = errors.New("ledger: not valid UTF-8")

	// ErrInvalidArgument is returned, wrapped in an [*ArgError], when an
	// argument cannot be honoured at all, such as a [Spec] with neither
	// Origin nor SourceSpec (it has no identity to file it under).
	ErrInvalidArgument = errors.New("ledger: invalid argument")

	// ErrNotFound is returned when an operation names an id that no entry of
	// the ledger carries; the error names the id, and nothing is changed.
	ErrNotFound = errors.New("ledger: no such entry")

	// ErrNoStateRoot is returned when a write needs the ledger's lock and the
	// lock lives under bmad-loop's state root, which cannot be derived from the
	// environment (see [BmadLoopStateRoot]). Operations that write nothing
	// still succeed.
	ErrNoStateRoot = bmadloop.ErrNoStateRoot
)

// ArgError reports an argument refused before any I/O. Op is the operation
// ("Append", "MarkDone", ...), Field names the argument, Value is the refused
// value verbatim, and Err is one of the package's sentinels.
type ArgError struct {
	Op    string
	Field string
	Value string
	Err   error
}

func (e *ArgError) Error() string {
	return fmt.Sprintf("ledger: %s: %s %s: %v", e.Op, e.Field, strconv.Quote(e.Value), e.Err)
}

// Unwrap returns the sentinel.
func (e *ArgError) Unwrap() error { return e.Err }

// DuplicateIDError reports an operation on an id that several entries carry.
// Lines are the 1-based line numbers of every heading with the id, in file
// order.
type DuplicateIDError struct {
	ID    string
	Lines []int
}

func (e *DuplicateIDError) Error() string {
	ls := make([]string, len(e.Lines))
	for i, l := range e.Lines {
		ls[i] = strconv.Itoa(l)
	}
	return fmt.Sprintf("ledger: %s is carried by %d entries (lines %s): renumber or merge them by hand",
		e.ID, len(e.Lines), strings.Join(ls, ", "))
}

// Unwrap returns [ErrDuplicateID].
func (e *DuplicateIDError) Unwrap() error { return ErrDuplicateID }

// ParseError reports ledger bytes that cannot be read. Path is empty when the
// bytes did not come from a file; Line is 1-based.
type ParseError struct {
	Path string
	Line int
	Err  error
}

func (e *ParseError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("ledger: line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("ledger: %s:%d: %v", e.Path, e.Line, e.Err)
}

// Unwrap returns the sentinel.
func (e *ParseError) Unwrap() error { return e.Err }

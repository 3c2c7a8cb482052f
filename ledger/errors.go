package ledger

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/internal/bmadloop"
)

// Errors returned by this package, matched with errors.Is. An argument the
// package refuses is an [*ArgError] and an unreadable file a [*ParseError];
// each unwraps to a sentinel below.
var (
	// ErrInvalidArgument is returned, inside an [*ArgError] naming the
	// argument, when an operation refuses an argument before it touches the
	// text (Store.Append and Store.Archive: before any I/O): a date that is not
	// a real calendar date spelled YYYY-MM-DD (2026-02-30 and 0000-01-01 are
	// refused), a [Spec] status other than "open" or "done YYYY-MM-DD", a
	// severity outside critical, high, medium and low, an empty operation id,
	// or a Spec with neither Origin nor SourceSpec. It is
	// filetxn.ErrInvalidArgument, which [Open] returns for an empty path or an
	// invalid option, so one test covers every refused argument.
	ErrInvalidArgument = filetxn.ErrInvalidArgument

	// ErrDuplicateID is returned when an operation names an id that two or more
	// entries of the ledger carry. The ledger is corrupt for that id; nothing is
	// changed, and it has to be renumbered or merged by hand. The error names
	// the id and the line of each heading that carries it.
	ErrDuplicateID = errors.New("ledger: duplicate entry id")

	// ErrNotFound is returned, naming them, when MarkDone, MarkOpen or
	// RecordDecision is given ids that no entry of the ledger carries (any id,
	// on a missing ledger): a mistyped id is an error, not a replay. Nothing is
	// changed; [Doc.Classify] tells which ids are known.
	ErrNotFound = errors.New("ledger: no such entry")

	// ErrInvalidUTF8 is returned, inside a [*ParseError], when ledger bytes are
	// not valid UTF-8. Such a file is never rewritten.
	ErrInvalidUTF8 = errors.New("ledger: not valid UTF-8")

	// ErrNoStateRoot is returned when a write needs the ledger's lock and the
	// lock lives under bmad-loop's state root, which cannot be derived from the
	// environment (see [BmadLoopStateRoot]). Operations that write nothing
	// still succeed.
	ErrNoStateRoot = bmadloop.ErrNoStateRoot
)

// ArgError reports a refused argument (see [ErrInvalidArgument]). Op is the
// operation ("Append", "MarkDone", ...), Field names the argument ("date",
// "specs[1].Severity", ...), Value is the refused value verbatim, and Err
// says what the value must be; Err matches [ErrInvalidArgument].
type ArgError struct {
	Op    string
	Field string
	Value string
	Err   error
}

func (e *ArgError) Error() string {
	return fmt.Sprintf("ledger: %s: %s %s: %v", e.Op, e.Field, strconv.Quote(e.Value), e.Err)
}

// Unwrap returns Err.
func (e *ArgError) Unwrap() error { return e.Err }

// reason is the Err of an *ArgError this package makes: what the value must
// be. It matches ErrInvalidArgument.
type reason string

func (r reason) Error() string        { return string(r) }
func (r reason) Is(target error) bool { return target == ErrInvalidArgument }

const (
	errDate        reason = "must be a calendar date, YYYY-MM-DD"
	errStatus      reason = "must be open or done YYYY-MM-DD"
	errSeverity    reason = "must be one of critical, high, medium, low"
	errOperationID reason = "must not be empty"
)

// duplicateIDError reports an operation on an id that several entries carry.
// Lines are the 1-based line numbers of every heading with the id, in file
// order.
type duplicateIDError struct {
	ID    string
	Lines []int
}

func (e *duplicateIDError) Error() string {
	ls := make([]string, len(e.Lines))
	for i, l := range e.Lines {
		ls[i] = strconv.Itoa(l)
	}
	return fmt.Sprintf("ledger: %s is carried by %d entries (lines %s): renumber or merge them by hand",
		e.ID, len(e.Lines), strings.Join(ls, ", "))
}

func (e *duplicateIDError) Unwrap() error { return ErrDuplicateID }

// ParseError reports ledger bytes that cannot be read; Line is 1-based. A
// Store's error wraps it in an *fs.PathError that names the file.
type ParseError struct {
	Line int
	Err  error
}

func (e *ParseError) Error() string { return fmt.Sprintf("ledger: line %d: %v", e.Line, e.Err) }

// Unwrap returns the sentinel.
func (e *ParseError) Unwrap() error { return e.Err }

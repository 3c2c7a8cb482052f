package filetxn

import (
	"errors"
	"strconv"
)

// Errors returned by the engine. Failures of a particular file are
// *fs.PathError values whose Op names the step ("Read", "Decode", "Encode",
// "Write", "Restore") and whose Path is the data file; they unwrap to the
// sentinels below, to the codec's own error (a *FormatError for the codecs
// of this module), or to the OS error.
var (
	// ErrDiverged is returned by Restore when the file's current bytes are
	// not among the versions the caller owns: someone else has written since,
	// and putting the snapshot back would erase their work. Nothing is
	// written.
	ErrDiverged = errors.New("filetxn: file has diverged from the versions the caller owns")

	// ErrInvalidArgument is returned by NewStore, before any I/O, for an
	// empty path, a document type that is not a pointer, a nil codec or an
	// invalid option (a relative state root, an empty lock path). The error
	// names the store's path and the option. The typed stores return it
	// too, for an argument they refuse before any I/O.
	ErrInvalidArgument = errors.New("filetxn: invalid argument")

	// ErrNotFound is not returned by the engine: the typed stores return it
	// for what an operation names and the file does not hold (a ledger
	// entry's id, a board row's key, a loop's name), so that one test
	// serves every store. The error names the file and what was missing.
	ErrNotFound = errors.New("filetxn: not found")

	// ErrUndecided is returned by MutateAll for a commit that failed before
	// its first rename and whose undo could not be made durable (an fsync
	// failed): it is neither published nor undone, and the next transaction
	// on any of its files completes or undoes it. The error wraps the
	// failure too (a lost lock, an I/O error); do not take it to mean that
	// nothing was written: read the files before doing the work again.
	ErrUndecided = errors.New("filetxn: commit not undone: the next transaction on any of its files completes or undoes it")
)

// A FormatError reports bytes that a codec does not understand, or a
// document it will not write because the format cannot hold it. Such a
// file is refused, never rewritten. The codecs of this module (JSON and
// the typed stores') return it, and a codec of the caller's may; the
// engine and the stores wrap it in an *fs.PathError that names the file.
type FormatError struct {
	Line   int    // 1-based line of the offending text; 0 when not known
	Column int    // 1-based column of the offending byte, counted in bytes; 0 when not known
	Key    string // what the error is about (a JSON key, an entry's id, a row's key); "" when nothing in particular
	Err    error  // what is wrong
}

// Error returns the position, the key and Err's message, for example
// "line 3, column 3: jobs: json: unknown field \"jobs\"" or "gates.max_ticks: want
// a whole number".
func (e *FormatError) Error() string {
	var b []byte
	if e.Line > 0 {
		b = append(b, "line "...)
		b = strconv.AppendInt(b, int64(e.Line), 10)
		if e.Column > 0 {
			b = append(b, ", column "...)
			b = strconv.AppendInt(b, int64(e.Column), 10)
		}
	}
	if e.Key != "" {
		if len(b) > 0 {
			b = append(b, ": "...)
		}
		b = append(b, e.Key...)
	}
	msg := "malformed"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	if len(b) == 0 {
		return msg
	}
	return string(append(append(b, ": "...), msg...))
}

// Unwrap returns Err.
func (e *FormatError) Unwrap() error { return e.Err }

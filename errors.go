package filetxn

import "errors"

// Errors returned by the engine. Failures of a particular file are
// *fs.PathError values whose Op names the step ("Read", "Decode", "Encode",
// "Write", "Restore") and whose Path is the data file; they unwrap to the
// sentinels below, to the codec's own error, or to the OS error.
var (
	// ErrDiverged is returned by Restore when the file's current bytes are
	// not among the versions the caller owns: someone else has written since,
	// and putting the snapshot back would erase their work. Nothing is
	// written.
	ErrDiverged = errors.New("filetxn: file has diverged from the versions the caller owns")

	// ErrInvalidArgument is returned by NewStore, before any I/O, for an
	// empty path, a document type that is not a pointer, a nil codec or an
	// invalid option (a relative state root, an empty lock path). The error
	// names the store's path and the option.
	ErrInvalidArgument = errors.New("filetxn: invalid argument")
)

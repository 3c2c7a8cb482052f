package atomicfile

import "errors"

// ErrNotRegular is returned when the target exists and is not a regular file (a
// directory, a named pipe, a socket, a device) after symbolic links are followed.
// Nothing is staged and the target is untouched. The error wrapping it is an
// [*fs.PathError] naming the path and the kind of file found.
var ErrNotRegular = errors.New("atomicfile: not a regular file")

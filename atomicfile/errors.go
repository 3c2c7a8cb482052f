package atomicfile

import "github.com/filetxn/filetxn/internal/fsys"

// ErrNotRegular is returned when the target exists and is not a regular file (a
// directory, a named pipe, a socket, a device) after symbolic links are followed.
// Nothing is staged and the target is untouched. The error wrapping it is an
// [*fs.PathError] naming the path and the kind of file found.
//
// It is also the error of every read of the filetxn engine and the typed stores
// that finds something other than a regular file at a data path: such a file is
// refused without being read, so a read never waits on a named pipe.
var ErrNotRegular = fsys.ErrNotRegular

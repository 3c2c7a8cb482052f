package atomicstage

import (
	"io/fs"
	"os"

	"github.com/filetxn/filetxn/internal/osfile"
)

// Append is atomicfile.AppendFile (whose doc says what it guarantees): it
// appends data to the file at path in a single write(2) on a descriptor
// opened with O_APPEND, creating the file with perm (under the umask) when
// it is missing, and fsyncs it unless o.NoSync. A file at path that is not
// a regular file is refused without waiting and gets nothing (see
// osfile.OpenRegular). Errors are *fs.PathError with Op op and Path path.
func Append(op, path string, data []byte, perm fs.FileMode, o Options) error {
	f, err := osfile.OpenRegular(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
	if err != nil {
		return &fs.PathError{Op: op, Path: path, Err: osfile.UnwrapOS(err)}
	}
	_, err = f.Write(data)
	if err == nil && !o.NoSync {
		err = syncFile(f, path)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &fs.PathError{Op: op, Path: path, Err: osfile.UnwrapOS(err)}
	}
	return nil
}

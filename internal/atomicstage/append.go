package atomicstage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/filetxn/filetxn/internal/osfile"
)

// Append is atomicfile.AppendFile (whose doc says what it guarantees): it
// appends data to the file at path in a single write(2) on a descriptor
// opened with O_APPEND, creating the file with perm (under the umask) when
// it is missing, and fsyncs it unless o.NoSync. A file at path that is not
// a regular file is refused without waiting and gets nothing (see
// osfile.OpenRegular), and so does a read-only one (see openLog). Errors
// are *fs.PathError with Op op and Path path.
func Append(op, path string, data []byte, perm fs.FileMode, o Options) error {
	f, err := openLog(path, perm)
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

// openLog opens the log at path for appending, creating it with perm when
// it is missing. An existing log whose mode grants no write bit is refused
// with an error wrapping fs.ErrPermission, as checkTarget refuses such a
// target: for root the open itself succeeds, and the mode is what says "do
// not write me". A log that openLog creates gets its first record whatever
// perm says, as open(2) lets the creator of a file write it.
func openLog(path string, perm fs.FileMode) (*os.File, error) {
	f, err := osfile.OpenRegular(path, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		// Missing, or a dangling link, whose target is then created.
		return osfile.OpenRegular(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && fi.Mode().Perm()&0o222 == 0 {
		err = fmt.Errorf("read-only file (mode %v): %w", fi.Mode().Perm(), fs.ErrPermission)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

package fsys

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Append is atomicfile.AppendFile (whose doc says what it guarantees): it
// appends data to the file at path in a single write(2) on a descriptor
// opened with O_APPEND, creating the file with perm (under the umask) when
// it is missing, and fsyncs it unless o.NoSync. When it created the file it
// fsyncs the directory too (unless o.NoSync or o.NoDirSync), after the file:
// the fsync of a new file does not make its name durable, and without it a
// power loss could take away the whole log, the record just acknowledged
// included. A file at path that is not a regular file is refused without
// waiting and gets nothing (see OpenRegular), and so does a read-only
// one (see openLog). Errors are *fs.PathError with Op op and Path path.
func Append(op, path string, data []byte, perm fs.FileMode, o Options) error {
	f, created, err := OpenLog(path, os.O_WRONLY, perm)
	if err != nil {
		return &fs.PathError{Op: op, Path: path, Err: UnwrapOS(err)}
	}
	_, err = f.Write(data)
	if err == nil && !o.NoSync {
		err = syncFile(f, path)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && created && !o.NoSync && !o.NoDirSync {
		// The file is the one path names, links followed (OpenRegular
		// follows them, and created a dangling link's target).
		var dir string
		if _, dir, err = Target(path); err == nil {
			if err = SyncDir(dir); err != nil {
				err = fmt.Errorf("created, but the directory was not synced: %w", UnwrapOS(err))
			}
		}
	}
	if err != nil {
		return &fs.PathError{Op: op, Path: path, Err: UnwrapOS(err)}
	}
	return nil
}

// OpenLog opens the log at path for appending, with access (os.O_WRONLY,
// or os.O_RDWR for a caller that reads it too), creating it with perm when
// it is missing. An existing log whose mode grants no write bit is refused
// with an error wrapping fs.ErrPermission, as checkTarget refuses such a
// target: for root the open itself succeeds, and the mode is what says "do
// not write me". A log that openLog creates gets its first record whatever
// perm says, as open(2) lets the creator of a file write it. created
// reports that the file was missing (another appender may have created it
// in the meantime: then both call it created, and both sync the directory).
func OpenLog(path string, access int, perm fs.FileMode) (f *os.File, created bool, err error) {
	f, mode, err := OpenRegular(path, access|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		// Missing, or a dangling link, whose target is then created.
		f, _, err = OpenRegular(path, access|os.O_APPEND|os.O_CREATE, perm)
		return f, err == nil, err
	}
	if err != nil {
		return nil, false, err
	}
	if mode.Perm()&0o222 == 0 {
		f.Close()
		return nil, false, fmt.Errorf("read-only file (mode %v): %w", mode.Perm(), fs.ErrPermission)
	}
	return f, false, nil
}

package atomicfile

import (
	"io/fs"
	"os"
)

// AppendFile appends data to the file at path in a single write(2) on a
// descriptor opened with O_APPEND, creating the file with perm (under the
// umask) when it is missing, and fsyncs it unless WithoutSync is given. It is
// for append-only logs, not for state: a crash can leave a partial last
// record, which readers of such a log must skip. On a local file system the
// kernel places each O_APPEND write whole at the end of the file, so records
// of concurrent appenders do not interleave. Errors are *fs.PathError with Op
// "AppendFile".
func AppendFile(path string, data []byte, perm fs.FileMode, opts ...Option) error {
	o := collect(opts)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
	if err != nil {
		return &fs.PathError{Op: "AppendFile", Path: path, Err: unwrapOS(err)}
	}
	_, err = f.Write(data)
	if err == nil && !o.NoSync {
		err = syncFile(f, path)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &fs.PathError{Op: "AppendFile", Path: path, Err: unwrapOS(err)}
	}
	return nil
}

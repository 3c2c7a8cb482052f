package atomicfile

import (
	"io/fs"

	"github.com/filetxn/filetxn/internal/fsys"
)

// WriteFile atomically replaces the file at path with data: afterwards path holds
// exactly data, and at no moment does it hold anything but the old contents or
// the new. A new file is created with perm minus the umask; an existing one keeps
// its mode (and, on Unix as root, its owner). If path is a symbolic link, the file
// it finally points to is replaced and the link is kept. Unless [WithoutSync] is
// given, the data and the directory entry are on stable storage when WriteFile
// returns nil.
//
// WriteFile refuses, with nothing staged, a target that exists and is read-only
// (the error wraps [fs.ErrPermission]) or is not a regular file ([ErrNotRegular]).
// A missing parent directory gives an error wrapping [fs.ErrNotExist] that names
// the directory. On any error the temporary file is removed and the target is
// untouched, except when only the final directory fsync fails: the target is
// then replaced but may not survive a crash; write the same bytes again to
// retry. Errors are [*fs.PathError] with Op "WriteFile" and Path path.
//
// WriteFile blocks for the I/O (on Windows up to about three seconds more while
// another process holds the target open). Concurrent calls on one path each
// leave a whole file, and the last rename wins; a read-modify-write needs a
// lock around all three.
func WriteFile(path string, data []byte, perm fs.FileMode, opts ...Option) error {
	pf, err := fsys.Create("WriteFile", path, perm, fsys.Collect(opts))
	if err != nil {
		return err
	}
	defer pf.Cleanup()
	if _, err := pf.Write(data); err != nil {
		return err
	}
	return pf.CloseAtomicallyReplace()
}

// AppendFile appends data to the file at path in a single write(2) on a
// descriptor opened with O_APPEND, creating the file with perm (under the
// umask) when it is missing, and fsyncs it unless [WithoutSync] is given. A
// file it creates has its directory fsynced too, after the file (unless
// [WithoutDirSync] or [WithoutSync]), so that a power loss cannot take the
// new log away with its first record; an append to an existing file syncs
// no directory. When only that directory fsync fails, the error says the
// directory was not synced: the record is in the log, which readers see, but
// the log may not survive a crash, and appending the record again would
// write it twice. It is for append-only logs, not for state: a crash can leave a partial last
// record, which readers of such a log must skip. On a local file system the
// kernel places each O_APPEND write whole at the end of the file, so records
// of concurrent appenders do not interleave. A path that names anything but a
// regular file (a directory, a named pipe, a socket, a device) is refused at
// once, without waiting for a pipe's reader, with an error wrapping
// [ErrNotRegular], and nothing is written to it; so is an existing file that
// is read-only (decided as for WriteFile, on its mode too, so that root is
// refused as well), with an error wrapping [fs.ErrPermission]. Errors are
// [*fs.PathError] with Op "AppendFile" and Path path.
func AppendFile(path string, data []byte, perm fs.FileMode, opts ...Option) error {
	return fsys.Append("AppendFile", path, data, perm, fsys.Collect(opts))
}

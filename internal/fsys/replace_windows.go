package fsys

import (
	"errors"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// replaceBudget is how long replace keeps retrying a target that another process
// holds open; replaceMaxDelay caps the pause between two attempts.
const (
	replaceBudget   = 3 * time.Second
	replaceMaxDelay = 100 * time.Millisecond
)

// replace renames from over to with MoveFileEx(MOVEFILE_REPLACE_EXISTING), adding
// MOVEFILE_WRITE_THROUGH when durable so that it returns only once the move is on
// disk (Windows has no directory fsync to do that afterwards). Both paths get
// LongPath's prefix when they are long, as os gives its own calls.
//
// MoveFileEx replaces with the classic semantics: a target that another
// process has open cannot be replaced. A handle that does not share delete
// access makes it fail with ERROR_SHARING_VIOLATION; one that does (this
// module's readers, see osfile.go) with ERROR_ACCESS_DENIED, and then replace
// renames again with POSIX semantics (replacePOSIX), which replaces a file
// that is open with FILE_SHARE_DELETE at once, its readers reading on the old
// file. Both errors are also what a previous replace's old file still being
// deleted, or a virus scanner or indexer looking at the new one, gives.
// Those holds are usually brief, so both are retried, pausing 1 ms, 2 ms,
// 4 ms, ... up to 100 ms, for about 3 s in all; then the last error is
// returned. Any other error is returned at once.
func replace(from, to string, durable bool) error {
	from, to = LongPath(from), LongPath(to)
	src, err := windows.UTF16PtrFromString(from)
	if err != nil {
		return err
	}
	dst, err := windows.UTF16PtrFromString(to)
	if err != nil {
		return err
	}
	flags := uint32(windows.MOVEFILE_REPLACE_EXISTING)
	if durable {
		flags |= windows.MOVEFILE_WRITE_THROUGH
	}
	deadline := time.Now().Add(replaceBudget)
	delay := time.Millisecond
	for {
		err := windows.MoveFileEx(src, dst, flags)
		if err == nil {
			return nil
		}
		if errors.Is(err, windows.ERROR_ACCESS_DENIED) && replacePOSIX(src, to, durable) == nil {
			return nil
		}
		if !errors.Is(err, windows.ERROR_SHARING_VIOLATION) && !errors.Is(err, windows.ERROR_ACCESS_DENIED) {
			return err
		}
		if time.Now().Add(delay).After(deadline) {
			return err
		}
		time.Sleep(delay)
		delay = min(2*delay, replaceMaxDelay)
	}
}

// fileRenameInfo is FILE_RENAME_INFO as SetFileInformationByHandle takes it
// with FileRenameInfoEx: Flags in place of ReplaceIfExists, and FileName
// running on past the struct for FileNameLength bytes.
type fileRenameInfo struct {
	Flags          uint32
	RootDirectory  windows.Handle
	FileNameLength uint32
	FileName       [1]uint16
}

// replacePOSIX renames src over the file at to with
// SetFileInformationByHandle(FileRenameInfoEx) and
// FILE_RENAME_FLAG_POSIX_SEMANTICS (Windows 10 1607 and later, on NTFS), as
// Rust's std::fs::rename does when MoveFileEx is denied: the target is
// replaced even while other processes hold it open, provided that every
// handle to it shares delete access; those handles go on reading the old
// file. The source is opened with FILE_FLAG_WRITE_THROUGH when durable, so
// that the rename is on disk when it returns, as MOVEFILE_WRITE_THROUGH asks
// of MoveFileEx. Where the system or the file system lacks it (older
// Windows, FAT, Wine) it fails with ERROR_INVALID_PARAMETER or
// ERROR_NOT_SUPPORTED, and replace goes on with MoveFileEx.
func replacePOSIX(src *uint16, to string, durable bool) error {
	attrs := uint32(windows.FILE_FLAG_OPEN_REPARSE_POINT | windows.FILE_FLAG_BACKUP_SEMANTICS)
	if durable {
		attrs |= windows.FILE_FLAG_WRITE_THROUGH
	}
	h, err := windows.CreateFile(src, windows.DELETE|windows.SYNCHRONIZE,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, attrs, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	name, err := windows.UTF16FromString(to)
	if err != nil {
		return err
	}
	// The struct, then the name with its terminating NUL (which
	// FileNameLength does not count), in a buffer aligned as the struct.
	off := int(unsafe.Offsetof(fileRenameInfo{}.FileName))
	size := off + 2*len(name)
	buf := make([]uint64, (size+7)/8)
	info := (*fileRenameInfo)(unsafe.Pointer(&buf[0]))
	info.Flags = windows.FILE_RENAME_REPLACE_IF_EXISTS | windows.FILE_RENAME_POSIX_SEMANTICS
	info.FileNameLength = uint32(2 * (len(name) - 1))
	copy(unsafe.Slice(&info.FileName[0], len(name)), name)
	return windows.SetFileInformationByHandle(h, windows.FileRenameInfoEx, (*byte)(unsafe.Pointer(&buf[0])), uint32(size))
}

package fsys

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing f's dirty pages now,
// without waiting for them (sync_file_range(2) with
// SYNC_FILE_RANGE_WRITE). It makes nothing durable, and a failure is of no
// consequence: the fsync that follows does the work then.
//
// Its use is ordering. On a file system with delayed allocation (ext4, XFS)
// a new file's blocks are allocated when its pages are written back, which
// fsync does first: when several new files are fsynced at once, the first
// fsync may commit the journal before the others have allocated, and each
// of those then needs a journal commit of its own. Written back first, all
// of their allocations are in the journal's running transaction, and one
// commit serves every fsync.
func startWriteback(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SyncFileRange(int(fd), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
	})
}

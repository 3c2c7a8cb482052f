package lock

import (
	"fmt"
	"os"
	"strings"
)

// statfsResult is what statfs says about the file system of a lock file:
// on Linux its magic number (f_type), on the BSDs and macOS its name
// (f_fstypename). Both are zero where the OS says nothing (Windows, illumos)
// or statfs failed.
type statfsResult struct {
	magic uint32
	name  string
}

// statFS reports the file system of an open lock file. It is a variable so
// that a test can inject the results of a network file system; it is set
// only before any goroutine looks a lock file up.
var statFS = statFile

// A fsError refuses a lock file on a file system where flock(2) may not
// exclude processes on other hosts. It matches ErrNotSupported.
type fsError struct{ r statfsResult }

func (e *fsError) Error() string {
	fs := e.r.name
	if e.r.magic != 0 {
		fs = fmt.Sprintf("%s (%#x)", fs, e.r.magic)
	}
	return "file system " + fs + ": flock may not exclude other hosts: " +
		"keep lock files on a local file system, or allow this one with lock.WithAnyFileSystem"
}

func (e *fsError) Unwrap() error { return ErrNotSupported }

// fsRefusal returns the error that refuses f's file system, or nil where
// locks are known to exclude or the file system is unknown. It costs one
// statfs, and runs once per descriptor, when the lock file is opened.
func fsRefusal(f *os.File) error {
	r := statFS(f)
	if r.name == "" {
		r.name = remoteMagic[r.magic]
	}
	if !remoteName(r.name) {
		return nil
	}
	return &fsError{r}
}

// remoteMagic names the Linux file systems (statfs f_type, from
// linux/magic.h and the file systems' sources) on which flock(2) may not
// exclude other hosts. Local file systems are not listed: an unknown
// magic number is allowed.
var remoteMagic = map[uint32]string{
	0x6969:     "nfs",    // NFS_SUPER_MAGIC: nolock and local_lock mounts lock locally only
	0x65735546: "fuse",   // FUSE_SUPER_MAGIC (sshfs, rclone, virtiofs, ...): up to the daemon
	0xFF534D42: "cifs",   // CIFS_SUPER_MAGIC: depends on the mount's options
	0xFE534D42: "smb2",   // SMB2_SUPER_MAGIC
	0x517B:     "smb",    // SMB_SUPER_MAGIC
	0x01021997: "9p",     // V9FS_MAGIC: locks are local unless the server implements them
	0x786F4256: "vboxsf", // VirtualBox shared folders
	0x73757245: "coda",   // CODA_SUPER_MAGIC
	0x5346414F: "afs",    // AFS_SUPER_MAGIC (OpenAFS)
	0x6B414653: "afs",    // AFS_FS_MAGIC (kAFS)
	0x0BD00BD0: "lustre", // LL_SUPER_MAGIC: flock is local with localflock, refused with noflock
}

// remoteName reports whether name (a Linux name from remoteMagic or a BSD or
// macOS f_fstypename) is a file system on which flock(2) may not exclude
// other hosts.
func remoteName(name string) bool {
	switch name {
	case "":
		return false
	case "nfs", "fuse", "cifs", "smb", "smb2", "smbfs", "9p", "p9fs", "vboxsf",
		"coda", "afs", "afpfs", "webdav", "lustre", "puffs":
		return true
	}
	// macFUSE reports "macfuse" or "osxfuse", FreeBSD and OpenBSD "fusefs",
	// FUSE-T "fuse-t"; with a subtype, some report "fusefs.sshfs".
	return strings.Contains(name, "fuse")
}

package lock

import (
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// recorded returns the name macOS records for path: fcntl(F_GETPATH) of an
// open descriptor, which gives each element as its directory entry spells it
// (the user-visible path, through firmlinks: /Users, not
// /System/Volumes/Data/Users). false when path cannot be opened for reading,
// and when the name recorded for its last element differs from the one
// spelled by more than case (another hard link of the file, or a name in
// another Unicode normalization form, as HFS+ stores them): canonical then
// keeps that element as spelled. It costs an open, an fcntl and a close;
// the open does not block (a FIFO) and makes no terminal the controlling one.
func recorded(path string) (string, bool) {
	var fd int
	var err error
	for {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return "", false
	}
	defer unix.Close(fd)
	// The buffer is on the heap (KeepAlive takes it as an interface), so
	// that it cannot move while the kernel writes into it.
	buf := new([unix.PathMax]byte)
	_, err = unix.FcntlInt(uintptr(fd), unix.F_GETPATH, int(uintptr(unsafe.Pointer(&buf[0]))))
	runtime.KeepAlive(buf)
	if err != nil {
		return "", false
	}
	n := 0
	for n < len(buf) && buf[n] != 0 {
		n++
	}
	final := string(buf[:n])
	if final == "" || !strings.EqualFold(filepath.Base(final), filepath.Base(path)) {
		return "", false
	}
	return final, true
}

//go:build unix

package board

import (
	"slices"
	"syscall"
)

// readProbe reads the board for Advance's lock-free probe: its bytes (non-nil, empty for
// an empty file), or nil when it does not exist. ok is false on any other outcome, which
// the probe leaves to the locked pass to decide and report. It makes bare system calls
// (open, fstat, read, close): os.ReadFile adds half a dozen more to try the runtime poller
// on a regular file, which cost more than reading a board.
func readProbe(path string) (data []byte, ok bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	}
	if err == syscall.ENOENT {
		return nil, true
	}
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, false
	}
	buf := make([]byte, 0, st.Size+1) // one byte more, so that one read can reach the end
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 4096)
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, false
		case n == 0:
			return buf, true
		}
		buf = buf[:len(buf)+n]
	}
}

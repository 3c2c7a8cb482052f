//go:build !(darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd)

package lock

import "os/exec"

// HandOver passes the held lock to the child process that cmd will start. It
// is implemented only on systems with flock(2); here it returns an error
// wrapping ErrNotSupported.
func (h *Handle) HandOver(cmd *exec.Cmd) error {
	return pathError("HandOver", h.path, ErrNotSupported)
}

func inherited(e *entry) (fd int, proof string, ok, freed bool) { return -1, "", false, false }

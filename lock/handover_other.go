//go:build !(darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd)

package lock

import "os/exec"

// handOver is HandOver where it is not implemented (no flock(2)).
func (h *Handle) handOver(cmd *exec.Cmd) error {
	return pathError("HandOver", h.path, ErrNotSupported)
}

func inherited(e *entry) (fd int, proof string, ok, freed bool, err error) {
	return -1, "", false, false, nil
}

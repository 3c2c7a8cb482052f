//go:build !unix && !windows

package harness

import (
	"errors"
	"os"
	"os/exec"
)

// Systems without process groups: the timeout kills the child only.
func setGroup(cmd *exec.Cmd) {}

func lockThread() func() { return func() {} }

func signalGroup(p *os.Process, kill bool) { p.Kill() }

func waitExited(p *os.Process) error { return errors.ErrUnsupported }

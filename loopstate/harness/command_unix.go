//go:build unix && !linux

package harness

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setGroup starts the child as the leader of its own process group, so that
// a timeout can signal everything it started. There is no parent-death
// signal here: a harness outlives a runner that is killed, and keeps the
// loop's lock until it exits.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func lockThread() func() { return func() {} }

// signalGroup sends SIGTERM (or SIGKILL) to p's process group.
func signalGroup(p *os.Process, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	syscall.Kill(-p.Pid, sig)
}

// waitExited cannot wait without reaping here, so what the child leaves in
// its group after a normal exit is not killed.
func waitExited(p *os.Process) error { return errors.ErrUnsupported }

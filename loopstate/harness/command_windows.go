package harness

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setGroup starts the child in a new process group. Windows has no
// process-group signal to send; the timeout terminates the child itself
// (TerminateProcess), not what it started. The lock is not handed over
// (lock.Handle.HandOver is not supported): the child must not take the
// loop's lock, or it waits until the timeout kills it.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

func lockThread() func() { return func() {} }

// signalGroup terminates p.
func signalGroup(p *os.Process, kill bool) { p.Kill() }

func waitExited(p *os.Process) error { return errors.ErrUnsupported }

package harness

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// setGroup starts the child as the leader of its own process group, so that
// a timeout can signal everything it started, and asks the kernel to SIGKILL
// it if the runner dies (PR_SET_PDEATHSIG): an orphaned harness would keep
// the loop's lock held through its inherited descriptor.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// lockThread pins the calling goroutine to its thread until the returned
// function is called: the parent-death signal is tied to the thread that
// started the child.
func lockThread() func() {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}

// signalGroup sends SIGTERM (or SIGKILL) to p's process group.
func signalGroup(p *os.Process, kill bool) {
	sig := unix.SIGTERM
	if kill {
		sig = unix.SIGKILL
	}
	unix.Kill(-p.Pid, sig)
}

// waitExited blocks until p has exited, without reaping it (waitid with
// WNOWAIT): until it is reaped its pid, and so its group id, cannot be
// reused.
func waitExited(p *os.Process) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err
		}
	}
}

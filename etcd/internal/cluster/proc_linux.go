package cluster

import "syscall"

// sysProcAttr makes a child die with the thread that started it, so that a
// test binary killed outright does not leave its members running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

//go:build !linux

package cluster

import "syscall"

// sysProcAttr is nil where there is no parent-death signal: a member then
// notices its parent's death by polling (see watchParent).
func sysProcAttr() *syscall.SysProcAttr { return nil }

//go:build unix

package demo

import (
	"os"
	"syscall"
)

// freezeSignal and thawSignal stop and continue a worker process.
var freezeSignal, thawSignal os.Signal = syscall.SIGSTOP, syscall.SIGCONT

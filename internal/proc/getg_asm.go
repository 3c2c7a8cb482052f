//go:build gc && (amd64 || arm64)

package proc

import "unsafe"

// getg returns the calling goroutine's runtime descriptor (the g), which the
// gc toolchain keeps in thread-local storage on amd64 and in a register on
// arm64 (getg_amd64.s, getg_arm64.s). Only goidOffset and ID read it.
func getg() unsafe.Pointer

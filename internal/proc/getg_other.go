//go:build !(gc && (amd64 || arm64))

package proc

import "unsafe"

// getg returns nil where the goroutine's runtime descriptor cannot be
// reached: ID then parses stack traces.
func getg() unsafe.Pointer { return nil }

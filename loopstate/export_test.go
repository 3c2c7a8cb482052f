package loopstate

import "time"

// NewCommandHarness returns the Run method of a harness.Command with the
// given program, environment and kill grace. The tests of this package run
// their harness processes through it, since they cannot import package
// harness (it imports this one): harness_test.go, in package
// loopstate_test, sets it.
var NewCommandHarness func(path string, env []string, killGrace time.Duration) Harness

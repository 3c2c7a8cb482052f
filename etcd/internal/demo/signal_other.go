//go:build !unix

package demo

import "os"

// freezeSignal and thawSignal stop and continue a worker process: not
// there to send off Unix, where the demo does not run.
var freezeSignal, thawSignal os.Signal

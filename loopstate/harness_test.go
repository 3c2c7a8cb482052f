package loopstate_test

import (
	"time"

	"github.com/filetxn/filetxn/loopstate"
	"github.com/filetxn/filetxn/loopstate/harness"
)

// The cross-process tests of package loopstate run their harness processes
// with the real harness.Command.
func init() {
	loopstate.NewCommandHarness = func(path string, env []string, killGrace time.Duration) loopstate.Harness {
		return (&harness.Command{Path: path, Env: env, KillGrace: killGrace}).Run
	}
}

//go:build unix

package loopstate_test

import (
	"context"
	"fmt"
	"os"

	"github.com/filetxn/filetxn/loopstate"
)

// A Command harness runs a program for the tick, in its own process group,
// with the loop's lock handed over and a wall timeout; its last line on
// standard output reports the tick's cost.
func ExampleCommand() {
	dir, _ := os.MkdirTemp("", "loopstate-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	root := loopstate.NewRoot(dir, loopstate.WithClock(clock))
	l, _ := root.Create(ctx, "triage", loopstate.Template{Gates: loopstate.Gates{TickTimeout: ptr(60.0)}})

	harness := &loopstate.Command{
		Path: "sh",
		Args: []string{"-c", `echo "tick $LOOPSTATE_TICK of $LOOPSTATE_LOOP"; echo '{"cost": {"usd": 0.09, "tokens": 21000}, "note": "3 failing checks classified"}'`},
	}
	rec, err := l.Tick(ctx, loopstate.TriggerManual, harness.Run)
	fmt.Println(rec.Outcome, *rec.ExitCode, rec.Cost.USD, rec.Cost.Tokens, rec.Note, err)

	harness = &loopstate.Command{Path: "sh", Args: []string{"-c", "exit 3"}}
	rec, _ = l.Tick(ctx, loopstate.TriggerManual, harness.Run)
	fmt.Println(rec.Outcome, *rec.ExitCode, rec.Note)
	// Output:
	// ok 0 0.09 21000 3 failing checks classified <nil>
	// fail 3 exit status 3
}

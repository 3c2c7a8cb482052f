//go:build unix

package harness_test

import (
	"context"
	"fmt"
	"os"

	"github.com/filetxn/filetxn/loopstate"
	"github.com/filetxn/filetxn/loopstate/harness"
)

// A Command harness runs a program for the tick, in its own process group,
// with the loop's lock handed over and a wall timeout; its last line on
// standard output reports the tick's cost.
func ExampleCommand() {
	dir, _ := os.MkdirTemp("", "loopstate-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	root := must(loopstate.NewRoot(dir))
	l, _ := root.Create(ctx, "triage", func(d *loopstate.Doc) error {
		d.Gates.TickTimeout = new(60.0)
		return nil
	})

	h := &harness.Command{
		Path: "sh",
		Args: []string{"-c", `echo "tick $LOOPSTATE_TICK of $LOOPSTATE_LOOP"; echo '{"cost": {"usd": 0.09, "tokens": 21000}, "note": "3 failing checks classified"}'`},
	}
	rec, err := l.Tick(ctx, loopstate.TriggerManual, h.Run)
	fmt.Println(rec.Outcome, *rec.ExitCode, rec.Cost.USD, rec.Cost.Tokens, rec.Note, err)

	h = &harness.Command{Path: "sh", Args: []string{"-c", "exit 3"}}
	rec, _ = l.Tick(ctx, loopstate.TriggerManual, h.Run)
	fmt.Println(rec.Outcome, *rec.ExitCode, rec.Note)
	// Output:
	// ok 0 0.09 21000 3 failing checks classified <nil>
	// fail 3 exit status 3
}

// must returns r, and panics if NewRoot refused its arguments.
func must(r *loopstate.Root, err error) *loopstate.Root {
	if err != nil {
		panic(err)
	}
	return r
}

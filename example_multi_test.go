package filetxn_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/board"
	"github.com/filetxn/filetxn/ledger"
)

// Moving an amount between two files is one commit: a crash, a full disk
// or a refusal leaves both files as they were, or both changed.
func ExampleMutateAll() {
	dir, _ := os.MkdirTemp("", "filetxn-example")
	defer os.RemoveAll(dir)
	state := filetxn.WithStateRoot(filepath.Join(dir, "state"))
	from, _ := filetxn.NewStore(filepath.Join(dir, "from.txt"), countCodec{}, state)
	to, _ := filetxn.NewStore(filepath.Join(dir, "to.txt"), countCodec{}, state)
	_, _ = from.Mutate(context.Background(), func(n *int) error { *n = 10; return nil })

	move := func(amount int) error {
		_, err := filetxn.MutateAll(context.Background(), []filetxn.Member{from, to}, func(m *filetxn.Multi) error {
			src, dst := filetxn.In(m, from), filetxn.In(m, to)
			if *src < amount {
				return errors.New("not enough") // nothing is written to either file
			}
			*src -= amount
			*dst += amount
			return nil
		})
		return err
	}
	fmt.Println(move(7), move(7))
	a, _ := from.View(context.Background())
	b, _ := to.View(context.Background())
	fmt.Println(*a, *b)
	// Output:
	// <nil> not enough
	// 3 7
}

// Closing a story's deferred work and moving the story to done is one
// commit over a ledger and a board (copies of the README's sample files).
func ExampleMutateAll_ledgerAndBoard() {
	dir, _ := os.MkdirTemp("", "filetxn-example")
	defer os.RemoveAll(dir)
	for _, name := range []string{"deferred-work.md", "sprint-status.yaml"} {
		data, _ := os.ReadFile(filepath.Join("examples", "testdata", name))
		_ = os.WriteFile(filepath.Join(dir, name), data, 0o644)
	}
	ctx, state := context.Background(), filetxn.WithStateRoot(filepath.Join(dir, "state"))
	led, _ := ledger.Open(filepath.Join(dir, "deferred-work.md"), state)
	brd, _ := board.Open(filepath.Join(dir, "sprint-status.yaml"), state)

	_, err := filetxn.MutateAll(ctx, []filetxn.Member{led, brd}, func(m *filetxn.Multi) error {
		if _, err := led.In(m).MarkDone([]string{"DW-1", "DW-3"}, "2026-12-01", "fixed in 3-2"); err != nil {
			return err // nothing is written to either file
		}
		_, err := brd.In(m).Advance("3-2-digest-delivery", board.Done)
		return err
	})

	d, _ := led.View(ctx)
	e, _ := d.Entry("DW-3")
	b, _ := brd.View(ctx)
	s, _ := b.Status("3-2-digest-delivery")
	fmt.Println(err, e.Done(), s)
	// Output: <nil> true done
}

package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/filetxn/filetxn/board"
)

// openBoard opens the board at file with its lock under the state
// directory (the sidecar bmad-loop's board writer takes when the state
// directory is its state root).
func (c *cli) openBoard(file string) (*board.Store, error) {
	root, err := c.stateRoot()
	if err != nil {
		return nil, err
	}
	return board.Open(file, board.WithStateRoot(root), board.WithEngineOptions(c.engineOptions()...))
}

func boardAdvance(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	file := fset.String("file", "", "the board (sprint-status.yaml)")
	now := fset.String("now", "", "write this into last_updated when the row moves")
	regress := fset.Bool("allow-regression", false, "allow the one backward move, done to awaiting-operator")
	unordered := fset.Bool("allow-unordered", false, "overwrite a status outside the order (bmad-loop's behaviour)")
	pos, err := c.parse(fset, args, "file")
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("want KEY STATUS, got %d arguments", len(pos))
	}
	key, target := pos[0], pos[1]
	var opts []board.AdvanceOption
	if *regress {
		opts = append(opts, board.AllowRegression())
	}
	if *unordered {
		opts = append(opts, board.AllowUnordered())
	}
	s, err := openExisting(*file, c.openBoard)
	if err != nil {
		return err
	}
	ctx, cancel := c.lockCtx()
	defer cancel()
	st, err := s.Advance(ctx, key, target, *now, opts...)
	if err != nil {
		return err
	}
	if st == "" {
		return notFoundf("no row %s in %s", key, *file)
	}
	if c.json {
		return c.printJSON(struct {
			File   string `json:"file"`
			Key    string `json:"key"`
			Target string `json:"target"`
			Status string `json:"status"`
		}{*file, key, target, st})
	}
	c.printf("%s\n", st)
	return nil
}

// storyJSON is one story of board show -json, in file order.
type storyJSON struct {
	Key    string `json:"key"`
	Epic   int    `json:"epic"`
	Status string `json:"status"`
	Line   int    `json:"line"`
}

func boardShow(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	file := fset.String("file", "", "the board (sprint-status.yaml)")
	if err := c.parseNoArgs(fset, args, "file"); err != nil {
		return err
	}
	s, err := openExisting(*file, c.openBoard)
	if err != nil {
		return err
	}
	d, err := s.View(context.Background())
	if err != nil {
		return err
	}
	next, _ := d.NextActionable(board.AnyEpic)
	if c.json {
		out := struct {
			File    string            `json:"file"`
			Stories map[string]string `json:"stories"`
			Epics   map[string]string `json:"epics"`
			Order   []storyJSON       `json:"order"`
			Next    string            `json:"next"`
		}{File: *file, Stories: map[string]string{}, Epics: map[string]string{}, Order: []storyJSON{}, Next: next.Key}
		for _, st := range d.Stories() {
			out.Stories[st.Key] = st.Status
			out.Order = append(out.Order, storyJSON{st.Key, st.Epic, st.Status, st.Line})
		}
		for _, e := range d.Epics() {
			out.Epics[e.Key] = e.Status
		}
		return c.printJSON(out)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	for _, e := range d.Epics() {
		fmt.Fprintf(tw, "%s\t%s\n", e.Key, e.Status)
		for _, st := range d.Stories() {
			if st.Epic == e.Number {
				fmt.Fprintf(tw, "  %s\t%s\n", st.Key, st.Status)
			}
		}
	}
	// Stories whose epic has no row of its own.
	epics := map[int]bool{}
	for _, e := range d.Epics() {
		epics[e.Number] = true
	}
	for _, st := range d.Stories() {
		if !epics[st.Epic] {
			fmt.Fprintf(tw, "%s\t%s\n", st.Key, st.Status)
		}
	}
	if next.Key != "" {
		fmt.Fprintf(tw, "next\t%s\n", next.Key)
	}
	return tw.Flush()
}

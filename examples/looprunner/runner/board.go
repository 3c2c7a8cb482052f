package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/filetxn/filetxn"
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
	ext, err := c.storeOptions()
	if err != nil {
		return nil, err
	}
	return board.Open(file, append(append([]filetxn.Option{filetxn.WithStateRoot(root)}, c.engineOptions()...), ext...)...)
}

// boardAdvanceDetails is the help of board advance after its flags.
const boardAdvanceDetails = `A row only moves forward through the order backlog, ready-for-dev,
in-progress, review, awaiting-operator, done; a row already at or past STATUS
is left unchanged (and the command says so). With -allow-regression the one
backward move, done to awaiting-operator, is allowed; with -allow-unordered a
status outside the order (completed, blocked) may be written or overwritten,
as bmad-loop does.
`

func boardAdvance(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	file := fset.String("file", "", "the board `FILE` (sprint-status.yaml)")
	now := fset.String("now", "", "the `TEXT` written into last_updated when the row moves")
	regress := fset.Bool("allow-regression", false, "allow the one backward move, done to awaiting-operator")
	unordered := fset.Bool("allow-unordered", false, "write or overwrite a status outside the order (bmad-loop's behaviour)")
	pos, err := c.parse(fset, args, "file")
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("want KEY STATUS, got %s", count(len(pos), "argument"))
	}
	key, target := pos[0], board.Status(pos[1])
	if board.Rank(target) < 0 && !*unordered {
		return usagef("status %q is outside the order (%s); give -allow-unordered to write it", target, statusOrder())
	}
	if err := checkBoardArgs(key, target, *now); err != nil {
		return err
	}
	var opts []board.AdvanceOption
	if *regress {
		opts = append(opts, board.AllowRegression())
	}
	if *unordered {
		opts = append(opts, board.AllowUnordered())
	}
	s, err := openExisting(c, *file, c.openBoard)
	if err != nil {
		return err
	}
	ctx, cancel := c.lockCtx()
	defer cancel()
	if *now != "" {
		opts = append(opts, board.Stamp(*now))
	}
	st, err := s.Advance(ctx, key, target, opts...)
	if errors.Is(err, filetxn.ErrNotFound) {
		return notFoundf("no row %s in %s", key, *file)
	}
	if err != nil {
		return err
	}
	// Advance ends at the target or, for a row already past it, where the
	// row was: then nothing was written.
	unchanged := st != target
	if c.json {
		return c.printJSON(struct {
			File      string       `json:"file"`
			Key       string       `json:"key"`
			Target    board.Status `json:"target"`
			Status    board.Status `json:"status"`
			Unchanged bool         `json:"unchanged"`
		}{*file, key, target, st, unchanged})
	}
	c.printf("%s\n", st)
	if unchanged {
		// stdout stays the status alone, for scripts; the note is for
		// the person.
		fmt.Fprintf(c.stderr, "%s: %s unchanged: already %s, past %s\n", c.name, key, st, target)
	}
	return nil
}

// checkBoardArgs refuses, before any file is read and in the command
// line's words, the KEY, STATUS or -now that the board refuses as an
// argument (it names its Go API: Advance, Stamp).
func checkBoardArgs(key string, target board.Status, now string) error {
	switch boardArgRefused(key, target, now) {
	case "key":
		return usagef("KEY %q: want a non-empty UTF-8 key", key)
	case "status":
		return usagef("STATUS %q: cannot be written as a plain YAML string", target)
	case "now":
		return usagef("-now %q: cannot be written as a plain YAML value for last_updated", now)
	}
	return nil
}

// boardArgRefused returns which of key, target and now ("key", "status",
// "now") the board refuses as an argument, "" for none. Each is tried alone
// on an empty board, where Advance checks its arguments and does no I/O.
func boardArgRefused(key string, target board.Status, now string) string {
	refused := func(key string, target board.Status, opts ...board.AdvanceOption) bool {
		_, err := new(board.Doc).Advance(key, target, opts...)
		return errors.Is(err, filetxn.ErrInvalidArgument)
	}
	switch {
	case refused(key, board.Done):
		return "key"
	case refused("k", target, board.AllowUnordered()):
		return "status"
	case now != "" && refused("k", board.Done, board.Stamp(now)):
		return "now"
	}
	return ""
}

// storyJSON is one story of board show -json, in file order.
type storyJSON struct {
	Key    string       `json:"key"`
	Epic   int          `json:"epic"`
	Status board.Status `json:"status"`
	Line   int          `json:"line"`
}

func boardShow(c *cli, args []string) error {
	fset := c.flagSet(c.name)
	file := fset.String("file", "", "the board `FILE` (sprint-status.yaml)")
	if err := c.parseNoArgs(fset, args, "file"); err != nil {
		return err
	}
	s, err := openExisting(c, *file, c.openBoard)
	if err != nil {
		return err
	}
	d, err := s.View(context.Background())
	if err != nil {
		return err
	}
	next, _ := d.NextActionable()
	if c.json {
		out := struct {
			File    string                  `json:"file"`
			Stories map[string]board.Status `json:"stories"`
			Epics   map[string]board.Status `json:"epics"`
			Order   []storyJSON             `json:"order"`
			Next    string                  `json:"next"`
			Unread  []unreadJSON            `json:"unread"`
		}{File: *file, Stories: map[string]board.Status{}, Epics: map[string]board.Status{}, Order: []storyJSON{}, Next: next.Key, Unread: []unreadJSON{}}
		for _, u := range d.Unread() {
			out.Unread = append(out.Unread, unreadJSON{u.Key, u.Line, u.Err.Error()})
		}
		for _, st := range d.Stories() {
			out.Stories[st.Key] = st.Status
			out.Order = append(out.Order, storyJSON{st.Key, st.Epic, st.Status, st.Line})
		}
		for _, e := range d.Epics() {
			out.Epics[e.Key] = e.Status
		}
		return c.printJSON(out)
	}
	if err := printBoard(c.stdout, d.Epics(), d.Stories(), next.Key); err != nil {
		return err
	}
	// Rows without a status are listed, never dropped in silence: they stay
	// as they are, and advance refuses them.
	for _, u := range d.Unread() {
		fmt.Fprintf(c.stderr, "%s: %s: line %d: no status (%s); it is never moved\n", c.name, u.Key, u.Line, u.Err)
	}
	return nil
}

// unreadJSON is a row without a status in board show's -json output.
type unreadJSON struct {
	Key    string `json:"key"`
	Line   int    `json:"line"`
	Detail string `json:"detail"`
}

// printBoard prints each epic followed by its stories, then the stories of
// epics without a row, then the next actionable story. It groups the
// stories by epic in one pass: the cost is linear in the size of the board
// (a walk over every story per epic was quadratic).
func printBoard(w io.Writer, epics, stories []board.Row, next string) error {
	byEpic := make(map[int][]board.Row, len(epics))
	for _, st := range stories {
		byEpic[st.Epic] = append(byEpic[st.Epic], st)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	listed := make(map[int]bool, len(epics))
	for _, e := range epics {
		fmt.Fprintf(tw, "%s\t%s\n", e.Key, e.Status)
		if listed[e.Epic] {
			continue // an epic with two rows lists its stories once
		}
		listed[e.Epic] = true
		for _, st := range byEpic[e.Epic] {
			fmt.Fprintf(tw, "  %s\t%s\n", st.Key, st.Status)
		}
	}
	// Stories whose epic has no row of its own.
	for _, st := range stories {
		if !listed[st.Epic] {
			fmt.Fprintf(tw, "%s\t%s\n", st.Key, st.Status)
		}
	}
	if next != "" {
		fmt.Fprintf(tw, "next\t%s\n", next)
	}
	return tw.Flush()
}

// statusOrder is the board's status order, for messages: "backlog, ready-for-dev, ...".
func statusOrder() string {
	var b strings.Builder
	for i, st := range []board.Status{board.Backlog, board.ReadyForDev, board.InProgress, board.Review, board.AwaitingOperator, board.Done} {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(st))
	}
	return b.String()
}

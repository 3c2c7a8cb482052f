package board_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/board"
)

const example = `# Sprint status
last_updated: 01-06-2026 10:00
development_status:
  epic-3: backlog
  3-1-login: done
  3-2-digest-delivery: backlog  # the next story
  3-3-export: drafted
`

func ExampleParse() {
	d, err := board.Parse([]byte(example))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range d.Stories() {
		fmt.Printf("%s epic %d: %s\n", s.Key, s.Epic, s.Status)
	}
	next, _ := d.NextActionable()
	fmt.Println("next:", next.Key)
	// Output:
	// 3-1-login epic 3: done
	// 3-2-digest-delivery epic 3: backlog
	// 3-3-export epic 3: ready-for-dev
	// next: 3-2-digest-delivery
}

func ExampleDoc_Advance() {
	d, _ := board.Parse([]byte(example))
	// Several moves on one Doc cost one read and one write when run inside Store.Mutate.
	st, _ := d.Advance("3-2-digest-delivery", board.InProgress, board.Stamp("02-06-2026 09:30"))
	fmt.Println(st)
	st, _ = d.Advance("3-1-login", board.Review) // never backwards
	fmt.Println(st)
	fmt.Print(string(d.Bytes()))
	// Output:
	// in-progress
	// done
	// # Sprint status
	// last_updated: 02-06-2026 09:30
	// development_status:
	//   epic-3: in-progress
	//   3-1-login: done
	//   3-2-digest-delivery: in-progress  # the next story
	//   3-3-export: drafted
}

// A row whose status is outside the order is refused unless AllowUnordered is given; a
// row whose line cannot be rewritten safely is a *filetxn.FormatError naming it.
func ExampleDoc_Advance_refused() {
	d, _ := board.Parse([]byte("development_status:\n  5-1-x: completed\n  '5-2-y': backlog\n"))
	_, err := d.Advance("5-1-x", board.Done)
	fmt.Println(errors.Is(err, board.ErrUnorderedStatus), err)
	st, err := d.Advance("5-1-x", board.Done, board.AllowUnordered())
	fmt.Println(st, err)
	_, err = d.Advance("5-2-y", board.Done)
	var fe *filetxn.FormatError
	if errors.As(err, &fe) {
		fmt.Println(fe.Line, fe.Key)
	}
	// Output:
	// true line 2: 5-1-x: "completed" -> "done": board: status outside the known order
	// done <nil>
	// 3 5-2-y
}

// A board Parse does not understand is a *filetxn.FormatError that names the line.
func ExampleParse_refused() {
	_, err := board.Parse([]byte("generated: x\nstory_location: {project-root}/a\ndevelopment_status:\n  1-1-a: done\n"))
	var fe *filetxn.FormatError
	if errors.As(err, &fe) {
		fmt.Println(fe.Line)
		fmt.Println(err)
	}
	// Output:
	// 2
	// line 2: board: not valid YAML: did not find expected key
}

// Advance stories of the sample board the README uses (examples/testdata), in
// a copy.
func ExampleStore_Advance() {
	dir, err := os.MkdirTemp("", "board-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	sample, err := os.ReadFile(filepath.Join("..", "examples", "testdata", "sprint-status.yaml"))
	if err != nil {
		fmt.Println(err)
		return
	}
	path := filepath.Join(dir, "sprint-status.yaml")
	if err := os.WriteFile(path, sample, 0o644); err != nil {
		fmt.Println(err)
		return
	}

	// Share bmad-loop's state root to serialize with it; any absolute directory works.
	s, err := board.Open(path, filetxn.WithStateRoot(filepath.Join(dir, "state")))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	st, err := s.Advance(ctx, "3-2-digest-delivery", board.Done, board.Stamp("10-06-2026 09:30"))
	fmt.Println(st, err)
	st, err = s.Advance(ctx, "3-1-digest-template", board.Review, board.Stamp("10-06-2026 09:31")) // no-op: no lock, no write
	fmt.Println(st, err)
	// Several moves in one transaction: one lock, one read, one write; fn runs once.
	c, err := s.Mutate(ctx, func(d *board.Doc) error {
		for _, key := range []string{"3-4-preferences", "3-5-bounce-handling"} {
			if _, err := d.Advance(key, board.InProgress); err != nil {
				return err
			}
		}
		return nil
	})
	fmt.Println(c.Written, err)
	d, _ := s.View(ctx)
	for _, key := range []string{"3-2-digest-delivery", "3-4-preferences", "3-5-bounce-handling"} {
		st, _ := d.Status(key)
		fmt.Println(key, st)
	}
	next, _ := d.NextActionable()
	fmt.Println("next:", next.Key)
	// Output:
	// done <nil>
	// done <nil>
	// true <nil>
	// 3-2-digest-delivery done
	// 3-4-preferences in-progress
	// 3-5-bounce-handling in-progress
	// next: 4-1-admin-dashboard
}

func ExampleNew() {
	d, err := board.New("Invoices", time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC),
		board.Row{Epic: 1, Number: 1, Slug: "upload"},
		board.Row{Epic: 1, Number: 2, Slug: "parse", Status: board.ReadyForDev},
		board.Row{Epic: 2, Number: 1, Slug: "export"},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	st, _ := d.Advance("1-1-upload", board.InProgress)
	fmt.Println(st)
	b := d.Bytes()
	fmt.Print(string(b[bytes.Index(b, []byte("\ngenerated:"))+1:]))
	// Output:
	// in-progress
	// generated: 2026-06-01
	// last_updated: 2026-06-01
	// project: Invoices
	// project_key: NOKEY
	// tracking_system: file-system
	// story_location: "{project-root}/_bmad-output/implementation-artifacts"
	//
	// development_status:
	//   epic-1: in-progress
	//   1-1-upload: in-progress
	//   1-2-parse: ready-for-dev
	//   epic-1-retrospective: optional
	//
	//   epic-2: backlog
	//   2-1-export: backlog
	//   epic-2-retrospective: optional
}

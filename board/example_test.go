package board_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/filetxn/filetxn"
	"os"
	"path/filepath"
	"time"

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
	d, err := board.Parse("sprint-status.yaml", []byte(example))
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
	d, _ := board.Parse("sprint-status.yaml", []byte(example))
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

func ExampleRowError() {
	d, _ := board.Parse("sprint-status.yaml", []byte("development_status:\n  5-1-x: completed\n"))
	_, err := d.Advance("5-1-x", board.Done)
	var re *board.RowError
	if errors.As(err, &re) {
		fmt.Println(re.Key, re.Current, re.Target, errors.Is(err, board.ErrUnorderedStatus))
		fmt.Println(err)
	}
	st, err := d.Advance("5-1-x", board.Done, board.AllowUnordered())
	fmt.Println(st, err)
	// Output:
	// 5-1-x completed done true
	// board: status outside the known order: sprint-status.yaml:2: 5-1-x "completed" -> "done": status-not-ordered (pass AllowUnordered to overwrite it)
	// done <nil>
}

func ExampleParseError() {
	_, err := board.Parse("sprint-status.yaml", []byte("generated: x\nstory_location: {project-root}/a\ndevelopment_status:\n  1-1-a: done\n"))
	var pe *board.ParseError
	if errors.As(err, &pe) {
		fmt.Println(pe.Line, errors.Is(err, board.ErrNotBoard))
	}
	// Output:
	// 2 true
}

func ExampleStore_Advance() {
	dir, err := os.MkdirTemp("", "board-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "sprint-status.yaml")
	if err := os.WriteFile(path, []byte(example), 0o644); err != nil {
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
	st, err := s.Advance(ctx, "3-2-digest-delivery", board.InProgress, board.Stamp("02-06-2026 09:30"))
	fmt.Println(st, err)
	st, err = s.Advance(ctx, "3-1-login", board.Review, board.Stamp("02-06-2026 09:31")) // no-op: no lock, no write
	fmt.Println(st, err)
	// Several moves in one transaction: one lock, one read, one write.
	c, err := s.Mutate(ctx, func(d *board.Doc) error {
		for _, key := range []string{"3-2-digest-delivery", "3-3-export"} {
			if _, err := d.Advance(key, board.Review); err != nil {
				return err
			}
		}
		return nil
	})
	fmt.Println(c.Written, err)
	b, _ := os.ReadFile(path)
	fmt.Print(string(b))
	// Output:
	// in-progress <nil>
	// done <nil>
	// true <nil>
	// # Sprint status
	// last_updated: 02-06-2026 09:30
	// development_status:
	//   epic-3: in-progress
	//   3-1-login: done
	//   3-2-digest-delivery: review  # the next story
	//   3-3-export: review
}

func ExampleNew() {
	d, err := board.New("Invoices", time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC),
		board.Story{Epic: 1, Number: 1, Slug: "upload"},
		board.Story{Epic: 1, Number: 2, Slug: "parse", Status: board.ReadyForDev},
		board.Story{Epic: 2, Number: 1, Slug: "export"},
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

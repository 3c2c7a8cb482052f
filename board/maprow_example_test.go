package board_test

import (
	"fmt"

	"github.com/filetxn/filetxn/board"
)

// A story written as a mapping reads and moves by its status key; a mapping without one
// has no status, is listed by Unread, and leaves the rest of the board working.
func ExampleDoc_Unread() {
	src := `development_status:
  epic-1:
    status: backlog
  1-1-export:
    status: "ready-for-dev"  # owner: pat
    title: Export
  1-2-import:
    title: Import
`
	d, err := board.Parse([]byte(src))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range d.Unread() {
		fmt.Println(e)
	}
	st, err := d.Advance("1-1-export", board.InProgress)
	fmt.Println(st, err)
	fmt.Print(string(d.Bytes()))
	// Output:
	// line 7: 1-2-import: the mapping has no status key
	// in-progress <nil>
	// development_status:
	//   epic-1:
	//     status: in-progress
	//   1-1-export:
	//     status: in-progress  # owner: pat
	//     title: Export
	//   1-2-import:
	//     title: Import
}

package filetxn_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/filetxn/filetxn"
)

// countCodec stores one integer as decimal text; a missing file is 0.
type countCodec struct{}

func (countCodec) Decode(data []byte) (*int, error) {
	n := 0
	if len(data) > 0 {
		var err error
		if n, err = strconv.Atoi(strings.TrimSpace(string(data))); err != nil {
			return nil, err
		}
	}
	return &n, nil
}

func (countCodec) Encode(n *int) ([]byte, error) {
	if *n == 0 {
		return nil, nil
	}
	return []byte(strconv.Itoa(*n) + "\n"), nil
}

// Every process that runs this increments the counter exactly once, however
// many run at the same time.
func ExampleStore_Mutate() {
	dir, _ := os.MkdirTemp("", "filetxn-example")
	defer os.RemoveAll(dir)
	s := filetxn.NewStore[*int](filepath.Join(dir, "count.txt"), countCodec{},
		filetxn.WithStateRoot(filepath.Join(dir, "state"))) // lock outside the data directory

	for range 3 {
		if _, err := s.Mutate(context.Background(), func(n *int) error { *n++; return nil }); err != nil {
			fmt.Println(err)
			return
		}
	}
	c, _ := s.Mutate(context.Background(), func(n *int) error { return nil })
	n, _ := s.View(context.Background())
	fmt.Println(*n, c.Written)
	// Output: 3 false
}

// Restore puts a snapshot back only over versions the caller wrote itself.
func ExampleStore_Restore() {
	dir, _ := os.MkdirTemp("", "filetxn-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	s := filetxn.NewStore[*int](filepath.Join(dir, "count.txt"), countCodec{})

	before, _ := s.ReadBytes(ctx) // nil: no file yet
	mine, _ := s.Mutate(ctx, func(n *int) error { *n = 1; return nil })
	s.Mutate(ctx, func(n *int) error { *n = 2; return nil }) // a rival's write

	_, err := s.Restore(ctx, before, mine.Digest)
	fmt.Println(err != nil)
	// Output: true
}

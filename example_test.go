package filetxn_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/atomicfile"
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
	s, err := filetxn.NewStore(filepath.Join(dir, "count.txt"), countCodec{},
		filetxn.WithStateRoot(filepath.Join(dir, "state"))) // lock outside the data directory
	if err != nil {
		fmt.Println(err)
		return
	}

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

// A store refuses a document type that fn would get a copy of: the changes
// would be lost, and Mutate would succeed without writing.
func ExampleNewStore() {
	type Counter struct{ N int }
	_, err := filetxn.NewStore("count.json", filetxn.Codec[Counter](nil))
	fmt.Println(errors.Is(err, filetxn.ErrInvalidArgument))
	s, err := filetxn.NewStore("count.json", filetxn.JSON[Counter]()) // a *Store[*Counter]
	fmt.Println(s.LockPath())
	// Output:
	// true
	// count.json.lock <nil>
}

// Restore puts a snapshot back only over versions the caller wrote itself.
func ExampleStore_Restore() {
	dir, _ := os.MkdirTemp("", "filetxn-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	s, _ := filetxn.NewStore(filepath.Join(dir, "count.txt"), countCodec{})

	var before []byte // nil: no file yet
	mine, _ := s.Mutate(ctx, func(n *int) error { *n = 1; return nil })
	owned, _ := mine.Digest()                                // the bytes this call published
	s.Mutate(ctx, func(n *int) error { *n = 2; return nil }) // a rival's write

	_, err := s.Restore(ctx, before, owned)
	fmt.Println(errors.Is(err, filetxn.ErrDiverged))
	// Output: true
}

// A probed transaction that would change nothing succeeds even where the lock
// cannot be taken: here the lock file's directory cannot even be created, so
// a lock-free read decides, and the no-op still succeeds.
func ExampleStore_MutateProbed() {
	dir, _ := os.MkdirTemp("", "filetxn-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	path := filepath.Join(dir, "count.txt")
	os.WriteFile(path, []byte("5\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "not-a-dir"), nil, 0o644)
	s, _ := filetxn.NewStore(path, countCodec{},
		filetxn.WithLockPath(filepath.Join(dir, "not-a-dir", "count.lock")))

	atLeast := func(min int) func(*int) error {
		return func(n *int) error { *n = max(*n, min); return nil }
	}
	c, err := s.MutateProbed(ctx, atLeast(3)) // already 5: no write, and no lock needed
	fmt.Println(c.Written, err)
	_, err = s.MutateProbed(ctx, atLeast(7)) // must write: needs the lock
	fmt.Println(err != nil)
	// Output:
	// false <nil>
	// true
}

// Locked holds the store's lock across several files: here a job marks itself
// running (atomicfile.WithoutDirSync: a power loss may undo the marker, a
// crash of the process cannot), appends to a log, and then writes its result
// durably.
func ExampleStore_Locked() {
	dir, _ := os.MkdirTemp("", "filetxn-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	result := filepath.Join(dir, "result.txt")
	marker := filepath.Join(dir, "running")
	log := filepath.Join(dir, "jobs.log")
	s, _ := filetxn.NewStore(result, countCodec{})

	for job := 1; job <= 2; job++ {
		err := s.Locked(ctx, func(tx *filetxn.Tx) error {
			data, err := tx.Read(result)
			if err != nil {
				return err
			}
			if _, err := tx.Write(marker, []byte(strconv.Itoa(job)), atomicfile.WithoutDirSync()); err != nil {
				return err
			}
			if err := tx.Append(log, fmt.Appendf(nil, "job %d read %q\n", job, data)); err != nil {
				return err
			}
			_, err = tx.Write(result, []byte(strconv.Itoa(job)+"\n"))
			return err
		})
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	b, _ := os.ReadFile(log)
	fmt.Print(string(b))
	// Output:
	// job 1 read ""
	// job 2 read "1\n"
}

package filetxntest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/filetxn/filetxn"
	"github.com/filetxn/filetxn/filetxntest"
)

// todoCodec is a user's codec: a to-do list, one item per line, each line
// ending in a newline. A missing file is an empty list.
type todoCodec struct{}

// A TodoError refuses a file that is not a to-do list.
type TodoError struct{ Line int }

func (e *TodoError) Error() string {
	return fmt.Sprintf("todo: line %d is empty or unterminated", e.Line)
}

func (todoCodec) Decode(data []byte) (*[]string, error) {
	items := []string{}
	for i, rest := 1, string(data); rest != ""; i++ {
		item, after, ok := strings.Cut(rest, "\n")
		if item == "" || !ok {
			return nil, &TodoError{Line: i}
		}
		items, rest = append(items, item), after // strings: copies of data
	}
	return &items, nil
}

func (todoCodec) Encode(items *[]string) ([]byte, error) {
	var b strings.Builder
	for _, item := range *items {
		b.WriteString(item + "\n")
	}
	return []byte(b.String()), nil
}

// printTB stands in for the *testing.T of a test, which an example does not
// have: it prints what CheckCodec reports.
type printTB struct{ testing.TB }

func (printTB) Helper()                           {}
func (printTB) Errorf(format string, args ...any) { fmt.Printf("FAIL: "+format+"\n", args...) }

// A user's codec, checked against the contract of filetxn.Codec and then
// used by a store. In a test, pass its t instead of printTB{}.
func ExampleCheckCodec() {
	filetxntest.CheckCodec(printTB{}, todoCodec{}, filetxntest.CodecCases[*[]string]{
		Valid:     [][]byte{[]byte("buy milk\n"), []byte("a\nb\nc\n")},
		Invalid:   [][]byte{[]byte("no newline"), []byte("a\n\nb\n")},
		IsRefusal: func(err error) bool { return errors.As(err, new(*TodoError)) },
		Edit:      func(items *[]string) { *items = append(*items, "call Bob") },
	})
	fmt.Println("checked")

	dir, _ := os.MkdirTemp("", "filetxntest-example")
	defer os.RemoveAll(dir)
	s, err := filetxn.NewStore(filepath.Join(dir, "todo.txt"), todoCodec{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	add := func(item string) func(*[]string) error {
		return func(items *[]string) error { *items = append(*items, item); return nil }
	}
	s.Mutate(ctx, add("buy milk"))
	s.Mutate(ctx, add("call Bob"))
	items, err := s.View(ctx)
	fmt.Println(*items, err)
	// Output:
	// checked
	// [buy milk call Bob] <nil>
}

// reusingCodec breaks the contract: its document is the file's text, and
// its Encode writes into one buffer that it keeps for the next Encode, so
// the bytes it returned before change under the engine, which writes them
// and keeps them.
type reusingCodec struct{ buf *[]byte }

func (reusingCodec) Decode(data []byte) (*string, error) { s := string(data); return &s, nil }

func (c reusingCodec) Encode(s *string) ([]byte, error) {
	*c.buf = append((*c.buf)[:0], *s...)
	return *c.buf, nil
}

// A codec that breaks the contract is named and shamed.
func ExampleCheckCodec_brokenCodec() {
	filetxntest.CheckCodec(printTB{}, reusingCodec{new([]byte)}, filetxntest.CodecCases[*string]{
		Valid: [][]byte{[]byte("7\n")},
		Edit:  func(s *string) { *s = "8\n" },
	})
	// Output:
	// FAIL: Encode(Decode(Valid[0])) returned "7\n", which later calls changed to "8\n": the bytes Encode returns are the engine's (it writes them and keeps them)
}

package atomicfile_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/filetxn/filetxn/atomicfile"
)

func ExampleWriteFile() {
	dir, err := os.MkdirTemp("", "atomicfile-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "state.txt")

	// Each call leaves either the old file or the new one, never a mix.
	for _, v := range []string{"version 1\n", "version 2\n"} {
		if err := atomicfile.WriteFile(path, []byte(v), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(b))
	// Output: version 2
}

func ExampleCreate() {
	dir, err := os.MkdirTemp("", "atomicfile-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "list.txt")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		log.Fatal(err)
	}

	pf, err := atomicfile.Create(path, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	defer pf.Cleanup() // removes the temporary file unless it was published
	for i := range 3 {
		fmt.Fprintf(pf, "line %d\n", i)
	}

	// Until the replace, readers still see the old file.
	b, _ := os.ReadFile(path)
	fmt.Printf("before: %q\n", b)

	if err := pf.CloseAtomicallyReplace(); err != nil {
		log.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	fmt.Printf("after: %q\n", b)
	// Output:
	// before: "old\n"
	// after: "line 0\nline 1\nline 2\n"
}

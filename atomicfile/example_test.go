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

func ExampleAppendFile() {
	dir, err := os.MkdirTemp("", "atomicfile-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ticks.log")

	// Each record goes to the end of the log in one write.
	for i := range 3 {
		if err := atomicfile.AppendFile(path, fmt.Appendf(nil, "tick %d\n", i), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(b))
	// Output:
	// tick 0
	// tick 1
	// tick 2
}

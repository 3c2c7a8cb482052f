package filetxn

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeExampleIsCompiled: the README's Go block is a verbatim part of
// example_test.go, so the code a user copies is code the tests compile and
// run.
func TestReadmeExampleIsCompiled(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```go\n")
	if !ok {
		t.Fatal("README.md has no Go block")
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("README.md's Go block is not closed")
	}
	if !strings.Contains(string(example), block) {
		t.Errorf("README.md's Go block is not part of example_test.go:\n%s", block)
	}
}

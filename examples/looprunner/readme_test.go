package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeSnippetsAreCopiedFromExamples: every Go block of the README is
// a verbatim part of an example file the tests compile and run (the root's
// first block is also checked by the root package's TestReadmeExampleIsCompiled).
func TestReadmeSnippetsAreCopiedFromExamples(t *testing.T) {
	readme := readFile(t, "../../README.md")
	examples, err := filepath.Glob("../../*/example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	examples = append(examples, "../../example_test.go")
	var sources []string
	for _, f := range examples {
		sources = append(sources, readFile(t, f))
	}
	blocks := 0
	for rest := readme; ; {
		var ok bool
		if _, rest, ok = strings.Cut(rest, "```go\n"); !ok {
			break
		}
		block, after, ok := strings.Cut(rest, "```")
		if !ok {
			t.Fatal("README.md has an unclosed Go block")
		}
		rest = after
		blocks++
		found := false
		for _, src := range sources {
			found = found || strings.Contains(src, block)
		}
		if !found {
			t.Errorf("README.md's Go block %d is not part of any example_test.go:\n%s", blocks, block)
		}
	}
	if blocks < 3 {
		t.Errorf("README.md has %d Go blocks, want the engine's, the ledger's and the board's", blocks)
	}
}

// TestReadmeListsEveryCommand: the README's table of commands names every
// command the binary has.
func TestReadmeListsEveryCommand(t *testing.T) {
	readme := readFile(t, "../../README.md")
	for area, cmds := range commands {
		for name := range cmds {
			if !strings.Contains(readme, "`"+area+" "+name) && !strings.Contains(readme, name+"\\|") && !strings.Contains(readme, "\\|"+name) {
				t.Errorf("README.md does not list %s %s", area, name)
			}
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

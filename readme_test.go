package filetxn

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeExampleIsCompiled: the README's first Go block is a verbatim
// part of the first program (examples/first/main.go), and its next three
// (the multi-file commit, the job queue and the counter) of this package's
// example files, so the code a user copies is code the tests compile and
// run.
func TestReadmeExampleIsCompiled(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	first, err := os.ReadFile("examples/first/main.go")
	require.NoError(t, err)
	var examples strings.Builder
	for _, name := range []string{"example_multi_test.go", "example_json_test.go", "example_test.go"} {
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		examples.Write(b)
	}
	rest := string(readme)
	for i := range 4 {
		var ok bool
		_, rest, ok = strings.Cut(rest, "```go\n")
		require.True(t, ok, "README.md has no Go block %d", i+1)
		var block string
		block, rest, ok = strings.Cut(rest, "```")
		require.True(t, ok, "README.md's Go block %d is not closed", i+1)
		if i == 0 {
			require.Contains(t, string(first), block, "README.md's first Go block is not part of examples/first/main.go")
			continue
		}
		require.Contains(t, examples.String(), block, "README.md's Go block %d is not part of example_multi_test.go, example_json_test.go or example_test.go", i+1)
	}
}

package filetxn

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeExampleIsCompiled: the README's Go block is a verbatim part of
// example_test.go, so the code a user copies is code the tests compile and
// run.
func TestReadmeExampleIsCompiled(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	example, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(readme), "```go\n")
	require.True(t, ok, "README.md has no Go block")
	block, _, ok := strings.Cut(rest, "```")
	require.True(t, ok, "README.md's Go block is not closed")
	require.Contains(t, string(example), block, "README.md's Go block is not part of example_test.go")
}

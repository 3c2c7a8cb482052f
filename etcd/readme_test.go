package etcd_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/filetxn/filetxn/etcd/internal/demo"
)

// TestReadmeSectionIsCompiled: the Go block of the README's section on
// etcd is a verbatim part of example_test.go, so the code a user copies is
// code the tests compile; and the demo command it gives is one this module
// has.
func TestReadmeSectionIsCompiled(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	example, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	_, sec, ok := strings.Cut(string(readme), "\n## When one host is not enough\n")
	require.True(t, ok, "README.md has no section on etcd")
	sec, _, _ = strings.Cut(sec, "\n## ")
	_, rest, ok := strings.Cut(sec, "```go\n")
	require.True(t, ok, "the README's etcd section has no Go block")
	block, _, ok := strings.Cut(rest, "```")
	require.True(t, ok, "the README's etcd Go block is not closed")
	require.Contains(t, string(example), block, "the README's etcd Go block is not part of example_test.go")
	require.Contains(t, sec, "cd etcd && go run ./cmd/looprunner "+demo.Name+" ")
	_, err = os.Stat("cmd/looprunner")
	require.NoError(t, err)
}

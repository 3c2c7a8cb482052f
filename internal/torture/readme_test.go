package torture

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeTableNamesWhatTheRunCounts: the README's table of the
// single-file run names the archive figure as the run counts it today,
// the kills between the two renames of an archive's one commit.
// Ablation: the README's column as it was ("between an archive's two
// writes", from when an archive was two transactions) turns it red.
func TestReadmeTableNamesWhatTheRunCounts(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	head := "| run | kills | with the lock held | temp staged | " + archiveColumn + " |"
	require.True(t, strings.Contains(string(readme), head), "README.md has no torture table whose header starts %q", head)
}

// Package corpus finds the shared corpus of real files from public projects
// (ledgers, boards) that the parsers' tests must round-trip. The corpus is
// not copied into this repository: it is looked up beside the checkout
// (../../shared/corpus from a package directory), or wherever FILETXN_CORPUS
// points.
package corpus

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the corpus folder of the given kind ("boards", "ledgers"), or
// skips the test when it is not there.
func Dir(t testing.TB, kind string) string {
	t.Helper()
	dir := os.Getenv("FILETXN_CORPUS")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "corpus")
	}
	dir = filepath.Join(dir, kind)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no %s corpus at %s (set FILETXN_CORPUS): %v", kind, dir, err)
	}
	return dir
}

package testkit

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

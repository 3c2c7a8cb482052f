package filetxntest_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsOnlyTheStandardLibraryAndTheReexecHelper: the package doc says
// filetxntest imports no assertion library and nothing of filetxn's API,
// only its internal re-execution helper, so that any test package can use
// it, filetxn's own included. Every non-test file of the package, and of
// that helper (internal/testkit), imports only the standard library,
// golang.org/x/sys, which the module requires anyway, and (the package) the
// helper.
func TestImportsOnlyTheStandardLibraryAndTheReexecHelper(t *testing.T) {
	const helper = "github.com/filetxn/filetxn/internal/testkit"
	fset := token.NewFileSet()
	for _, dir := range []struct {
		path  string
		extra string // the one import outside the standard library allowed
	}{{".", helper}, {filepath.Join("..", "internal", "testkit"), ""}} {
		files, err := filepath.Glob(filepath.Join(dir.path, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Fatalf("filepath.Glob(%s/*.go) = no files, want the package's", dir.path)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				std := !strings.Contains(strings.SplitN(p, "/", 2)[0], ".")
				if !std && p != dir.extra && !strings.HasPrefix(p, "golang.org/x/sys/") {
					t.Errorf("%s imports %s, want only the standard library, golang.org/x/sys and %s", fset.Position(imp.Pos()), p, helper)
				}
			}
		}
	}
}

package loopstate

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPackageStartsNoProcess: loopstate keeps the state and its
// transitions; starting, signalling and grouping processes is package
// harness's. No non-test file of the package imports a package that
// starts or signals processes, nor calls os.StartProcess or
// os.FindProcess. (Whether a runner is alive is internal/proc's read.)
// Ablation (run): an import of os/exec in tick.go makes it red.
func TestPackageStartsNoProcess(t *testing.T) {
	forbidden := map[string]bool{
		"os/exec": true, "os/signal": true, "syscall": true,
		"golang.org/x/sys/unix": true, "golang.org/x/sys/windows": true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); forbidden[p] {
				t.Errorf("%s imports %s, want process handling only in package harness", fset.Position(imp.Pos()), p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "os" && (sel.Sel.Name == "StartProcess" || sel.Sel.Name == "FindProcess") {
				t.Errorf("%s calls os.%s, want process handling only in package harness", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}

package ops_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLayerRule holds the rule of the package doc: no package under
// internal/ops imports cmd/ or internal/render, or prints to the process's
// stdout or stderr.
func TestLayerRule(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == "github.com/idmpctl/idmpctl/cmd" || p == "github.com/idmpctl/idmpctl/internal/render" {
				t.Errorf("%s imports %s", path, p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok {
				name := x.Name + "." + sel.Sel.Name
				switch name {
				case "fmt.Print", "fmt.Printf", "fmt.Println", "os.Stdout", "os.Stderr":
					t.Errorf("%s: %s (ops returns results; cmd/ prints)", path, name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Errorf("only %d files checked", checked)
	}
}

package records

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

// TestFormatsListsEveryFormat keeps Formats() in step with the Format
// constants declared in records.go (-o prometheus writes a zero for each).
func TestFormatsListsEveryFormat(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "records.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []Format
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); ok && id.Name == "Format" {
				for _, val := range v.Values {
					lit := val.(*ast.BasicLit)
					declared = append(declared, Format(lit.Value[1:len(lit.Value)-1]))
				}
			}
		}
	}
	if len(declared) < 10 || !slices.Equal(declared, Formats()) {
		t.Errorf("Formats() = %q, want the declared %q", Formats(), declared)
	}
}

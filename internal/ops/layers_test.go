package ops_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	module  = "github.com/idmpctl/idmpctl"
	goRedis = "github.com/redis/go-redis/v9"
)

// pure are the packages of internal/ that neither talk to Redis nor draw:
// both cmd/ and internal/ops use them (the package doc's third layer).
// render is output, used by cmd/ only, but pure in the same sense: no
// Redis, no ops.
var pure = []string{
	"internal/backup", "internal/batch", "internal/bytesize", "internal/capacity",
	"internal/duration", "internal/exit", "internal/idmp", "internal/iostreams", "internal/progress",
	"internal/records", "internal/render", "internal/resp",
}

// views draw what ops returned: they may use ops' result types, never
// talk to Redis, and ops never uses them.
var views = []string{"internal/view"}

// beside are the packages of internal/ that are neither: test harnesses
// (real servers, the CLI run as a process) and tools built apart.
var beside = []string{"internal/clitest", "internal/redistest", "internal/tools/genman"}

// goFile is one non-test Go file of the module: its directory relative to
// the module root, and its parsed imports and body.
type goFile struct {
	path, dir string
	f         *ast.File
	fset      *token.FileSet
}

// moduleFiles parses every non-test Go file under the module root.
func moduleFiles(t *testing.T) []goFile {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found from internal/ops: %v", err)
	}
	var files []goFile
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files = append(files, goFile{path: filepath.ToSlash(rel), dir: filepath.ToSlash(filepath.Dir(rel)), f: f, fset: fset})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func imports(f *ast.File) []string {
	var out []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		out = append(out, p)
	}
	return out
}

func inOps(dir string) bool { return dir == "internal/ops" || strings.HasPrefix(dir, "internal/ops/") }

// TestLayerRule holds the rules of the package doc:
//
//   - no package under internal/ops imports cmd/, internal/render,
//     internal/view or internal/iostreams, or prints to the process's
//     stdout or stderr;
//   - cmd/ imports no go-redis, nor reaches a connection's go-redis client
//     (Client()): it sends nothing to Redis itself, it calls an ops
//     package;
//   - the pure packages import no ops package and no go-redis;
//   - the views import no go-redis and no cmd/;
//   - every package of internal/ is one of ops, pure, views, or beside
//     (test harnesses, tools), so that a new one is placed on purpose.
func TestLayerRule(t *testing.T) {
	files := moduleFiles(t)
	dirs := map[string]bool{}
	opsFiles := 0
	for _, gf := range files {
		dirs[gf.dir] = true
		imps := imports(gf.f)
		switch {
		case inOps(gf.dir):
			opsFiles++
			for _, p := range imps {
				if p == module+"/cmd" || p == module+"/internal/render" || p == module+"/internal/view" || p == module+"/internal/iostreams" {
					t.Errorf("%s imports %s (ops returns results; cmd/ draws them)", gf.path, p)
				}
			}
			ast.Inspect(gf.f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok {
					switch name := x.Name + "." + sel.Sel.Name; name {
					case "fmt.Print", "fmt.Printf", "fmt.Println", "os.Stdout", "os.Stderr":
						t.Errorf("%s: %s (ops returns results; cmd/ prints)", gf.path, name)
					}
				}
				return true
			})
		case gf.dir == "cmd":
			if slices.Contains(imps, goRedis) {
				t.Errorf("%s imports go-redis: cmd/ calls an ops package, it sends nothing to Redis itself", gf.path)
			}
			// Nor through a connection's go-redis client, which needs no
			// import: conn.Client().Exists(...).
			ast.Inspect(gf.f, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Client" && len(call.Args) == 0 {
						t.Errorf("%s: a go-redis client in cmd/ (call an ops package)", gf.fset.Position(call.Pos()))
					}
				}
				return true
			})
		case slices.Contains(views, gf.dir):
			for _, p := range imps {
				if p == goRedis || p == module+"/cmd" {
					t.Errorf("%s imports %s: a view draws results, it talks to no server and knows no command", gf.path, p)
				}
			}
		case slices.Contains(pure, gf.dir):
			for _, p := range imps {
				if p == goRedis || p == module+"/internal/ops" || strings.HasPrefix(p, module+"/internal/ops/") {
					t.Errorf("%s imports %s: %s is pure (no Redis, no ops)", gf.path, p, gf.dir)
				}
			}
		}
	}
	if opsFiles < 20 {
		t.Errorf("only %d ops files checked", opsFiles)
	}
	for dir := range dirs {
		if strings.HasPrefix(dir, "internal/") && !inOps(dir) && !slices.Contains(pure, dir) && !slices.Contains(views, dir) && !slices.Contains(beside, dir) {
			t.Errorf("%s is neither ops, pure, a view, nor a test harness or tool: place it in the layers (internal/ops/doc.go) and in this test", dir)
		}
	}
	for _, dir := range slices.Concat(pure, views, beside, []string{"cmd"}) {
		if !dirs[dir] {
			t.Errorf("%s, named by this test, has no Go files: is the list stale?", dir)
		}
	}
}

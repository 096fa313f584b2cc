// Package archtest holds tests of the module's shape that DESIGN-level
// rules depend on (docs/testing.md): asynq reached through one package,
// and no exported package variable a caller could reassign.
package archtest

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

// root is the module root, two levels above this package.
const root = "../.."

// sources calls fn for every non-test Go file of the module, parsed with
// its imports and declarations, skipping caches and test data.
func sources(t *testing.T, fn func(rel string, f *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "results") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fn(filepath.ToSlash(rel), f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAsynqBehindOneSeam: only internal/queue imports asynq, besides the
// benchmark harness's raw-asynq floor (internal/bench). An asynq upgrade
// means reading one package.
func TestAsynqBehindOneSeam(t *testing.T) {
	allowed := map[string]bool{"internal/queue": true, "internal/bench": true}
	seen := 0
	sources(t, func(rel string, f *ast.File) {
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, "github.com/hibiken/asynq") {
				continue
			}
			seen++
			if !allowed[filepath.ToSlash(filepath.Dir(rel))] {
				t.Errorf("%s imports %s; asynq belongs in internal/queue", rel, p)
			}
		}
	})
	if seen == 0 {
		t.Fatal("no file imports asynq: the walk found no sources")
	}
}

// TestNoExportedVariables: no package of the module exports a variable
// (a caller could reassign it under everyone else), except sentinel
// errors, which errors.Is compares and nobody writes.
func TestNoExportedVariables(t *testing.T) {
	files := 0
	sources(t, func(rel string, f *ast.File) {
		files++
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !name.IsExported() || isErrorValue(vs, i) {
						continue
					}
					t.Errorf("%s: exported variable %s; make it a function or a constant", rel, name.Name)
				}
			}
		}
	})
	if files < 50 {
		t.Fatalf("walked %d files; expected the whole module", files)
	}
}

// isErrorValue reports whether the i-th value of vs is a sentinel error:
// errors.New(...) or fmt.Errorf(...), or a name typed error.
func isErrorValue(vs *ast.ValueSpec, i int) bool {
	if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "error" {
		return true
	}
	if i >= len(vs.Values) {
		return false
	}
	call, ok := vs.Values[i].(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && (pkg.Name == "errors" && sel.Sel.Name == "New" || pkg.Name == "fmt" && sel.Sel.Name == "Errorf")
}

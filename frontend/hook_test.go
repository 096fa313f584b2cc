package frontend_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOneEraHook: the 2025-11-25 era plugs into the front end through one
// hook. era.go is the only non-test file of the package that imports the
// era's package (frontend/internal/legacy), so dropping the era means
// deleting that folder and the hook (frontend/internal/legacy/doc.go).
func TestOneEraHook(t *testing.T) {
	const era = "github.com/mcpq/mcpq/frontend/internal/legacy"
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	hooked := false
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == era {
				if name != "era.go" {
					t.Errorf("%s imports the era's package: only the hook, era.go, may", name)
				}
				hooked = true
			}
		}
	}
	if !hooked {
		t.Error("era.go does not import the era's package: where is the hook?")
	}
}

package command

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadFiles: tools of several files in file order; a name in two files
// is an error naming both.
func TestLoadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.yaml", "tools:\n  - name: one\n    command: [cat]\n  - name: two\n    command: [cat]\n")
	b := write("b.yaml", "tools:\n  - name: three\n    command: [cat]\n")
	dup := write("dup.yaml", "tools:\n  - name: two\n    command: [cat]\n")
	tools, err := LoadFiles([]string{a, b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "one,two,three" {
		t.Errorf("tools = %s, want one,two,three", got)
	}
	_, err = LoadFiles([]string{a, dup}, nil)
	if err == nil || !strings.Contains(err.Error(), `dup.yaml: tool "two" is declared in `+a+" too") {
		t.Errorf("duplicate across files: err = %v", err)
	}
}

package client_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/client"
)

func TestFileTokenStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cfg", "mcpq", "tokens.json")
	s := &client.FileTokenStore{Path: path}
	if tok, err := s.Load("https://a.example/mcp"); tok != nil || err != nil {
		t.Fatalf("empty store: %v %v", tok, err)
	}
	a := &client.Token{AccessToken: "at-a", RefreshToken: "rt-a", Expiry: time.Unix(2000000000, 0).UTC(), ClientID: "c"}
	b := &client.Token{AccessToken: "at-b"}
	if err := s.Save("https://a.example/mcp", a); err != nil {
		t.Fatal(err)
	}
	if err := s.Save("https://b.example/mcp", b); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]os.FileMode{true: 0o700, false: 0o600}[fi.IsDir()]; fi.Mode().Perm() != want {
			t.Fatalf("%s mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	got, err := (&client.FileTokenStore{Path: path}).Load("https://a.example/mcp")
	if err != nil || *got != *a {
		t.Fatalf("another store reads %+v %v, want %+v", got, err, a)
	}
	if err := s.Save("https://b.example/mcp", nil); err != nil {
		t.Fatal(err)
	}
	if tok, _ := s.Load("https://b.example/mcp"); tok != nil {
		t.Fatalf("removed token still there: %+v", tok)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".tmp-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	// A file others may read holds credentials: refused, not used.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("https://a.example/mcp"); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("world-readable file: %v", err)
	}
}

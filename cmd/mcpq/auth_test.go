package main

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/frontend"
)

func TestOAuthFlags(t *testing.T) {
	t.Setenv("MCPQ_OAUTH_ISSUERS", "https://env.example/a, https://env.example/b")
	parse := func(args ...string) *authFlags {
		var a authFlags
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		a.register(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return &a
	}
	if a := parse(); !slices.Equal(a.oauth.issuers.items, []string{"https://env.example/a", "https://env.example/b"}) {
		t.Fatalf("env issuers: %v", a.oauth.issuers.items)
	}
	a := parse("--oauth-issuer", "https://one.example", "--oauth-issuer", "https://two.example")
	if !slices.Equal(a.oauth.issuers.items, []string{"https://one.example", "https://two.example"}) {
		t.Fatalf("flag issuers replace the env's and repeat: %v", a.oauth.issuers.items)
	}
	keys := frontend.NewKeyAuth(nil, nil, false)
	if _, err := a.withOAuth(keys, nil); err == nil || !strings.Contains(err.Error(), "--resource-url") {
		t.Fatalf("issuer without resource: %v", err)
	}
	a = parse("--oauth-issuer", "https://one.example", "--resource-url", "https://mcp.example/mcp")
	auth, err := a.withOAuth(keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := auth.(*frontend.OAuth); !ok {
		t.Fatalf("authenticator %T, want *frontend.OAuth", auth)
	}
	t.Setenv("MCPQ_OAUTH_ISSUERS", "")
	if auth, err := parse().withOAuth(keys, nil); err != nil || auth != frontend.Authenticator(keys) {
		t.Fatalf("without issuers keys serve alone: %T %v", auth, err)
	}
	if _, err := parse("--resource-url", "https://mcp.example/mcp").withOAuth(keys, nil); err == nil {
		t.Fatal("a resource URL without an issuer is accepted")
	}
}

package client_test

import (
	"maps"
	"testing"

	"github.com/mcpq/mcpq/client"
)

func TestParseChallenge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		want   map[string]string
	}{
		{"mcpq's 401", []string{`Bearer realm="mcpq", resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp", scope="mcp:tools mcp:admin", error="invalid_token", error_description="the token has expired"`},
			map[string]string{"realm": "mcpq", "resource_metadata": "https://mcp.example/.well-known/oauth-protected-resource/mcp",
				"scope": "mcp:tools mcp:admin", "error": "invalid_token", "error_description": "the token has expired"}},
		{"tokens and escapes", []string{`Basic realm="x"`, `bearer error=insufficient_scope, scope="a \"b\"",Resource_Metadata=https://r.example/m`},
			map[string]string{"error": "insufficient_scope", "scope": `a "b"`, "resource_metadata": "https://r.example/m"}},
		{"two challenges in one value", []string{`Basic realm="x", Bearer scope="s"`}, map[string]string{"scope": "s"}},
		{"no bearer", []string{`Basic realm="bearer"`, `Bearerish x=y`}, map[string]string{}},
		{"bare", []string{"Bearer"}, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := client.ParseChallenge(401, tc.values).Params; !maps.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

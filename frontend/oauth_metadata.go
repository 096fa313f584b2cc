package frontend

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// protectedResourceMetadata is this server's RFC 9728 metadata document.
type protectedResourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// metadataPaths are the paths the metadata is served on: the well-known
// URI suffixed with the resource's path (RFC 9728 section 3.1, what a
// client derives from the MCP endpoint's URL) and the bare one.
func (o *OAuth) metadataPaths() []string {
	u, _ := url.Parse(metadataURL(o.cfg.Resource))
	paths := []string{u.Path}
	if u.Path != "/.well-known/oauth-protected-resource" {
		paths = append(paths, "/.well-known/oauth-protected-resource")
	}
	return paths
}

// serveMetadata serves the protected resource metadata. It is public (no
// credentials, any origin may read it: browser hosts fetch it cross-origin).
func (o *OAuth) serveMetadata(w http.ResponseWriter, r *http.Request) {
	doc := protectedResourceMetadata{
		Resource:               o.cfg.Resource,
		AuthorizationServers:   o.cfg.Issuers,
		ScopesSupported:        o.cfg.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "mcpq",
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	if r.Method == http.MethodOptions {
		w.Header().Set("Access-Control-Allow-Methods", "GET")
		w.Header().Set("Access-Control-Allow-Headers", "mcp-protocol-version")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	_ = json.NewEncoder(w).Encode(doc)
}

// Challenge implements Challenger: where the metadata is, the scopes to
// ask for, and, for a token that was refused, why (RFC 6750 section 3).
func (o *OAuth) Challenge(r *http.Request, err error) string {
	var b strings.Builder
	b.WriteString(`Bearer realm="mcpq", resource_metadata="` + metadataURL(o.cfg.Resource) + `"`)
	if len(o.cfg.Scopes) > 0 {
		b.WriteString(`, scope="` + strings.Join(o.cfg.Scopes, " ") + `"`)
	}
	if _, ok := bearerToken(r); ok && !errors.Is(err, ErrNoCredentials) {
		b.WriteString(`, error="invalid_token", error_description="` + quotable(err.Error()) + `"`)
	}
	return b.String()
}

// ScopeChallenge implements Challenger: the 403 of a call without every
// scope its tool requires (RFC 6750 section 3.1, insufficient_scope).
func (o *OAuth) ScopeChallenge(required []string) string {
	return `Bearer realm="mcpq", error="insufficient_scope", scope="` + quotable(strings.Join(required, " ")) +
		`", resource_metadata="` + metadataURL(o.cfg.Resource) + `", error_description="the token lacks a scope this tool requires"`
}

// quotable makes s safe inside a quoted-string of a challenge.
func quotable(s string) string {
	return strings.Map(func(c rune) rune {
		if c == '"' || c == '\\' || c < 0x20 || c > 0x7e {
			return '\''
		}
		return c
	}, s)
}

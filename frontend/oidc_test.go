package frontend_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/access"
	"github.com/mcpq/mcpq/internal/oidctest"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

// The tests below run against a real authorization server process:
// oidc-provider (internal/oidctest), not one written in the test.

const otherResource = "https://elsewhere.example.test/mcp"

// oidcEnv is a front end trusting provider p for testResource, mapping
// principals as the access store says (mcpq principals map).
func oidcEnv(t *testing.T, b *redistest.Backend, p *oidctest.Provider) *env {
	t.Helper()
	store := access.New(b.Client, b.Prefix, nil)
	o, err := frontend.NewOAuth(frontend.OAuthConfig{Issuers: []string{p.Issuer}, Resource: testResource,
		Scopes: []string{"mcp:tools"}, Leeway: time.Millisecond, KeysMaxAge: 50 * time.Millisecond,
		Keys: frontend.NewKeyAuth(staticKeys(), store, false), Mapper: store})
	if err != nil {
		t.Fatal(err)
	}
	return newEnv(t, b, func(c *frontend.Config) { c.Auth = o })
}

func startProviders(t *testing.T) (trusted, other *oidctest.Provider) {
	t.Helper()
	cfg := oidctest.Config{Resources: []string{testResource, otherResource},
		Clients:         []oidctest.Client{oidctest.ServiceClient("svc", "svc-secret"), oidctest.ServiceClient("brief", "brief-secret")},
		ShortTTLClients: []string{"brief"}}
	return oidctest.Start(t, cfg), oidctest.Start(t, cfg)
}

// mustRefuse checks a 401 with the challenge of a refused token.
func mustRefuse(t *testing.T, e *env, tok string) {
	t.Helper()
	rep := e.send(tok, rpc(1, proto.MethodToolsList, metaPlain, nil), nil)
	if rep.Status != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401: %s", rep.Status, rep.Body)
	}
	want := `Bearer realm="mcpq", resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp", scope="mcp:tools", error="invalid_token", error_description="`
	if ch := rep.Header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, want) {
		t.Fatalf("WWW-Authenticate %q, want prefix %q", ch, want)
	}
}

func TestOIDCProviderTokens(t *testing.T) {
	p, other := startProviders(t)
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := oidcEnv(t, b, p)
		tok := p.ClientCredentials(t, "svc", "svc-secret", testResource, "mcp:tools")

		// tools/call and tasks/* work, and the task is the token's principal's.
		mustMatch(t, e.send(tok, rpc(1, proto.MethodToolsCall, metaPlain, map[string]any{"name": toolGreet, "arguments": map[string]any{"name": "x"}}), nil), 200,
			`{"result":{"content":[{"type":"text","text":"Hello, x!"}]}}`)
		id := e.createAs(tok, toolTaskJob)
		if _, err := e.store.Get(t.Context(), owned(p.Issuer+"#svc", id)); err != nil {
			t.Fatalf("task %s is not %s#svc's: %v", id, p.Issuer, err)
		}
		mustMatch(t, e.send(tok, rpc(2, proto.MethodTasksGet, metaTasks, map[string]any{"taskId": id}), nil), 200,
			`{"result":{"taskId":"`+id+`","status":"working"}}`)
		mustMatch(t, e.send(tok, rpc(3, proto.MethodTasksCncl, metaTasks, map[string]any{"taskId": id}), nil), 200,
			`{"result":{"resultType":"complete"}}`)
		// Another client of the same provider is another principal.
		svc2 := p.ClientCredentials(t, "brief", "brief-secret", testResource, "mcp:tools")
		mustMatch(t, e.send(svc2, rpc(4, proto.MethodTasksGet, metaTasks, map[string]any{"taskId": id}), nil), 200,
			`{"error":{"code":-32602}}`)

		t.Run("other audience", func(t *testing.T) {
			mustRefuse(t, e, p.ClientCredentials(t, "svc", "svc-secret", otherResource, "mcp:tools"))
		})
		t.Run("unconfigured issuer", func(t *testing.T) {
			mustRefuse(t, e, other.ClientCredentials(t, "svc", "svc-secret", testResource, "mcp:tools"))
		})
		t.Run("alg none", func(t *testing.T) {
			header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"at+jwt"}`))
			mustRefuse(t, e, header+"."+strings.Split(tok, ".")[1]+".")
		})
		t.Run("forged signature", func(t *testing.T) {
			mustRefuse(t, e, forge(t, tok))
		})
		t.Run("expired", func(t *testing.T) {
			short := p.ClientCredentials(t, "brief", "brief-secret", testResource, "mcp:tools")
			waitPast(t, short)
			mustRefuse(t, e, short)
		})
	})
}

// forge re-signs tok's header and claims with a key of its own, under the
// provider's kid: the signature does not verify with the provider's key.
func forge(t *testing.T, tok string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	var hdr struct{ Kid string }
	raw, _ := base64.RawURLEncoding.DecodeString(parts[0])
	_ = json.Unmarshal(raw, &hdr)
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", hdr.Kid))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := sig.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Split(forged, ".")[1] != parts[1] {
		t.Fatal("forged token changed the claims")
	}
	return forged
}

// waitPast waits until tok's exp has passed (by a second), so it is
// expired beyond the front end's leeway. The wait is the token's lifetime,
// which the provider sets (2 s), never a bound on anything under test.
func waitPast(t *testing.T, tok string) {
	t.Helper()
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	var c struct{ Exp int64 }
	if err := json.Unmarshal(payload, &c); err != nil || c.Exp == 0 {
		t.Fatalf("token without exp: %s", payload)
	}
	time.Sleep(time.Until(time.Unix(c.Exp+1, 0)))
}

// A token signed by a key the provider has rotated out is refused once
// mcpq's cached JWKS is fetched again; tokens signed by the new key work.
func TestOIDCProviderKeyRotation(t *testing.T) {
	p, _ := startProviders(t)
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := oidcEnv(t, b, p)
		list := rpc(1, proto.MethodToolsList, metaPlain, nil)
		old := p.ClientCredentials(t, "svc", "svc-secret", testResource, "mcp:tools")
		mustMatch(t, e.send(old, list, nil), 200, `{"result":{}}`)
		p.Rotate(t)
		fresh := p.ClientCredentials(t, "svc", "svc-secret", testResource, "mcp:tools")
		pollStatus(t, func() int { return e.send(fresh, list, nil).Status }, 200)
		pollStatus(t, func() int { return e.send(old, list, nil).Status }, 401)
		mustRefuse(t, e, old)
	})
}

// A token without the scope a tool requires gets 403 insufficient_scope.
func TestOIDCProviderScopes(t *testing.T) {
	p, _ := startProviders(t)
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := oidcEnv(t, b, p)
		admin := fixtureTools("mcpq")[0]
		admin.Policy = proto.PolicyTask
		admin.Tool.Name, admin.Scopes = "admin_greet", []string{"mcp:admin"}
		e.publish(admin)
		call := rpc(2, proto.MethodToolsCall, metaTasks, map[string]any{"name": "admin_greet", "arguments": map[string]any{"name": "x"}})
		rep := e.send(p.ClientCredentials(t, "svc", "svc-secret", testResource, "mcp:tools"), call, nil)
		mustMatch(t, rep, 403, `{"error":{"code":-32600,"data":{"error":"insufficient_scope","scopes":["mcp:admin"]}}}`)
		want := `Bearer realm="mcpq", error="insufficient_scope", scope="mcp:admin", resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp"`
		if ch := rep.Header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, want) {
			t.Fatalf("WWW-Authenticate %q, want prefix %q", ch, want)
		}
		full := p.ClientCredentials(t, "svc", "svc-secret", testResource, "mcp:tools mcp:admin")
		mustMatch(t, e.send(full, call, nil), 200, `{"result":{"resultType":"task"}}`)
	})
}

// A service moving from its API key to its provider's client credentials
// keeps its tasks and its balance once its OAuth principal is mapped to
// the key's (mcpq principals map).
func TestOIDCProviderPrincipalMapping(t *testing.T) {
	p, _ := startProviders(t)
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := oidcEnv(t, b, p)
		id := e.createAs(keyAlice, toolTaskJob)
		if _, err := e.store.Accounts().Credit(t.Context(), "alice", 42); err != nil {
			t.Fatal(err)
		}
		get := rpc(1, proto.MethodTasksGet, metaTasks, map[string]any{"taskId": id})
		before := p.ClientCredentials(t, "svc", "svc-secret", testResource, "mcp:tools")
		mustMatch(t, e.send(before, get, nil), 200, `{"error":{"code":-32602}}`)
		if err := access.New(b.Client, b.Prefix, nil).MapPrincipal(t.Context(), p.Issuer+"#svc", "alice"); err != nil {
			t.Fatal(err)
		}
		tok := p.ClientCredentials(t, "svc", "svc-secret", testResource, "mcp:tools")
		mustMatch(t, e.send(tok, get, nil), 200, `{"result":{"taskId":"`+id+`","status":"working"}}`)
		acct, byKey := e.rest(tok, "/v1/account"), e.rest(keyAlice, "/v1/account")
		if acct.Status != 200 || string(acct.Body) != string(byKey.Body) || !strings.Contains(string(acct.Body), "42") {
			t.Fatalf("account by token %d %s, by key %s", acct.Status, acct.Body, byKey.Body)
		}
	})
}

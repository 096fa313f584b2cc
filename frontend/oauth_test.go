package frontend_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/access"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

const testResource = "https://mcp.example.test/mcp"

// testIssuer is an authorization server on loopback: RFC 8414 metadata,
// a JWKS it can rotate, and an introspection endpoint for opaque tokens.
type testIssuer struct {
	srv    *httptest.Server
	mu     sync.Mutex
	keys   []*ecdsa.PrivateKey // published
	kids   []string
	opaque map[string]map[string]any // introspection answers by token
}

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	is := &testIssuer{opaque: map[string]map[string]any{}}
	is.rotate(t, "k1")
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks",
			"introspection_endpoint": is.srv.URL + "/introspect", "authorization_endpoint": is.srv.URL + "/authorize",
			"token_endpoint": is.srv.URL + "/token"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		is.mu.Lock()
		defer is.mu.Unlock()
		var set jose.JSONWebKeySet
		for i, k := range is.keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: is.kids[i], Algorithm: "ES256", Use: "sig"})
		}
		_ = json.NewEncoder(w).Encode(set)
	})
	mux.HandleFunc("/introspect", func(w http.ResponseWriter, r *http.Request) {
		if id, secret, ok := r.BasicAuth(); !ok || id != "mcpq" || secret != "s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		is.mu.Lock()
		ans, ok := is.opaque[r.FormValue("token")]
		is.mu.Unlock()
		if !ok {
			ans = map[string]any{"active": false}
		}
		_ = json.NewEncoder(w).Encode(ans)
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

// rotate publishes only a new key named kid.
func (is *testIssuer) rotate(t *testing.T, kid string) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is.mu.Lock()
	is.keys, is.kids = []*ecdsa.PrivateKey{k}, []string{kid}
	is.mu.Unlock()
	return k
}

// sign makes a JWT access token with claims over the defaults (this
// issuer, this resource, sub alice, an hour to live).
func (is *testIssuer) sign(t *testing.T, key *ecdsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	now := time.Now()
	c := map[string]any{"iss": is.srv.URL, "aud": testResource, "sub": "alice", "exp": now.Add(time.Hour).Unix(),
		"iat": now.Unix(), "scope": "mcp:tools"}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (is *testIssuer) current() (*ecdsa.PrivateKey, string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.keys[0], is.kids[0]
}

// newOAuthEnv is a front end accepting is's tokens and alice's API key.
func newOAuthEnv(t *testing.T, b *redistest.Backend, is *testIssuer, mod func(*frontend.OAuthConfig)) *env {
	t.Helper()
	cfg := frontend.OAuthConfig{Issuers: []string{is.srv.URL}, Resource: testResource, Scopes: []string{"mcp:tools"},
		IntrospectionClientID: "mcpq", IntrospectionClientSecret: "s3cret",
		Keys: frontend.NewKeyAuth(staticKeys(), access.New(b.Client, b.Prefix, nil), false)}
	if mod != nil {
		mod(&cfg)
	}
	o, err := frontend.NewOAuth(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return newEnv(t, b, func(c *frontend.Config) { c.Auth = o })
}

func TestOAuthTokens(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		is := newTestIssuer(t)
		other := newTestIssuer(t) // a real issuer, not configured here
		e := newOAuthEnv(t, b, is, nil)
		key, kid := is.current()
		good := is.sign(t, key, kid, nil)
		principal := is.srv.URL + "#alice"

		// A task made with the token belongs to issuer#subject.
		id := e.createAs(good, toolTaskJob)
		if _, err := e.store.Get(t.Context(), owned(principal, id)); err != nil {
			t.Fatalf("task %s is not %s's: %v", id, principal, err)
		}
		mustMatch(t, e.send(good, rpc(2, proto.MethodTasksGet, metaTasks, map[string]any{"taskId": id}), nil), 200,
			`{"result":{"taskId":"`+id+`","status":"working"}}`)
		// API keys keep working beside tokens, and see only their own tasks.
		mustMatch(t, e.send(keyAlice, rpc(3, proto.MethodTasksGet, metaTasks, map[string]any{"taskId": id}), nil), 200,
			`{"error":{"code":-32602}}`)
		mustMatch(t, e.send(keyAlice, rpc(4, proto.MethodToolsCall, metaPlain, map[string]any{"name": toolGreet, "arguments": map[string]any{"name": "x"}}), nil), 200,
			`{"result":{"content":[{"type":"text","text":"Hello, x!"}]}}`)

		forgedKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		otherKey, otherKid := other.current()
		header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
		payload := strings.Split(good, ".")[1]
		hmac := func() string {
			pub, _ := json.Marshal(jose.JSONWebKey{Key: &key.PublicKey})
			s, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: pub}, (&jose.SignerOptions{}).WithHeader("kid", kid))
			tok, _ := jwt.Signed(s).Claims(map[string]any{"iss": is.srv.URL, "aud": testResource, "sub": "alice",
				"exp": time.Now().Add(time.Hour).Unix()}).Serialize()
			return tok
		}()
		refused := map[string]string{
			"other audience":       is.sign(t, key, kid, map[string]any{"aud": "https://elsewhere.test/mcp"}),
			"expired":              is.sign(t, key, kid, map[string]any{"exp": time.Now().Add(-2 * time.Minute).Unix()}),
			"not yet valid":        is.sign(t, key, kid, map[string]any{"nbf": time.Now().Add(2 * time.Minute).Unix()}),
			"no exp":               is.sign(t, key, kid, map[string]any{"exp": nil}),
			"unconfigured issuer":  other.sign(t, otherKey, otherKid, nil),
			"issuer claim swapped": other.sign(t, otherKey, kid, map[string]any{"iss": is.srv.URL}),
			"alg none":             header + "." + payload + ".",
			"hmac with public key": hmac,
			"forged signature":     is.sign(t, forgedKey, kid, nil),
			"unknown key":          is.sign(t, forgedKey, "k-unknown", nil),
			"opaque, inactive":     "not-a-key-and-not-active",
		}
		for name, tok := range refused {
			t.Run(name, func(t *testing.T) {
				rep := e.send(tok, rpc(1, proto.MethodToolsList, metaPlain, nil), nil)
				if rep.Status != http.StatusUnauthorized {
					t.Fatalf("status %d, want 401: %s", rep.Status, rep.Body)
				}
				ch := rep.Header.Get("WWW-Authenticate")
				want := `Bearer realm="mcpq", resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp", scope="mcp:tools", error="invalid_token"`
				if !strings.HasPrefix(ch, want) {
					t.Fatalf("WWW-Authenticate %q, want prefix %q", ch, want)
				}
			})
		}
		// Within the leeway an expired token still holds.
		mustMatch(t, e.send(is.sign(t, key, kid, map[string]any{"exp": time.Now().Add(-5 * time.Second).Unix()}),
			rpc(5, proto.MethodToolsList, metaPlain, nil), nil), 200, `{"result":{}}`)
		// Without credentials: the challenge names the metadata, no error.
		rep := e.send("", rpc(6, proto.MethodToolsList, metaPlain, nil), nil)
		if ch := rep.Header.Get("WWW-Authenticate"); rep.Status != 401 || strings.Contains(ch, "error=") || !strings.Contains(ch, "resource_metadata=") {
			t.Fatalf("no credentials: %d %q", rep.Status, ch)
		}
	})
}

func TestOAuthIntrospection(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		is := newTestIssuer(t)
		e := newOAuthEnv(t, b, is, nil)
		exp := time.Now().Add(time.Hour).Unix()
		is.mu.Lock()
		is.opaque["opaque-good"] = map[string]any{"active": true, "sub": "bob", "aud": testResource, "exp": exp, "scope": "mcp:tools"}
		is.opaque["opaque-elsewhere"] = map[string]any{"active": true, "sub": "bob", "aud": "https://elsewhere.test", "exp": exp}
		is.mu.Unlock()
		id := e.createAs("opaque-good", toolTaskJob)
		if _, err := e.store.Get(t.Context(), owned(is.srv.URL+"#bob", id)); err != nil {
			t.Fatalf("task %s: %v", id, err)
		}
		if rep := e.send("opaque-elsewhere", rpc(1, proto.MethodToolsList, metaPlain, nil), nil); rep.Status != 401 {
			t.Fatalf("token for another audience: %d %s", rep.Status, rep.Body)
		}
	})
}

func TestOAuthKeyRotation(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		is := newTestIssuer(t)
		e := newOAuthEnv(t, b, is, func(c *frontend.OAuthConfig) { c.KeysMaxAge = 20 * time.Millisecond })
		oldKey, oldKid := is.current()
		old := is.sign(t, oldKey, oldKid, nil)
		list := rpc(1, proto.MethodToolsList, metaPlain, nil)
		mustMatch(t, e.send(old, list, nil), 200, `{"result":{}}`)
		newKey := is.rotate(t, "k2")
		fresh := is.sign(t, newKey, "k2", nil)
		// The new key verifies once fetched; the rotated-out one stops.
		pollStatus(t, func() int { return e.send(fresh, list, nil).Status }, 200)
		pollStatus(t, func() int { return e.send(old, list, nil).Status }, 401)
	})
}

// pollStatus polls until status() is want, within waitBound.
func pollStatus(t *testing.T, status func() int, want int) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for got := status(); got != want; got = status() {
		if time.Now().After(deadline) {
			t.Fatalf("status %d, want %d", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestOAuthMetadata(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		is := newTestIssuer(t)
		e := newOAuthEnv(t, b, is, nil)
		for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
			rep, err := do(t.Context(), e.h, http.MethodGet, path, nil, http.Header{})
			if err != nil || rep.Status != 200 {
				t.Fatalf("GET %s: %d %v %s", path, rep.Status, err, rep.Body)
			}
			mustMatch(t, rep, 200, `{"resource":"`+testResource+`","authorization_servers":["`+is.srv.URL+`"],`+
				`"scopes_supported":["mcp:tools"],"bearer_methods_supported":["header"]}`)
		}
	})
}

func TestOAuthScopes(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		is := newTestIssuer(t)
		e := newOAuthEnv(t, b, is, nil)
		admin := fixtureTools("mcpq")[0]
		admin.Policy = proto.PolicyTask // held by the fake worker: the call answers a task
		admin.Tool.Name, admin.Scopes = "admin_greet", []string{"mcp:admin", "mcp:tools"}
		e.publish(admin)
		key, kid := is.current()
		plain := is.sign(t, key, kid, nil) // scope mcp:tools
		full := is.sign(t, key, kid, map[string]any{"scope": "mcp:tools mcp:admin"})
		listedTools := func(cred string) map[string]bool {
			rep := e.send(cred, rpc(1, proto.MethodToolsList, metaPlain, nil), nil)
			mustMatch(t, rep, 200, `{"result":{}}`)
			names := map[string]bool{}
			tools, _ := lookup(rep.JSON, "result.tools")
			for _, tl := range tools.([]any) {
				names[tl.(map[string]any)["name"].(string)] = true
			}
			return names
		}
		if l := listedTools(plain); l["admin_greet"] || !l[toolGreet] {
			t.Fatalf("token without mcp:admin lists %v", l)
		}
		for _, cred := range []string{full, keyAlice} {
			if l := listedTools(cred); !l["admin_greet"] {
				t.Fatalf("%.10s… does not list admin_greet: %v", cred, l)
			}
		}
		call := rpc(2, proto.MethodToolsCall, metaTasks, map[string]any{"name": "admin_greet", "arguments": map[string]any{"name": "x"}})
		rep := e.send(plain, call, nil)
		mustMatch(t, rep, 403, `{"error":{"code":-32600,"data":{"error":"insufficient_scope","scopes":["mcp:admin","mcp:tools"]}}}`)
		want := `Bearer realm="mcpq", error="insufficient_scope", scope="mcp:admin mcp:tools", resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp"`
		if ch := rep.Header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, want) {
			t.Fatalf("WWW-Authenticate %q, want prefix %q", ch, want)
		}
		mustMatch(t, e.send(full, call, nil), 200, `{"result":{"resultType":"task"}}`)
		mustMatch(t, e.send(keyAlice, call, nil), 200, `{"result":{"resultType":"task"}}`)
	})
}

// An OAuth principal mapped to an API key's principal sees its tasks and
// its account (mcpq principals map).
func TestOAuthPrincipalMapping(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		is := newTestIssuer(t)
		store := access.New(b.Client, b.Prefix, nil)
		e := newOAuthEnv(t, b, is, func(c *frontend.OAuthConfig) { c.Mapper = store })
		id := e.createAs(keyAlice, toolTaskJob)
		if _, err := e.store.Accounts().Credit(t.Context(), "alice", 42); err != nil {
			t.Fatal(err)
		}
		key, kid := is.current()
		get := rpc(1, proto.MethodTasksGet, metaTasks, map[string]any{"taskId": id})
		// Unmapped, the subject alice of the issuer is someone else.
		mustMatch(t, e.send(is.sign(t, key, kid, map[string]any{"jti": "before"}), get, nil), 200, `{"error":{"code":-32602}}`)
		if err := store.MapPrincipal(t.Context(), is.srv.URL+"#alice", "alice"); err != nil {
			t.Fatal(err)
		}
		tok := is.sign(t, key, kid, map[string]any{"jti": "after"})
		mustMatch(t, e.send(tok, get, nil), 200, `{"result":{"taskId":"`+id+`","status":"working"}}`)
		acct, byKey := e.rest(tok, "/v1/account"), e.rest(keyAlice, "/v1/account")
		if acct.Status != 200 || string(acct.Body) != string(byKey.Body) || !strings.Contains(string(acct.Body), "42") {
			t.Fatalf("account by token %d %s, by key %s", acct.Status, acct.Body, byKey.Body)
		}
	})
}

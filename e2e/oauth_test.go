package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/internal/oidctest"
	"github.com/mcpq/mcpq/internal/redistest"
)

// startOAuthDev runs `mcpq dev --fixtures conformance` accepting only
// OAuth access tokens of a real oidc-provider (no API key, no anonymous
// access) and returns the provider and the MCP URL. Access tokens live
// accessTTL seconds; clients are registered with the provider in advance.
func startOAuthDev(t *testing.T, accessTTL int, clients ...oidctest.Client) (*oidctest.Provider, string) {
	t.Helper()
	return startOAuthDevAt(t, freeAddr(t), accessTTL, nil, clients...)
}

// freeAddr is a free loopback address, 127.0.0.1:PORT.
func freeAddr(t *testing.T) string {
	t.Helper()
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// startOAuthDevAt is startOAuthDev listening on addr, with more flags of
// mcpq dev.
func startOAuthDevAt(t *testing.T, addr string, accessTTL int, flags []string, clients ...oidctest.Client) (*oidctest.Provider, string) {
	t.Helper()
	mcpURL := "http://" + addr + "/mcp"
	p := oidctest.Start(t, oidctest.Config{Resources: []string{mcpURL}, AccessTokenTTL: accessTTL,
		Clients: append([]oidctest.Client{oidctest.ServiceClient("svc", "svc-secret")}, clients...)})
	start(t, "mcpq dev", nil, nil, append([]string{"dev", "--addr", addr, "--fixtures", "conformance",
		"--oauth-issuer", p.Issuer, "--resource-url", mcpURL, "--oauth-scopes", "mcp:tools"}, flags...)...)
	waitHealthy(t, "http://"+addr)
	return p, mcpURL
}

// readTokens reads the CLI's tokens file, checking it is its owner's only.
func readTokens(t *testing.T, path string) map[string]client.Token {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("tokens file mode %v, want 0600", fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]client.Token
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	return all
}

// mcpq login (authorization code with PKCE, the client registered
// dynamically, the person's login and consent done over HTTP), then mcpq
// call with the stored token, refreshed as it nears expiry, against a
// deployment that takes only OAuth.
func TestCLILoginThenCall(t *testing.T) {
	p, url := startOAuthDev(t, 20) // under the CLI's 30 s refresh margin: every use refreshes
	ctx := within(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "cfg", "tokens.json")
	flags := []string{"--server", url, "--tokens", tokens, "--journal", filepath.Join(dir, "journal")}

	// Without a token the deployment refuses, and the CLI says how to sign in.
	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Fatalf("no token: HTTP %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	refused := startCLI(t, ctx, nil, append([]string{"call", "greet", "name=x"}, flags...)...)
	if err := refused.wait(); err == nil {
		t.Fatal("mcpq call without a token succeeded")
	}
	if _, e := refused.output(); !strings.Contains(e, "mcpq login") {
		t.Fatalf("mcpq call without a token: %s", e)
	}

	login(t, p, flags)
	first := readTokens(t, tokens)[url]
	if first.AccessToken == "" || first.RefreshToken == "" || first.ClientID == "" || first.Issuer != p.Issuer {
		t.Fatalf("stored token %+v", first)
	}

	call := startCLI(t, ctx, nil, append([]string{"call", "greet", "name=x"}, flags...)...)
	if err := call.wait(); err != nil {
		o, e := call.output()
		t.Fatalf("mcpq call: %v\n%s\n%s", err, o, e)
	}
	if o, _ := call.output(); !strings.Contains(o, "Hello, x!") {
		t.Fatalf("mcpq call printed %q", o)
	}
	// The token was refreshed before use: a new access token, same client.
	second := readTokens(t, tokens)[url]
	if second.AccessToken == first.AccessToken || second.ClientID != first.ClientID {
		t.Fatalf("token not refreshed: before %.16s… after %.16s…", first.AccessToken, second.AccessToken)
	}

	// Signing in again uses the client registered the first time.
	login(t, p, flags)
	if again := readTokens(t, tokens)[url]; again.ClientID != first.ClientID || again.AccessToken == second.AccessToken {
		t.Fatalf("second login: client %s (first %s)", again.ClientID, first.ClientID)
	}

	// A service signs in by client credentials from the environment.
	t.Setenv("MCPQ_OAUTH_CLIENT_ID", "svc")
	t.Setenv("MCPQ_OAUTH_CLIENT_SECRET", "svc-secret")
	svc := startCLI(t, ctx, nil, "call", "greet", "name=svc", "--server", url,
		"--tokens", filepath.Join(dir, "svc-tokens.json"), "--journal", filepath.Join(dir, "journal"))
	if err := svc.wait(); err != nil {
		o, e := svc.output()
		t.Fatalf("mcpq call by client credentials: %v\n%s\n%s", err, o, e)
	}
	if o, _ := svc.output(); !strings.Contains(o, "Hello, svc!") {
		t.Fatalf("mcpq call by client credentials printed %q", o)
	}
}

// login runs mcpq login with flags, signing in as alice at p's pages when
// it prints the authorization URL.
func login(t *testing.T, p *oidctest.Provider, flags []string) {
	t.Helper()
	signedIn := make(chan error, 1)
	proc := startCLI(t, within(t), func(line string) {
		if strings.HasPrefix(line, p.Issuer+"/auth?") {
			go func() {
				resp, body, err := p.SignIn(line, "alice")
				if err == nil && (resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Signed in")) {
					err = fmt.Errorf("redirect answered %s: %s", resp.Status, body)
				}
				signedIn <- err
			}()
		}
	}, append([]string{"login", "--no-browser"}, flags...)...)
	if err := proc.wait(); err != nil {
		_, e := proc.output()
		t.Fatalf("mcpq login: %v\n%s", err, e)
	}
	if err := <-signedIn; err != nil {
		t.Fatal(err)
	}
}

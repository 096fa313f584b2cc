package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
	why := fmt.Sprintf("the MCP Inspector and mcp-remote are not installed in %s or no Node.js (%v) (scripts/lib.sh need_mcp_hosts)", modules, err)
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
	signed chan error
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
	b := &browser{env: []string{"BROWSER=" + script, "DISPLAY=", "WAYLAND_DISPLAY="}, signed: make(chan error, 8)}
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
			if !strings.HasPrefix(lines[seen], p.Issuer+"/") {
				b.signed <- fmt.Errorf("the host opened %q, not the provider", lines[seen])
				continue
			}
			resp, page, err := p.SignIn(lines[seen], login)
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("the host's callback answered %s: %.300s", resp.Status, page)
			}
			b.signed <- err
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// wait waits for the sign-in of the URL the host opened: a host that ran
// without opening one (its stderr is hostErr) or whose sign-in failed
// fails the test.
func (b *browser) wait(t *testing.T, ctx context.Context, hostErr string) {
	t.Helper()
	select {
	case err := <-b.signed:
		if err != nil {
			t.Fatalf("sign-in: %v\nhost's stderr: %s", err, hostErr)
		}
	case <-ctx.Done():
		t.Fatalf("the host opened no sign-in page\nits stderr: %s", hostErr)
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
	b.wait(t, ctx, errOut)
	if !strings.Contains(out, "Hello, inspector!") {
		t.Fatalf("inspector CLI printed %s\nstderr: %s", out, errOut)
	}
	// The stored token serves the next run; no sign-in may be asked for.
	out, errOut, err = run("--stored-auth-only")
	if err != nil || !strings.Contains(out, "Hello, inspector!") {
		t.Fatalf("inspector CLI with its stored token: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/mcpq/mcpq/client"
)

const loginUsage = `mcpq login [--server URL] [--no-browser] [--client-id ID] [--scope S] [--tokens FILE]
Signs in to an MCP server that takes OAuth access tokens (docs/client.md,
"OAuth"): finds its authorization server from the server's 401, registers
a client there when no --client-id is given, opens the authorization URL in
a browser (always printed on stderr; --no-browser only prints it), takes
the code on a loopback redirect (127.0.0.1) with PKCE, and keeps the token
in the tokens file (mode 0600), refreshed before it expires. With
MCPQ_OAUTH_CLIENT_SECRET set, it gets the token by client credentials
instead (a service, no browser). mcpq call, task and resume then use it.
`

// oauth is the OAuth client of the client commands: the tokens file, the
// configured client (client credentials when a secret is set), and browse
// to show the person the authorization URL (nil: no sign-in on a 401).
func (o *clientOpts) oauth(browse func(context.Context, string) error) *client.OAuth {
	secret := os.Getenv("MCPQ_OAUTH_CLIENT_SECRET")
	return &client.OAuth{
		Server:            o.server,
		ClientID:          o.clientID,
		ClientSecret:      secret,
		ClientCredentials: o.clientID != "" && secret != "",
		Scopes:            strings.Fields(o.scope),
		ClientName:        "mcpq CLI",
		Store:             &client.FileTokenStore{Path: o.tokens},
		Browse:            browse,
	}
}

// runLogin is mcpq login.
func runLogin(ctx context.Context, args []string) error {
	o, err := parseClientArgs(args)
	if errors.As(err, new(flagHelp)) {
		return errors.New(loginUsage)
	}
	if err != nil {
		return err
	}
	if len(o.args) > 0 || o.key != "" {
		return errors.New("usage: " + loginUsage)
	}
	a := o.oauth(func(ctx context.Context, authURL string) error {
		fmt.Fprintf(os.Stderr, "Open this URL to sign in:\n%s\n", authURL)
		if !o.noBrowser {
			openBrowser(authURL)
		}
		return nil
	})
	if err := a.Login(ctx); err != nil {
		return err
	}
	t, err := a.Store.Load(o.server)
	if err != nil || t == nil {
		return fmt.Errorf("the token was not kept in %s: %v", o.tokens, err)
	}
	fmt.Fprintf(os.Stderr, "Signed in to %s (issuer %s, scope %q); token kept in %s\n", o.server, t.Issuer, t.Scope, o.tokens)
	return nil
}

// openBrowser tries the desktop's opener; the URL is printed anyway.
func openBrowser(u string) {
	for _, opener := range []string{"xdg-open", "open"} {
		if p, err := exec.LookPath(opener); err == nil {
			if cmd := exec.Command(p, u); cmd.Start() == nil {
				go func() { _ = cmd.Wait() }()
				return
			}
		}
	}
}

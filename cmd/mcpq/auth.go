package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/access"
)

// authFlags are the front end's authentication settings.
type authFlags struct {
	keysFile       string
	allowAnonymous bool
	oauth          oauthFlags
}

// oauthFlags are the OAuth resource server's settings (docs/auth.md).
type oauthFlags struct {
	issuers         listFlag
	resource        string
	principalClaim  string
	scopes          string
	introspectID    string
	dashboardClient string
}

// listFlag is a repeatable flag; its default comes from a comma-separated
// environment variable and the first use on the command line replaces it.
type listFlag struct {
	items []string
	set   bool
}

func (l *listFlag) String() string { return strings.Join(l.items, ",") }

func (l *listFlag) Set(v string) error {
	if !l.set {
		l.items, l.set = nil, true
	}
	l.items = append(l.items, splitList(v)...)
	return nil
}

func (a *authFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.keysFile, "api-keys-file", env("MCPQ_API_KEYS_FILE", ""), `file of static API keys, one "principal key" per line (env MCPQ_API_KEYS_FILE)`)
	fs.BoolVar(&a.allowAnonymous, "allow-anonymous", env("MCPQ_ALLOW_ANONYMOUS", "") == "true",
		"serve requests without an Authorization header as the anonymous principal (env MCPQ_ALLOW_ANONYMOUS=true)")
	o := &a.oauth
	o.issuers.items = splitList(os.Getenv("MCPQ_OAUTH_ISSUERS"))
	fs.Var(&o.issuers, "oauth-issuer", "accept OAuth access tokens from this authorization server (issuer URL; repeatable; env MCPQ_OAUTH_ISSUERS, comma-separated)")
	fs.StringVar(&o.resource, "resource-url", env("MCPQ_RESOURCE_URL", ""),
		"the canonical URI clients use for this server's MCP endpoint, the audience tokens must carry (env MCPQ_RESOURCE_URL)")
	fs.StringVar(&o.principalClaim, "oauth-principal-claim", env("MCPQ_OAUTH_PRINCIPAL_CLAIM", "sub"),
		"the token claim naming the principal, after the issuer and a # (env MCPQ_OAUTH_PRINCIPAL_CLAIM)")
	fs.StringVar(&o.scopes, "oauth-scopes", env("MCPQ_OAUTH_SCOPES", ""),
		"the scopes this server knows, comma-separated: scopes_supported and the 401's scope (env MCPQ_OAUTH_SCOPES)")
	fs.StringVar(&o.dashboardClient, "oauth-dashboard-client", env("MCPQ_OAUTH_DASHBOARD_CLIENT", ""),
		"client ID the dashboard signs people in with: a public client (PKCE) of the first --oauth-issuer whose redirect URI is this server's /dashboard/ URL (env MCPQ_OAUTH_DASHBOARD_CLIENT)")
	fs.StringVar(&o.introspectID, "oauth-introspection-client", env("MCPQ_OAUTH_INTROSPECTION_CLIENT", ""),
		"client ID for token introspection of opaque tokens; the secret is read from MCPQ_OAUTH_INTROSPECTION_SECRET (env MCPQ_OAUTH_INTROSPECTION_CLIENT)")
}

// withOAuth wraps keys in the OAuth resource server when issuers are
// configured; otherwise keys serves alone.
func (a *authFlags) withOAuth(keys frontend.Authenticator, mapper frontend.PrincipalMapper) (frontend.Authenticator, error) {
	o := &a.oauth
	if len(o.issuers.items) == 0 {
		if o.resource != "" {
			return nil, fmt.Errorf("--resource-url needs --oauth-issuer")
		}
		return keys, nil
	}
	if o.resource == "" {
		return nil, fmt.Errorf("--oauth-issuer needs --resource-url (the URL clients use for /mcp)")
	}
	return frontend.NewOAuth(frontend.OAuthConfig{
		Issuers: o.issuers.items, Resource: o.resource, PrincipalClaim: o.principalClaim,
		Scopes: splitList(o.scopes), IntrospectionClientID: o.introspectID,
		IntrospectionClientSecret: os.Getenv("MCPQ_OAUTH_INTROSPECTION_SECRET"),
		DashboardClientID:         o.dashboardClient,
		Keys:                      keys, Mapper: mapper,
	})
}

// staticKeys reads MCPQ_API_KEYS ("principal:key,principal:key") and the keys file.
func (a *authFlags) staticKeys() (map[string]string, error) {
	keys := map[string]string{}
	for _, pair := range splitList(os.Getenv("MCPQ_API_KEYS")) {
		p, k, ok := strings.Cut(pair, ":")
		p, k = strings.TrimSpace(p), strings.TrimSpace(k) // "alice : key" is alice's key, not "alice "'s
		if !ok || p == "" || k == "" {
			return nil, fmt.Errorf(`MCPQ_API_KEYS: %q is not "principal:key"`, pair)
		}
		keys[k] = p
	}
	if a.keysFile == "" {
		return keys, nil
	}
	f, err := os.Open(a.keysFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf(`%s:%d: want "principal key"`, a.keysFile, n)
		}
		keys[fields[1]] = fields[0]
	}
	return keys, sc.Err()
}

// frontendAuth is the production authenticator: static keys plus managed
// keys in Redis; anonymous only with --allow-anonymous.
func (a *authFlags) frontendAuth(rdb redis.UniversalClient, prefix string) (frontend.Authenticator, error) {
	static, err := a.staticKeys()
	if err != nil {
		return nil, err
	}
	store := access.New(rdb, prefix, nil)
	return a.withOAuth(frontend.NewKeyAuth(static, store, a.allowAnonymous), store)
}

// devAuth is mcpq dev's: anonymous unless keys are configured.
func (a *authFlags) devAuth(rdb redis.UniversalClient) (frontend.Authenticator, error) {
	static, err := a.staticKeys()
	if err != nil {
		return nil, err
	}
	if len(static) == 0 && len(a.oauth.issuers.items) == 0 {
		return frontend.Anonymous{}, nil
	}
	store := access.New(rdb, "", nil)
	return a.withOAuth(frontend.NewKeyAuth(static, store, a.allowAnonymous), store)
}

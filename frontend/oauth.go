package frontend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// OAuthConfig configures OAuth: mcpq as an OAuth 2.1 resource server
// (docs/auth.md). Zero values take the documented defaults.
type OAuthConfig struct {
	// Issuers are the authorization servers whose access tokens are
	// accepted (their issuer identifiers, as in their metadata). Required.
	Issuers []string
	// Resource is the canonical URI clients use for this server's MCP
	// endpoint, e.g. https://mcp.example.com/mcp (RFC 8707): a token's
	// audience must be exactly this. Required.
	Resource string
	// PrincipalClaim names the claim whose value, after the issuer and a
	// "#", is a token's principal (default "sub": issuer#subject, so two
	// issuers never collide).
	PrincipalClaim string
	// Scopes are the scopes this server knows (scopes_supported in its
	// metadata, and the scope of a 401's challenge).
	Scopes []string
	// Algorithms are the JWS algorithms accepted (default RS256, RS384,
	// RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA). "none" and
	// the HMAC algorithms are refused whatever is listed.
	Algorithms []string
	// KeysMaxAge is how long an issuer's cached JWKS serves before it is
	// fetched again in the background, so a key the issuer rotated out
	// stops verifying within it (default 5m). A token naming a key the
	// cache lacks fetches at once (at most every 10s, or KeysMaxAge when
	// shorter).
	KeysMaxAge time.Duration
	// Leeway is the clock skew allowed on exp and nbf (default 30s).
	Leeway time.Duration
	// IntrospectionClientID and IntrospectionClientSecret authenticate this
	// server at the issuers' introspection endpoints (RFC 7662), through
	// which opaque (non-JWT) tokens are checked. Empty: opaque tokens that
	// are not API keys are refused.
	IntrospectionClientID, IntrospectionClientSecret string
	// IntrospectionCacheTTL bounds how long an introspection answer is
	// reused (default 30s, never past the token's exp).
	IntrospectionCacheTTL time.Duration
	// CacheSize bounds the verified tokens kept (default 10000).
	CacheSize int
	// Keys authenticates what is not an OAuth token (API keys, and a
	// request without credentials where anonymous access is allowed).
	// Nil: tokens only.
	Keys Authenticator
	// DashboardClientID is the client ID the dashboard signs people in
	// with: a public client (no secret, PKCE) registered with the first
	// issuer, its redirect URI this server's /dashboard/ URL. Empty: the
	// dashboard takes a pasted API key or token only.
	DashboardClientID string
	// Mapper maps an OAuth principal to an existing one (mcpq principals
	// map); nil: none is mapped.
	Mapper PrincipalMapper
	// HTTPClient fetches metadata, JWKS and introspection answers
	// (default: a client with a 10s timeout).
	HTTPClient *http.Client
	// Clock is the time source (default time.Now).
	Clock func() time.Time
	// Logger receives the logs (default slog.Default()).
	Logger *slog.Logger
}

// PrincipalMapper maps an OAuth principal to the principal it acts as.
type PrincipalMapper interface {
	// ResolvePrincipal returns the principal p is mapped to, or p itself.
	ResolvePrincipal(ctx context.Context, p string) (string, error)
}

// Scoper is an Authenticator whose credentials may be limited to scopes
// (OAuth). The front end asks it which scopes a request holds before a
// tool that requires scopes is listed or called.
type Scoper interface {
	// Scopes returns the scopes r's credentials grant; limited is false
	// for credentials that are not limited by scope (API keys, anonymous).
	Scopes(r *http.Request) (scopes []string, limited bool)
}

// Challenger is an Authenticator that writes its own WWW-Authenticate
// challenge to a refused request (OAuth: resource_metadata, RFC 9728).
type Challenger interface {
	// Challenge is the WWW-Authenticate value of a 401 for err.
	Challenge(r *http.Request, err error) string
	// ScopeChallenge is the WWW-Authenticate value of a 403 for a call
	// that lacks the scopes required (error="insufficient_scope").
	ScopeChallenge(required []string) string
}

// Token refusals; each answers 401 with error="invalid_token".
var (
	errTokenIssuer    = errors.New("the token's issuer is not trusted here")
	errTokenAudience  = errors.New("the token is not for this resource (audience)")
	errTokenExpired   = errors.New("the token has expired")
	errTokenNotYet    = errors.New("the token is not valid yet (nbf)")
	errTokenSignature = errors.New("the token's signature does not verify")
	errTokenMalformed = errors.New("the token is malformed")
	errTokenInactive  = errors.New("the token is not active")
	errTokenSubject   = errors.New("the token names no principal")
)

// defaultAlgorithms are the asymmetric JWS algorithms accepted by default.
func defaultAlgorithms() []string {
	return []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
}

func (c *OAuthConfig) setDefaults() error {
	if len(c.Issuers) == 0 {
		return errors.New("frontend: OAuth needs at least one issuer")
	}
	u, err := url.Parse(c.Resource)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" {
		return fmt.Errorf("frontend: resource URL %q must be an absolute http(s) URI without a fragment", c.Resource)
	}
	for _, iss := range c.Issuers {
		if iu, err := url.Parse(iss); err != nil || iu.Host == "" || iu.Fragment != "" || iu.RawQuery != "" {
			return fmt.Errorf("frontend: issuer %q must be an absolute URL without query or fragment", iss)
		}
	}
	if c.PrincipalClaim == "" {
		c.PrincipalClaim = "sub"
	}
	if len(c.Algorithms) == 0 {
		c.Algorithms = defaultAlgorithms()
	}
	var algs []string
	for _, a := range c.Algorithms {
		if strings.EqualFold(a, "none") || strings.HasPrefix(strings.ToUpper(a), "HS") {
			return fmt.Errorf("frontend: algorithm %s is never accepted for access tokens", a)
		}
		algs = append(algs, a)
	}
	c.Algorithms = algs
	if c.Leeway <= 0 {
		c.Leeway = 30 * time.Second
	}
	if c.KeysMaxAge <= 0 {
		c.KeysMaxAge = 5 * time.Minute
	}
	if c.IntrospectionCacheTTL <= 0 {
		c.IntrospectionCacheTTL = 30 * time.Second
	}
	if c.CacheSize <= 0 {
		c.CacheSize = 10000
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// metadataURL is where this resource's protected resource metadata is
// served: the path-suffixed well-known URI of RFC 9728 section 3.1.
func metadataURL(resource string) string {
	u, _ := url.Parse(resource) // checked by setDefaults
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	return u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + path
}

package frontend

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// OAuth authenticates OAuth 2.1 bearer access tokens (JWTs through the
// issuer's JWKS, opaque tokens through introspection) beside API keys
// (OAuthConfig.Keys). A token is never passed on: workers, upstreams and
// logs see only the principal.
type OAuth struct {
	cfg     OAuthConfig
	issuers map[string]*issuer
	order   []*issuer
	algs    []jose.SignatureAlgorithm
	cache   *grantCache
}

// grant is what a verified token allows: its principal and scopes, until.
type grant struct {
	principal string
	scopes    []string
	until     time.Time
	iss, kid  string // a JWT's issuer and key (empty: introspected)
}

// grantMaxAge bounds how long a verified JWT is reused without being
// checked again, so a new principal mapping applies within it.
const grantMaxAge = 5 * time.Minute

// NewOAuth builds the OAuth authenticator. Issuers are discovered on first
// use, not here, so a front end starts while its identity provider is away.
func NewOAuth(cfg OAuthConfig) (*OAuth, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	o := &OAuth{cfg: cfg, issuers: map[string]*issuer{}, cache: newGrantCache(cfg.CacheSize)}
	for _, id := range cfg.Issuers {
		is := newIssuer(id, cfg.HTTPClient, cfg.Clock, cfg.KeysMaxAge)
		o.issuers[id] = is
		o.order = append(o.order, is)
	}
	for _, a := range cfg.Algorithms {
		o.algs = append(o.algs, jose.SignatureAlgorithm(a))
	}
	return o, nil
}

// Authenticate implements Authenticator.
func (o *OAuth) Authenticate(r *http.Request) (string, error) {
	g, err := o.grantOf(r)
	if err != nil {
		return "", err
	}
	return g.principal, nil
}

// Scopes implements Scoper: a token's scopes; API keys are not limited,
// anonymous requests hold no scope.
func (o *OAuth) Scopes(r *http.Request) ([]string, bool) {
	token, ok := bearerToken(r)
	if !ok {
		return nil, true
	}
	if g := o.cache.get(tokenHash(token), o.cfg.Clock()); g != nil {
		return g.scopes, true
	}
	if o.cfg.Keys != nil && !looksLikeJWT(token) {
		if _, err := o.cfg.Keys.Authenticate(r); err == nil {
			return nil, false
		}
	}
	g, err := o.grantOf(r)
	if err != nil {
		return nil, true
	}
	return g.scopes, true
}

// grantOf authenticates r: a cached grant, else the token verified (a JWT)
// or introspected (opaque, when it is not an API key).
func (o *OAuth) grantOf(r *http.Request) (*grant, error) {
	token, ok := bearerToken(r)
	if !ok {
		if o.cfg.Keys != nil {
			p, err := o.cfg.Keys.Authenticate(r)
			return &grant{principal: p}, err
		}
		return nil, ErrNoCredentials
	}
	now := o.cfg.Clock()
	h := tokenHash(token)
	if g := o.cache.get(h, now); g != nil && (g.iss == "" || o.issuers[g.iss].hasKey(g.kid)) {
		if g.principal == "" { // remembered as refused (oauth_introspect.go)
			return nil, errTokenInactive
		}
		return g, nil
	}
	var g *grant
	var err error
	if looksLikeJWT(token) {
		g, err = o.verifyJWT(r.Context(), token, now)
	} else {
		if o.cfg.Keys != nil {
			p, kerr := o.cfg.Keys.Authenticate(r)
			var unavailable *UnavailableError
			if kerr == nil || errors.As(kerr, &unavailable) {
				return &grant{principal: p}, kerr
			}
		}
		g, err = o.introspect(r.Context(), token, now)
	}
	if err != nil {
		return nil, err
	}
	if o.cfg.Mapper != nil {
		p, err := o.cfg.Mapper.ResolvePrincipal(r.Context(), g.principal)
		if err != nil {
			return nil, &UnavailableError{fmt.Errorf("principal mapping: %w", err)}
		}
		g.principal = p
	}
	o.cache.put(h, g)
	return g, nil
}

// accessClaims are the claims mcpq reads of an access token.
type accessClaims struct {
	jwt.Claims
	Scope    string          `json:"scope"`
	Scp      json.RawMessage `json:"scp"`
	ClientID string          `json:"client_id"`
}

// verifyJWT checks a JWT access token: an allowed algorithm, a trusted
// issuer, a signature by one of its current keys, this resource as
// audience, exp (required) and nbf with leeway.
func (o *OAuth) verifyJWT(ctx context.Context, token string, now time.Time) (*grant, error) {
	tok, err := jwt.ParseSigned(token, o.algs)
	if err != nil || len(tok.Headers) != 1 {
		return nil, fmt.Errorf("%w: %v", errTokenMalformed, err)
	}
	var unverified accessClaims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, fmt.Errorf("%w: %v", errTokenMalformed, err)
	}
	is := o.issuers[unverified.Issuer]
	if is == nil {
		return nil, errTokenIssuer
	}
	kid := tok.Headers[0].KeyID
	key, ok, err := is.key(ctx, kid)
	switch {
	case err != nil:
		return nil, &UnavailableError{err}
	case !ok:
		return nil, fmt.Errorf("%w: issuer %s has no key %q", errTokenSignature, is.id, kid)
	}
	var claims accessClaims
	var raw map[string]any
	if err := tok.Claims(key.Key, &claims, &raw); err != nil {
		return nil, errTokenSignature
	}
	if err := claims.ValidateWithLeeway(jwt.Expected{Issuer: is.id, AnyAudience: jwt.Audience{o.cfg.Resource}, Time: now}, o.cfg.Leeway); err != nil {
		return nil, claimError(err)
	}
	if claims.Expiry == nil {
		return nil, fmt.Errorf("%w: no exp", errTokenMalformed)
	}
	p, err := o.principalOf(is.id, raw, claims.ClientID)
	if err != nil {
		return nil, err
	}
	until := claims.Expiry.Time().Add(o.cfg.Leeway)
	if m := now.Add(grantMaxAge); m.Before(until) {
		until = m
	}
	return &grant{principal: p, scopes: scopesOf(claims.Scope, claims.Scp), until: until, iss: is.id, kid: kid}, nil
}

// claimError maps go-jose's claim validation errors to the refusals.
func claimError(err error) error {
	switch {
	case errors.Is(err, jwt.ErrExpired):
		return errTokenExpired
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return errTokenNotYet
	case errors.Is(err, jwt.ErrInvalidAudience):
		return errTokenAudience
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return errTokenIssuer
	}
	return fmt.Errorf("%w: %v", errTokenMalformed, err)
}

// principalOf is issuer#value of the principal claim (a client
// credentials token without sub names its client).
func (o *OAuth) principalOf(iss string, claims map[string]any, clientID string) (string, error) {
	v, _ := claims[o.cfg.PrincipalClaim].(string)
	if v == "" && o.cfg.PrincipalClaim == "sub" {
		v = clientID
	}
	if v == "" {
		return "", errTokenSubject
	}
	return iss + "#" + v, nil
}

// scopesOf reads the space-separated scope claim (RFC 9068), else scp
// (a list or a string, as some providers write it).
func scopesOf(scope string, scp json.RawMessage) []string {
	if scope != "" {
		return strings.Fields(scope)
	}
	var list []string
	if json.Unmarshal(scp, &list) == nil {
		return list
	}
	var s string
	if json.Unmarshal(scp, &s) == nil {
		return strings.Fields(s)
	}
	return nil
}

// bearerToken is the request's bearer credential.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}

// looksLikeJWT: three dot-separated parts, so a JWS compact serialization
// (API keys and opaque tokens have no dots).
func looksLikeJWT(token string) bool { return strings.Count(token, ".") == 2 }

func tokenHash(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// hasScopes reports whether held contains every scope of required.
func hasScopes(held, required []string) bool {
	for _, s := range required {
		if !slices.Contains(held, s) {
			return false
		}
	}
	return true
}

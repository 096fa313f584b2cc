package client

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// OAuth is an Authorizer for a server that takes OAuth 2.1 access tokens
// (the MCP authorization rules): it finds the authorization server from
// the 401's resource_metadata (RFC 9728, then RFC 8414 or OpenID
// discovery), gets a token for the server's resource (RFC 8707) by the
// authorization code grant with PKCE on a loopback redirect (Login) or by
// client credentials, registers itself (RFC 7591) when no client id is
// configured, keeps the token in Store and refreshes it before it expires.
type OAuth struct {
	// Server is the MCP endpoint's URL (Client.URL); the token's resource is
	// its canonical URI, or the resource its metadata names.
	Server string
	// ClientID and ClientSecret are a pre-registered client's; an empty
	// ClientID registers a client dynamically (kept in Store).
	ClientID, ClientSecret string
	// AuthMethod is how the client authenticates at the token endpoint:
	// client_secret_basic (the default with a secret), client_secret_post,
	// or none (the default without one).
	AuthMethod string
	// ClientCredentials gets tokens by the client credentials grant (a
	// service; needs ClientID and ClientSecret or ClientKey) instead of
	// Login.
	ClientCredentials bool
	// ClientKey authenticates the client at the token endpoint with a
	// signed JWT (private_key_jwt, RFC 7523 section 2.2) instead of a
	// secret: an ECDSA P-256 (ES256) or RSA (RS256) key.
	ClientKey crypto.Signer
	// Assertion, when set, gets tokens by the JWT bearer grant (RFC 7523
	// section 2.1) with the JWT it returns for the authorization server
	// issuer and the resource: a workload identity token, or an enterprise
	// IdP's identity assertion grant (ExchangeIDJAG), instead of Login or
	// client credentials.
	Assertion func(ctx context.Context, issuer, resource string) (string, error)
	// DPoP binds tokens to a key of this process (RFC 9449) where the
	// authorization server supports DPoP with ES256: every token request
	// and every request to the server carries a fresh proof. The key lives
	// in memory only, so such tokens do not outlive the process.
	DPoP bool
	// ClientMetadataURL is the HTTPS URL of this client's metadata
	// document: used as the client id where the authorization server
	// supports client ID metadata documents, instead of registering.
	ClientMetadataURL string
	// Scopes are asked for; empty: those of the challenge, else the
	// metadata's scopes_supported.
	Scopes []string
	// ClientName names a dynamically registered client (default mcpq).
	ClientName string
	// Store keeps the token across runs (nil: in memory only).
	Store TokenStore
	// Browse shows the person the authorization URL (Login); nil: a refused
	// request fails with ErrLoginRequired instead of signing in.
	Browse func(ctx context.Context, authURL string) error
	// RedirectAddr is the loopback address of Login's redirect listener
	// (default 127.0.0.1:0, a free port).
	RedirectAddr string
	// HTTP makes the requests to the authorization server (default
	// http.DefaultClient).
	HTTP *http.Client
	// Clock is the time source (default time.Now).
	Clock func() time.Time

	mu     sync.Mutex
	tok    *Token
	loaded bool     // Store was read
	dpop   *dpopKey // nil: bearer tokens
}

var _ Authorizer = (*OAuth)(nil)

// ErrLoginRequired: the server wants a token this client cannot get
// without a person (run mcpq login).
const ErrLoginRequired Sentinel = "the server requires credentials: an OAuth sign-in (mcpq login) or an API key (--key)"

// refreshMargin: a token this close to its expiry is refreshed first.
const refreshMargin = 30 * time.Second

// Token is an access token with what refreshes it.
type Token struct {
	// AccessToken is sent as the bearer token.
	AccessToken string `json:"access_token"`
	// RefreshToken gets a new access token (empty: none).
	RefreshToken string `json:"refresh_token,omitempty"`
	// Expiry is when AccessToken expires (zero: unknown).
	Expiry time.Time `json:"expiry,omitzero"`
	// Scope is the scope granted.
	Scope string `json:"scope,omitempty"`
	// Resource is the resource indicator the token is for.
	Resource string `json:"resource"`
	// Issuer is the authorization server's issuer identifier.
	Issuer string `json:"issuer"`
	// TokenEndpoint is where it is refreshed.
	TokenEndpoint string `json:"token_endpoint"`
	// ClientID, ClientSecret and AuthMethod are the client it was issued
	// to (a dynamically registered one is kept here).
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	AuthMethod   string `json:"auth_method,omitempty"`
	// TokenType is Bearer or DPoP.
	TokenType string `json:"token_type,omitempty"`
	// RedirectURI is the loopback redirect URI the client signed in with
	// (a dynamically registered client listens on it again).
	RedirectURI string `json:"redirect_uri,omitempty"`
}

// valid reports whether the token may be sent at now without a refresh.
func (t *Token) valid(now time.Time) bool {
	return t != nil && t.AccessToken != "" && (t.Expiry.IsZero() || now.Add(refreshMargin).Before(t.Expiry))
}

func (o *OAuth) now() time.Time {
	if o.Clock != nil {
		return o.Clock()
	}
	return time.Now()
}

func (o *OAuth) httpClient() *http.Client {
	if o.HTTP != nil {
		return o.HTTP
	}
	return http.DefaultClient
}

// Token is the access token to send ("" for none yet): the stored one,
// refreshed when it is about to expire; by client credentials or an
// assertion, a new one when there is none.
func (o *OAuth) Token(ctx context.Context) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, err := o.currentLocked(ctx)
	if t == nil || err != nil {
		return "", err
	}
	return t.AccessToken, nil
}

// Authorize implements Authorizer: the token as a bearer token, or with
// the DPoP scheme and a proof for this request when it is bound to a key.
func (o *OAuth) Authorize(ctx context.Context, req *http.Request) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, err := o.currentLocked(ctx)
	if t == nil || err != nil {
		return err
	}
	if o.dpop == nil || !strings.EqualFold(t.TokenType, "dpop") {
		req.Header.Set("Authorization", "Bearer "+t.AccessToken)
		return nil
	}
	proof, err := o.dpop.proof(req.Method, req.URL, t.AccessToken, o.dpop.rsNonce, o.now())
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "DPoP "+t.AccessToken)
	req.Header.Set("DPoP", proof)
	return nil
}

func (o *OAuth) currentLocked(ctx context.Context) (*Token, error) {
	if err := o.loadLocked(); err != nil {
		return nil, err
	}
	switch {
	case o.tok.valid(o.now()):
		return o.tok, nil
	case o.tok != nil && o.tok.RefreshToken != "":
		if err := o.refreshLocked(ctx); err == nil {
			return o.tok, nil
		}
	}
	if o.ClientCredentials || o.Assertion != nil {
		if err := o.authorizeLocked(ctx, Challenge{}); err != nil {
			return nil, err
		}
		return o.tok, nil
	}
	return nil, nil // the server's 401 starts the sign-in (Challenged)
}

// Challenged implements Authorizer: the token was refused, or lacks a
// scope. A refresh token gets a new one for a 401; otherwise the client
// authorizes again (with the challenge's scopes added for a 403).
func (o *OAuth) Challenged(ctx context.Context, ch Challenge) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ch.Params["error"] == "use_dpop_nonce" && ch.Nonce != "" && o.dpop != nil {
		o.dpop.rsNonce = ch.Nonce // RFC 9449 section 9: the same token, a proof with the nonce
		return nil
	}
	if ch.Status == http.StatusUnauthorized && o.tok != nil && o.tok.RefreshToken != "" && o.refreshLocked(ctx) == nil {
		return nil
	}
	return o.authorizeLocked(ctx, ch)
}

// Login signs in now (the authorization code flow, or client credentials
// when so configured) and stores the token. A client registered at an
// earlier sign-in is used again.
func (o *OAuth) Login(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.loadLocked(); err != nil {
		return err
	}
	return o.authorizeLocked(ctx, Challenge{})
}

// loadLocked reads the stored token, once.
func (o *OAuth) loadLocked() error {
	if o.loaded || o.Store == nil {
		return nil
	}
	t, err := o.Store.Load(o.Server)
	if err != nil {
		return err
	}
	o.tok, o.loaded = t, true
	return nil
}

// authorizeLocked gets a new token: discovery from the challenge (or the
// well-known metadata URIs), then client credentials or the authorization
// code flow.
func (o *OAuth) authorizeLocked(ctx context.Context, ch Challenge) error {
	if !o.ClientCredentials && o.Assertion == nil && o.Browse == nil {
		return ErrLoginRequired
	}
	d, err := o.discover(ctx, ch.ResourceMetadata())
	if err != nil {
		return err
	}
	scopes := o.scopesFor(ch, d)
	if o.DPoP && o.dpop == nil && slices.Contains(d.server.DPoPAlgs, "ES256") {
		if o.dpop, err = newDPoPKey(); err != nil {
			return err
		}
	}
	var t *Token
	switch {
	case o.Assertion != nil:
		t, err = o.jwtBearer(ctx, d, scopes)
	case o.ClientCredentials:
		t, err = o.clientCredentials(ctx, d, scopes)
	default:
		t, err = o.authorizationCode(ctx, d, scopes)
	}
	if err != nil {
		return err
	}
	return o.keepLocked(t)
}

// scopesFor: the configured scopes, with a 403's required ones added;
// else the challenge's; else the metadata's scopes_supported.
func (o *OAuth) scopesFor(ch Challenge, d *discovery) []string {
	scopes := slices.Clone(o.Scopes)
	if len(scopes) == 0 && o.tok != nil && ch.Status == http.StatusForbidden {
		scopes = strings.Fields(o.tok.Scope)
	}
	switch {
	case len(scopes) > 0 && ch.Status == http.StatusForbidden:
		for _, s := range ch.Scopes() {
			if !slices.Contains(scopes, s) {
				scopes = append(scopes, s)
			}
		}
	case len(scopes) == 0 && len(ch.Scopes()) > 0:
		scopes = ch.Scopes()
	case len(scopes) == 0:
		scopes = d.resource.ScopesSupported
	}
	return scopes
}

func (o *OAuth) keepLocked(t *Token) error {
	o.tok = t
	if o.Store != nil {
		return o.Store.Save(o.Server, t)
	}
	return nil
}

// refreshLocked trades the refresh token for a new access token; the
// refresh token is kept when the answer carries none.
func (o *OAuth) refreshLocked(ctx context.Context) error {
	old := o.tok
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {old.RefreshToken}}
	if old.Resource != "" {
		form.Set("resource", old.Resource)
	}
	cl := registered{ClientID: old.ClientID, ClientSecret: old.ClientSecret, AuthMethod: old.AuthMethod}
	t, err := o.tokenRequest(ctx, old.TokenEndpoint, old.Issuer, cl, form)
	if err != nil {
		return err
	}
	if t.RefreshToken == "" {
		t.RefreshToken = old.RefreshToken
	}
	t.Resource, t.Issuer, t.RedirectURI = old.Resource, old.Issuer, old.RedirectURI
	return o.keepLocked(t)
}

// clientCredentials is the client credentials grant (RFC 6749 4.4).
func (o *OAuth) clientCredentials(ctx context.Context, d *discovery, scopes []string) (*Token, error) {
	if o.ClientID == "" || o.ClientSecret == "" && o.ClientKey == nil {
		return nil, errors.New("oauth: client credentials need a client id and a secret or key")
	}
	return o.grant(ctx, d, url.Values{"grant_type": {"client_credentials"}}, scopes)
}

// grant asks the token endpoint for a token for the resource with scopes
// by form's grant, as the configured client.
func (o *OAuth) grant(ctx context.Context, d *discovery, form url.Values, scopes []string) (*Token, error) {
	form.Set("resource", d.resourceID)
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	t, err := o.tokenRequest(ctx, d.server.TokenEndpoint, d.server.Issuer, o.configured(d), form)
	if err != nil {
		return nil, err
	}
	t.Resource, t.Issuer = d.resourceID, d.server.Issuer
	return t, nil
}

// authMethod is the token endpoint authentication: the configured one,
// else client_secret_basic for a secret (client_secret_post when the
// server lists only that), else none.
func (o *OAuth) authMethod(d *discovery, hasSecret bool) string {
	switch {
	case o.AuthMethod != "":
		return o.AuthMethod
	case o.ClientKey != nil:
		return "private_key_jwt"
	case !hasSecret:
		return "none"
	case len(d.server.TokenEndpointAuthMethods) > 0 && !slices.Contains(d.server.TokenEndpointAuthMethods, "client_secret_basic") &&
		slices.Contains(d.server.TokenEndpointAuthMethods, "client_secret_post"):
		return "client_secret_post"
	}
	return "client_secret_basic"
}

// configured is the client configured (ClientID), as the token endpoint
// authenticates it.
func (o *OAuth) configured(d *discovery) registered {
	return registered{ClientID: o.ClientID, ClientSecret: o.ClientSecret, AuthMethod: o.authMethod(d, o.ClientSecret != "")}
}

// registered is a client as the token endpoint authenticates it.
type registered struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	AuthMethod   string `json:"token_endpoint_auth_method"`
}

// tokenResponse is the token endpoint's answer (RFC 6749 5.1 and 5.2).
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
	Error        string `json:"error"`
	Description  string `json:"error_description"`
}

// tokenRequest posts form to the token endpoint as client cl.
func (o *OAuth) tokenRequest(ctx context.Context, endpoint, issuer string, cl registered, form url.Values) (*Token, error) {
	if endpoint == "" {
		return nil, errors.New("oauth: the authorization server has no token endpoint")
	}
	switch cl.AuthMethod {
	case "private_key_jwt":
		a, err := o.clientAssertion(cl.ClientID, issuer)
		if err != nil {
			return nil, err
		}
		form.Set("client_id", cl.ClientID)
		form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		form.Set("client_assertion", a)
	case "client_secret_post":
		form.Set("client_id", cl.ClientID)
		form.Set("client_secret", cl.ClientSecret)
	case "client_secret_basic":
	default:
		form.Set("client_id", cl.ClientID)
	}
	tr, status, err := o.postToken(ctx, endpoint, cl, form)
	switch {
	case err != nil:
		return nil, fmt.Errorf("oauth: token endpoint: %w", err)
	case tr.Error != "":
		return nil, fmt.Errorf("oauth: token endpoint refused (%s): %s %s", form.Get("grant_type"), tr.Error, tr.Description)
	case status != http.StatusOK || tr.AccessToken == "":
		return nil, fmt.Errorf("oauth: token endpoint answered HTTP %d without an access token", status)
	case tr.TokenType != "" && !strings.EqualFold(tr.TokenType, "bearer") && !(o.dpop != nil && strings.EqualFold(tr.TokenType, "dpop")):
		return nil, fmt.Errorf("oauth: token type %q, want Bearer", tr.TokenType)
	}
	t := &Token{AccessToken: tr.AccessToken, RefreshToken: tr.RefreshToken, Scope: tr.Scope, TokenType: tr.TokenType,
		TokenEndpoint: endpoint, ClientID: cl.ClientID, ClientSecret: cl.ClientSecret, AuthMethod: cl.AuthMethod}
	if tr.Scope == "" {
		t.Scope = form.Get("scope")
	}
	if tr.ExpiresIn > 0 {
		t.Expiry = o.now().Add(time.Duration(tr.ExpiresIn) * time.Second)
	}
	return t, nil
}

// postToken posts form to the token endpoint, with a DPoP proof when
// tokens are bound to a key (sent again, once, with the nonce the server
// asks for: RFC 9449 section 8).
func (o *OAuth) postToken(ctx context.Context, endpoint string, cl registered, form url.Values) (tokenResponse, int, error) {
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
		if err != nil {
			return tokenResponse{}, 0, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		if cl.AuthMethod == "client_secret_basic" {
			req.SetBasicAuth(url.QueryEscape(cl.ClientID), url.QueryEscape(cl.ClientSecret))
		}
		if o.dpop != nil {
			proof, err := o.dpop.proof(http.MethodPost, req.URL, "", o.dpop.asNonce, o.now())
			if err != nil {
				return tokenResponse{}, 0, err
			}
			req.Header.Set("DPoP", proof)
		}
		var tr tokenResponse
		status, h, err := o.exchange(req, &tr)
		if nonce := h.Get("DPoP-Nonce"); o.dpop != nil && nonce != "" {
			o.dpop.asNonce = nonce
			if tr.Error == "use_dpop_nonce" && attempt == 0 {
				continue
			}
		}
		return tr, status, err
	}
}

// doJSON sends req and decodes a JSON answer of any status into v.
func (o *OAuth) doJSON(req *http.Request, v any) (int, error) {
	status, _, err := o.exchange(req, v)
	return status, err
}

// exchange is doJSON with the response's header.
func (o *OAuth) exchange(req *http.Request, v any) (int, http.Header, error) {
	resp, err := o.httpClient().Do(req)
	if err != nil {
		return 0, http.Header{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, resp.Header, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return resp.StatusCode, resp.Header, fmt.Errorf("%s %s: HTTP %d, not JSON: %q", req.Method, req.URL, resp.StatusCode, truncate(b))
	}
	return resp.StatusCode, resp.Header, nil
}

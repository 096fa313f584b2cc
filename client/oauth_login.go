package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// callbackPath is the loopback redirect URI's path.
const callbackPath = "/callback"

// authorizationCode is the authorization code grant with PKCE (S256) on a
// loopback redirect (RFC 8252 section 7.3): a listener on 127.0.0.1, the
// authorization URL shown to the person (Browse), the code that comes
// back traded for a token with the verifier and the resource.
func (o *OAuth) authorizationCode(ctx context.Context, d *discovery, scopes []string) (*Token, error) {
	if !slices.Contains(d.server.CodeChallengeMethods, "S256") {
		return nil, fmt.Errorf("oauth: authorization server %s does not support PKCE with S256", d.server.Issuer)
	}
	if d.server.AuthorizationEndpoint == "" {
		return nil, fmt.Errorf("oauth: authorization server %s has no authorization endpoint", d.server.Issuer)
	}
	ln, cl, err := o.listenAndClient(ctx, d)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	redirect := "http://" + ln.Addr().String() + callbackPath
	verifier, state := randomString(), randomString()
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {cl.ClientID}, "redirect_uri": {redirect},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"state": {state}, "resource": {d.resourceID}}
	if len(scopes) > 0 {
		q.Set("scope", strings.Join(scopes, " "))
	}
	authURL := d.server.AuthorizationEndpoint
	if strings.Contains(authURL, "?") {
		authURL += "&" + q.Encode()
	} else {
		authURL += "?" + q.Encode()
	}
	codes := make(chan callback, 1)
	srv := &http.Server{Handler: callbackHandler(state, d.server.Issuer, d.server.IssParameter, codes)}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	if err := o.Browse(ctx, authURL); err != nil {
		return nil, err
	}
	var cb callback
	select {
	case cb = <-codes:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if cb.err != nil {
		return nil, cb.err
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {cb.code}, "redirect_uri": {redirect},
		"code_verifier": {verifier}, "resource": {d.resourceID}}
	t, err := o.tokenRequest(ctx, d.server.TokenEndpoint, d.server.Issuer, cl, form)
	if err != nil {
		return nil, err
	}
	t.Resource, t.Issuer, t.RedirectURI = d.resourceID, d.server.Issuer, redirect
	return t, nil
}

// listenAndClient opens the redirect listener and picks the client: the
// configured one, the one registered before with this issuer (listening
// on its redirect URI's port again), or a new registration (RFC 7591).
func (o *OAuth) listenAndClient(ctx context.Context, d *discovery) (net.Listener, registered, error) {
	if o.ClientID != "" {
		ln, err := listenLoopback(o.RedirectAddr)
		return ln, o.configured(d), err
	}
	if o.ClientMetadataURL != "" && d.server.ClientIDMetadataDocument {
		ln, err := listenLoopback(o.RedirectAddr)
		return ln, registered{ClientID: o.ClientMetadataURL, AuthMethod: "none"}, err
	}
	if prev := o.tok; prev != nil && prev.Issuer == d.server.Issuer && prev.ClientID != "" && prev.RedirectURI != "" {
		if u, err := url.Parse(prev.RedirectURI); err == nil {
			if ln, err := listenLoopback(u.Host); err == nil {
				return ln, registered{ClientID: prev.ClientID, ClientSecret: prev.ClientSecret, AuthMethod: prev.AuthMethod}, nil
			}
		}
	}
	ln, err := listenLoopback(o.RedirectAddr)
	if err != nil {
		return nil, registered{}, err
	}
	cl, err := o.register(ctx, d, "http://"+ln.Addr().String()+callbackPath)
	if err != nil {
		ln.Close()
	}
	return ln, cl, err
}

// listenLoopback listens on addr (default 127.0.0.1:0), which must be a
// loopback address.
func listenLoopback(addr string) (net.Listener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("oauth: redirect address %q is not a loopback IP and port", addr)
	}
	return net.Listen("tcp", addr)
}

// register registers a public native client for redirect (RFC 7591).
func (o *OAuth) register(ctx context.Context, d *discovery, redirect string) (registered, error) {
	if d.server.RegistrationEndpoint == "" {
		return registered{}, fmt.Errorf("oauth: authorization server %s has no registration endpoint: configure a client id", d.server.Issuer)
	}
	name := o.ClientName
	if name == "" {
		name = "mcpq"
	}
	body, _ := json.Marshal(map[string]any{"client_name": name, "redirect_uris": []string{redirect},
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"token_endpoint_auth_method": "none", "application_type": "native"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.server.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return registered{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	var cl registered
	var refusal struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	var raw json.RawMessage
	status, err := o.doJSON(req, &raw)
	if err == nil {
		_ = json.Unmarshal(raw, &cl)
		_ = json.Unmarshal(raw, &refusal)
	}
	switch {
	case err != nil:
		return registered{}, fmt.Errorf("oauth: client registration: %w", err)
	case status/100 != 2 || cl.ClientID == "":
		return registered{}, fmt.Errorf("oauth: client registration refused (HTTP %d): %s %s", status, refusal.Error, refusal.Description)
	}
	if cl.AuthMethod == "" {
		cl.AuthMethod = "client_secret_basic" // RFC 7591's default
		if cl.ClientSecret == "" {
			cl.AuthMethod = "none"
		}
	}
	return cl, nil
}

// callback is what came back to the redirect URI.
type callback struct {
	code string
	err  error
}

// callbackHandler answers the redirect: the code when state matches and
// iss, when sent (required when the server advertises it), names the
// issuer exactly (RFC 9207), else the error.
func callbackHandler(state, issuer string, issRequired bool, out chan<- callback) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != callbackPath {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		var cb callback
		switch {
		case q.Get("state") != state:
			cb.err = errors.New("oauth: the redirect's state does not match the request's")
		case q.Get("error") != "":
			cb.err = fmt.Errorf("oauth: authorization refused: %s %s", q.Get("error"), q.Get("error_description"))
		case issRequired && !q.Has("iss"):
			cb.err = errors.New("oauth: the authorization server promised iss in its redirect (RFC 9207) and sent none")
		case q.Has("iss") && q.Get("iss") != issuer:
			cb.err = fmt.Errorf("oauth: the redirect names issuer %q, not %q", q.Get("iss"), issuer)
		case q.Get("code") == "":
			cb.err = errors.New("oauth: the redirect carries no code")
		default:
			cb.code = q.Get("code")
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if cb.err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintln(w, cb.err)
		} else {
			fmt.Fprintln(w, "Signed in to mcpq. You may close this window.")
		}
		select {
		case out <- cb:
		default: // a second visit: the first one counts
		}
	})
}

// randomString is 32 random bytes, base64url (a PKCE verifier, a state).
func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

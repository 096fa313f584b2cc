package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// issuer is one trusted authorization server: its metadata (discovered
// once, RFC 8414 or OpenID discovery) and its signing keys (JWKS), cached.
// Keys are fetched again for a kid the cache does not hold, at most every
// minRefresh, so a stream of tokens naming made-up keys costs one fetch per
// minRefresh, and in the background every maxAge: a known key never waits
// on a fetch, so the steady state has no network on the request path.
type issuer struct {
	id         string
	httpClient *http.Client
	clock      func() time.Time
	minRefresh time.Duration

	mu            sync.Mutex
	meta          *issuerMetadata
	metaErr       error
	metaTried     time.Time
	keys          map[string]jose.JSONWebKey // by kid ("" for a key without one)
	keysFetchedAt time.Time
	fetchErr      error         // the last fetch's
	fetching      chan struct{} // closed when the fetch under way ends
	maxAge        time.Duration
}

// issuerMetadata is what mcpq reads of an authorization server's metadata.
type issuerMetadata struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
	// The dashboard's sign-in (oauth_dashboard.go) sends the person to
	// the first and trades the code at the second.
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
}

func newIssuer(id string, hc *http.Client, clock func() time.Time, maxAge time.Duration) *issuer {
	return &issuer{id: id, httpClient: hc, clock: clock, maxAge: maxAge, minRefresh: min(10*time.Second, maxAge)}
}

// metadata discovers the issuer's metadata, once; a failure is tried again
// after minRefresh.
func (is *issuer) metadata(ctx context.Context) (*issuerMetadata, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.meta != nil {
		return is.meta, nil
	}
	if is.metaErr != nil && is.clock().Sub(is.metaTried) < is.minRefresh {
		return nil, is.metaErr
	}
	is.metaTried = is.clock()
	is.meta, is.metaErr = is.discover(ctx)
	return is.meta, is.metaErr
}

// discover reads the RFC 8414 metadata, else OpenID Connect discovery, at
// the well-known URIs of the issuer identifier, and checks that the
// document names the same issuer (RFC 8414 section 3.3).
func (is *issuer) discover(ctx context.Context) (*issuerMetadata, error) {
	base, path := splitIssuer(is.id)
	urls := []string{
		base + "/.well-known/oauth-authorization-server" + path,
		strings.TrimSuffix(is.id, "/") + "/.well-known/openid-configuration",
	}
	var errs []error
	for _, u := range urls {
		var m issuerMetadata
		if err := is.getJSON(ctx, u, &m); err != nil {
			errs = append(errs, err)
			continue
		}
		if m.Issuer != is.id {
			errs = append(errs, fmt.Errorf("%s names issuer %q, not %q", u, m.Issuer, is.id))
			continue
		}
		return &m, nil
	}
	return nil, fmt.Errorf("oauth: discovering issuer %s: %w", is.id, errors.Join(errs...))
}

// splitIssuer splits an issuer identifier into its origin and its path.
func splitIssuer(id string) (origin, path string) {
	scheme, rest, _ := strings.Cut(id, "://")
	host, p, _ := strings.Cut(rest, "/")
	if p = strings.TrimSuffix(p, "/"); p != "" {
		p = "/" + p
	}
	return scheme + "://" + host, p
}

func (is *issuer) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := is.httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// key returns the signing key named kid. A kid the cache does not hold
// fetches the JWKS (at most every minRefresh; concurrent requests share one
// fetch); a cache older than maxAge is fetched again in the background
// while it keeps serving, so a key the issuer rotated out stops verifying
// within maxAge. ok false: no such key, the token is refused.
func (is *issuer) key(ctx context.Context, kid string) (jose.JSONWebKey, bool, error) {
	for {
		is.mu.Lock()
		k, ok := is.keys[kid]
		age := is.clock().Sub(is.keysFetchedAt)
		switch {
		case ok:
			if age >= is.maxAge && is.fetching == nil {
				is.fetchLocked()
			}
			is.mu.Unlock()
			return k, true, nil
		case is.fetching == nil && is.keys != nil && age < is.minRefresh:
			err := is.fetchErr
			is.mu.Unlock()
			return jose.JSONWebKey{}, false, err
		}
		wait := is.fetching
		if wait == nil {
			wait = is.fetchLocked()
		}
		is.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return jose.JSONWebKey{}, false, ctx.Err()
		}
	}
}

// hasKey reports whether the cached JWKS still holds kid, so a token
// verified before with a key the issuer has since rotated out is refused.
func (is *issuer) hasKey(kid string) bool {
	is.mu.Lock()
	defer is.mu.Unlock()
	_, ok := is.keys[kid]
	if ok && is.fetching == nil && is.clock().Sub(is.keysFetchedAt) >= is.maxAge {
		is.fetchLocked()
	}
	return ok
}

// fetchLocked starts a JWKS fetch; the channel closes when it has ended.
// A failed fetch keeps the keys held before.
func (is *issuer) fetchLocked() chan struct{} {
	done := make(chan struct{})
	is.fetching = done
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		keys, err := is.fetchKeys(ctx)
		cancel()
		is.mu.Lock()
		is.fetching, is.keysFetchedAt, is.fetchErr = nil, is.clock(), err
		if err == nil {
			is.keys = keys
		} else if is.keys == nil {
			is.keys = map[string]jose.JSONWebKey{}
		}
		is.mu.Unlock()
		close(done)
	}()
	return done
}

// fetchKeys reads the issuer's JWKS: its public signing keys by kid.
func (is *issuer) fetchKeys(ctx context.Context) (map[string]jose.JSONWebKey, error) {
	m, err := is.metadata(ctx)
	if err != nil {
		return nil, err
	}
	if m.JWKSURI == "" {
		return nil, fmt.Errorf("oauth: issuer %s publishes no jwks_uri", is.id)
	}
	var set jose.JSONWebKeySet
	if err := is.getJSON(ctx, m.JWKSURI, &set); err != nil {
		return nil, fmt.Errorf("oauth: issuer %s keys: %w", is.id, err)
	}
	keys := map[string]jose.JSONWebKey{}
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" || !k.IsPublic() || !k.Valid() {
			continue // encryption keys, and (wrongly published) private or symmetric keys
		}
		keys[k.KeyID] = k
	}
	return keys, nil
}

package frontend

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/mcpq/mcpq/internal/access"
)

// AnonymousPrincipal is the principal of unauthenticated requests where
// anonymous access is allowed.
const AnonymousPrincipal = "anonymous"

// Authenticator turns a request into the principal it acts for. An error
// answers HTTP 401 (an *UnavailableError 503). API keys here; an OAuth or
// JWT verifier implements the same interface without touching task code.
type Authenticator interface {
	Authenticate(r *http.Request) (principal string, err error)
}

// Anonymous lets every request act as AnonymousPrincipal (mcpq dev without keys).
type Anonymous struct{}

// Authenticate implements Authenticator.
func (Anonymous) Authenticate(*http.Request) (string, error) { return AnonymousPrincipal, nil }

// Authentication failures.
var (
	ErrNoCredentials  = errors.New("missing Authorization: Bearer <key>")
	ErrBadCredentials = errors.New("invalid or revoked API key")
)

// UnavailableError is an authenticator that could not decide (its store is
// down): the request gets 503, not 401.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string { return "authentication unavailable: " + e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

// KeyLookup finds the principal of a managed API key (mcpq's managed keys
// in Redis are one: mcpq keys create).
type KeyLookup interface {
	LookupKey(ctx context.Context, key string) (principal string, ok bool, err error)
}

// KeyAuth authenticates "Authorization: Bearer <key>" against static keys
// and managed keys (looked up in Redis on every request, so a revocation
// holds on every replica at once). With AllowAnonymous, a request without
// an Authorization header is AnonymousPrincipal; a wrong key is never.
type KeyAuth struct {
	static         map[string]string // SHA-256 of the key → principal
	managed        KeyLookup
	allowAnonymous bool
}

// NewKeyAuth builds a KeyAuth from static keys (key → principal), an
// optional managed-key lookup and the anonymous policy.
func NewKeyAuth(static map[string]string, managed KeyLookup, allowAnonymous bool) *KeyAuth {
	a := &KeyAuth{static: map[string]string{}, managed: managed, allowAnonymous: allowAnonymous}
	for k, p := range static {
		a.static[access.HashKey(k)] = p
	}
	return a
}

// Authenticate implements Authenticator.
func (a *KeyAuth) Authenticate(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		if a.allowAnonymous {
			return AnonymousPrincipal, nil
		}
		return "", ErrNoCredentials
	}
	scheme, key, ok := strings.Cut(h, " ")
	key = strings.TrimSpace(key)
	if !ok || !strings.EqualFold(scheme, "Bearer") || key == "" {
		return "", ErrNoCredentials
	}
	// Keys are compared by their hash, so lookups take the same time
	// whatever prefix of a key an attacker guessed.
	if p, ok := a.static[access.HashKey(key)]; ok {
		return p, nil
	}
	if a.managed != nil {
		p, ok, err := a.managed.LookupKey(r.Context(), key)
		if err != nil {
			return "", &UnavailableError{err}
		}
		if ok {
			return p, nil
		}
	}
	return "", ErrBadCredentials
}

package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// introspection is what mcpq reads of an RFC 7662 answer.
type introspection struct {
	Active   bool            `json:"active"`
	Scope    string          `json:"scope"`
	Sub      string          `json:"sub"`
	ClientID string          `json:"client_id"`
	Exp      int64           `json:"exp"`
	Nbf      int64           `json:"nbf"`
	Iss      string          `json:"iss"`
	Aud      json.RawMessage `json:"aud"`
	// raw holds every member, for a configured principal claim.
	raw map[string]any
}

// refusedTTL is how long an inactive opaque token is remembered, so junk
// tokens do not each cost an introspection request.
const refusedTTL = 5 * time.Second

// introspect checks an opaque token at each issuer's introspection
// endpoint in turn (RFC 7662): the first to call it active, for this
// resource, grants it.
func (o *OAuth) introspect(ctx context.Context, token string, now time.Time) (*grant, error) {
	if o.cfg.IntrospectionClientID == "" {
		return nil, ErrBadCredentials
	}
	var unavailable error
	for _, is := range o.order {
		m, err := is.metadata(ctx)
		if err != nil || m.IntrospectionEndpoint == "" {
			unavailable = errors.Join(unavailable, err)
			continue
		}
		in, err := o.postIntrospection(ctx, m.IntrospectionEndpoint, token)
		if err != nil {
			unavailable = errors.Join(unavailable, err)
			continue
		}
		if !in.Active || (in.Iss != "" && in.Iss != is.id) {
			continue
		}
		return o.introspected(is.id, in, now)
	}
	if unavailable != nil {
		return nil, &UnavailableError{unavailable}
	}
	o.cache.put(tokenHash(token), &grant{until: now.Add(refusedTTL)})
	return nil, errTokenInactive
}

// introspected turns an active answer into a grant, checked as a JWT is.
func (o *OAuth) introspected(iss string, in *introspection, now time.Time) (*grant, error) {
	var aud []string
	if json.Unmarshal(in.Aud, &aud) != nil {
		var one string
		_ = json.Unmarshal(in.Aud, &one)
		aud = []string{one}
	}
	switch {
	case !slices.Contains(aud, o.cfg.Resource):
		return nil, errTokenAudience
	case in.Exp != 0 && !now.Before(time.Unix(in.Exp, 0).Add(o.cfg.Leeway)):
		return nil, errTokenExpired
	case in.Nbf != 0 && now.Add(o.cfg.Leeway).Before(time.Unix(in.Nbf, 0)):
		return nil, errTokenNotYet
	}
	p, err := o.principalOf(iss, in.raw, in.ClientID)
	if err != nil {
		return nil, err
	}
	until := now.Add(o.cfg.IntrospectionCacheTTL)
	if exp := time.Unix(in.Exp, 0); in.Exp != 0 && exp.Before(until) {
		until = exp
	}
	return &grant{principal: p, scopes: strings.Fields(in.Scope), until: until}, nil
}

func (o *OAuth) postIntrospection(ctx context.Context, endpoint, token string) (*introspection, error) {
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(o.cfg.IntrospectionClientID), url.QueryEscape(o.cfg.IntrospectionClientSecret))
	resp, err := o.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oauth: introspection: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("oauth: introspection at %s: %s", endpoint, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("oauth: introspection answer: %w", err)
	}
	var in introspection
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("oauth: introspection answer: %w", err)
	}
	if err := json.Unmarshal(body, &in.raw); err != nil {
		return nil, fmt.Errorf("oauth: introspection answer: %w", err)
	}
	return &in, nil
}

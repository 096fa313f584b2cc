package client

import (
	"context"
	"io"
	"net/http"
	"strings"
)

// Authorizer supplies the bearer token of a Client's requests (Client.Auth)
// and gets a new one when the server refuses it. OAuth is the one of this
// package (docs/client.md, "OAuth").
type Authorizer interface {
	// Authorize sets the request's credentials: Authorization (and a DPoP
	// proof where the token is bound to a key); none when it has no token.
	Authorize(ctx context.Context, req *http.Request) error
	// Challenged is told of a 401, or a 403 with error="insufficient_scope",
	// and its WWW-Authenticate challenge. nil means a new token is ready:
	// the request is sent again, once.
	Challenged(ctx context.Context, ch Challenge) error
}

// Challenge is a Bearer WWW-Authenticate challenge (RFC 6750 section 3,
// RFC 9728 section 5.1) of a refused request.
type Challenge struct {
	// Status is the HTTP status (401 or 403).
	Status int
	// Scheme is the challenge's scheme, "bearer" or "dpop" ("" for none).
	Scheme string
	// Params are the challenge's parameters by lower-case name:
	// resource_metadata, scope, error, error_description, realm.
	Params map[string]string
	// Nonce is the response's DPoP-Nonce header (RFC 9449 section 9).
	Nonce string
}

// ResourceMetadata is the URL of the server's protected resource metadata
// the challenge names ("" when it names none).
func (ch Challenge) ResourceMetadata() string { return ch.Params["resource_metadata"] }

// Scopes are the scopes the challenge asks for.
func (ch Challenge) Scopes() []string { return strings.Fields(ch.Params["scope"]) }

// ParseChallenge reads the Bearer (else the DPoP) challenge of
// WWW-Authenticate values; Params is empty when there is none.
func ParseChallenge(status int, values []string) Challenge {
	ch := Challenge{Status: status, Params: map[string]string{}}
	for _, scheme := range []string{"bearer", "dpop"} {
		if parseScheme(&ch, values, scheme) {
			break
		}
	}
	return ch
}

// parseScheme fills ch from the first challenge of scheme in values.
func parseScheme(ch *Challenge, values []string, scheme string) bool {
	for _, v := range values {
		rest, ok := cutScheme(v, scheme)
		if !ok {
			continue
		}
		ch.Scheme = scheme
		for rest = strings.TrimSpace(rest); rest != ""; {
			var name, val string
			name, val, rest = nextParam(rest)
			if name == "" {
				break
			}
			ch.Params[strings.ToLower(name)] = val
		}
		return true
	}
	return false
}

// cutScheme finds the challenge of scheme in a WWW-Authenticate value and
// returns what follows it.
func cutScheme(v, scheme string) (string, bool) {
	lower := strings.ToLower(v)
	for i := 0; i < len(lower); {
		j := strings.Index(lower[i:], scheme)
		if j < 0 {
			return "", false
		}
		j += i
		end := j + len(scheme)
		before := j == 0 || lower[j-1] == ' ' || lower[j-1] == ','
		after := end == len(lower) || lower[end] == ' '
		if before && after {
			return v[end:], true
		}
		i = end
	}
	return "", false
}

// nextParam reads one auth-param (name=token or name="quoted") and returns
// the rest after its comma.
func nextParam(s string) (name, val, rest string) {
	s = strings.TrimLeft(s, " ,")
	eq := strings.IndexByte(s, '=')
	if eq <= 0 {
		return "", "", ""
	}
	name, s = strings.TrimSpace(s[:eq]), strings.TrimLeft(s[eq+1:], " ")
	if strings.HasPrefix(s, `"`) {
		var b strings.Builder
		i := 1
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
			}
			b.WriteByte(s[i])
		}
		_, rest, _ = strings.Cut(s[min(i+1, len(s)):], ",")
		return name, b.String(), rest
	}
	val, rest, _ = strings.Cut(s, ",")
	return name, strings.TrimSpace(val), rest
}

// send sends the request build makes, with the Authorizer's credentials;
// a refusal the Authorizer answers with a new token is sent again, once
// (and once more for a DPoP nonce the server asks for).
func (c *Client) send(ctx context.Context, build func() (*http.Request, error)) (*http.Response, error) {
	retries, nonces := 0, 0
	for {
		req, err := build()
		if err != nil {
			return nil, err
		}
		if c.Auth != nil {
			if err := c.Auth.Authorize(ctx, req); err != nil {
				return nil, err
			}
		}
		resp, err := c.httpClient().Do(req)
		if err != nil || c.Auth == nil || !refused(resp) {
			return resp, err
		}
		ch := ParseChallenge(resp.StatusCode, resp.Header.Values("WWW-Authenticate"))
		ch.Nonce = resp.Header.Get("DPoP-Nonce")
		if ch.Params["error"] == "use_dpop_nonce" && ch.Nonce != "" && nonces == 0 {
			nonces++
		} else if retries++; retries > 1 {
			return resp, nil
		}
		if err := c.Auth.Challenged(ctx, ch); err != nil {
			_ = resp.Body.Close()
			return nil, err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		_ = resp.Body.Close()
	}
}

// refused: a 401, or a 403 whose challenge says insufficient_scope (a
// token with more scopes may pass).
func refused(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return true
	case http.StatusForbidden:
		return ParseChallenge(resp.StatusCode, resp.Header.Values("WWW-Authenticate")).Params["error"] == "insufficient_scope"
	}
	return false
}

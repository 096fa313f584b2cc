package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpq/mcpq/proto"
)

// resourceMetadata is what OAuth reads of protected resource metadata
// (RFC 9728).
type resourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// serverMetadata is what OAuth reads of authorization server metadata
// (RFC 8414, or OpenID Connect discovery).
type serverMetadata struct {
	Issuer                   string   `json:"issuer"`
	AuthorizationEndpoint    string   `json:"authorization_endpoint"`
	TokenEndpoint            string   `json:"token_endpoint"`
	RegistrationEndpoint     string   `json:"registration_endpoint"`
	CodeChallengeMethods     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethods []string `json:"token_endpoint_auth_methods_supported"`
	ClientIDMetadataDocument bool     `json:"client_id_metadata_document_supported"`
	IssParameter             bool     `json:"authorization_response_iss_parameter_supported"`
	DPoPAlgs                 []string `json:"dpop_signing_alg_values_supported"`
}

// discovery is what a sign-in needs: the resource indicator to ask for,
// the resource's metadata and its authorization server's.
type discovery struct {
	resourceID string
	resource   resourceMetadata
	server     serverMetadata
}

// discover reads the protected resource metadata at metaURL (from the
// challenge) or, without one, at the well-known URIs of the server's URL
// (path-suffixed first, RFC 9728 section 3.1), then the metadata of the
// first authorization server it names.
func (o *OAuth) discover(ctx context.Context, metaURL string) (*discovery, error) {
	su, err := url.Parse(o.Server)
	if err != nil || su.Host == "" {
		return nil, fmt.Errorf("oauth: server URL %q is not absolute", o.Server)
	}
	d := &discovery{resourceID: canonicalURI(su)}
	candidates := []string{metaURL}
	if metaURL == "" {
		candidates = wellKnown(su, "oauth-protected-resource")
	}
	var errs []error
	for _, u := range candidates {
		if err := o.getJSON(ctx, u, &d.resource); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = nil
		break
	}
	if errs != nil {
		return nil, fmt.Errorf("oauth: no protected resource metadata: %w", errors.Join(errs...))
	}
	if d.resource.Resource != "" {
		if !coversResource(d.resource.Resource, su) {
			return nil, fmt.Errorf("oauth: the metadata is for resource %q, not %s", d.resource.Resource, d.resourceID)
		}
		d.resourceID = d.resource.Resource
	}
	if len(d.resource.AuthorizationServers) == 0 {
		return nil, errors.New("oauth: the protected resource metadata names no authorization server")
	}
	d.server, err = o.serverMetadata(ctx, d.resource.AuthorizationServers[0])
	return d, err
}

// serverMetadata reads an issuer's metadata: RFC 8414's path-inserted URI,
// OpenID discovery's path-inserted and path-appended ones.
func (o *OAuth) serverMetadata(ctx context.Context, issuer string) (serverMetadata, error) {
	iu, err := url.Parse(issuer)
	if err != nil || iu.Host == "" {
		return serverMetadata{}, fmt.Errorf("oauth: authorization server %q is not an absolute URL", issuer)
	}
	candidates := wellKnown(iu, "oauth-authorization-server")[:1]
	candidates = append(candidates, wellKnown(iu, "openid-configuration")[0])
	if p := strings.TrimSuffix(iu.Path, "/"); p != "" {
		candidates = append(candidates, iu.Scheme+"://"+iu.Host+p+"/.well-known/openid-configuration")
	}
	var errs []error
	for _, u := range candidates {
		var m serverMetadata
		if err := o.getJSON(ctx, u, &m); err != nil {
			errs = append(errs, err)
			continue
		}
		if strings.TrimSuffix(m.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			errs = append(errs, fmt.Errorf("%s names issuer %q, not %q", u, m.Issuer, issuer))
			continue
		}
		return m, nil
	}
	return serverMetadata{}, fmt.Errorf("oauth: no metadata for authorization server %s: %w", issuer, errors.Join(errs...))
}

// wellKnown are the well-known URIs of name for u: with u's path appended
// (when it has one), then at the root.
func wellKnown(u *url.URL, name string) []string {
	origin := u.Scheme + "://" + u.Host + "/.well-known/" + name
	if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" {
		return []string{origin + p, origin}
	}
	return []string{origin}
}

// canonicalURI is u as a resource indicator: lower-case scheme and host,
// no fragment (RFC 8707 section 2, the MCP authorization rules).
func canonicalURI(u *url.URL) string {
	c := *u
	c.Scheme, c.Host, c.Fragment, c.RawFragment = strings.ToLower(u.Scheme), strings.ToLower(u.Host), "", ""
	return c.String()
}

// coversResource reports whether resource (from the metadata) is the
// server's URL or a prefix of it on the same origin.
func coversResource(resource string, server *url.URL) bool {
	r, err := url.Parse(resource)
	if err != nil || !strings.EqualFold(r.Scheme, server.Scheme) || !strings.EqualFold(r.Host, server.Host) {
		return false
	}
	rp, sp := strings.TrimSuffix(r.Path, "/"), strings.TrimSuffix(server.Path, "/")
	return rp == sp || strings.HasPrefix(sp, rp+"/")
}

// getJSON GETs u and decodes a 200 JSON answer into v.
func (o *OAuth) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("MCP-Protocol-Version", proto.ProtocolVersion)
	status, err := o.doJSON(req, v)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("GET %s: HTTP %d", u, status)
	}
	return err
}

package client

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// jwtBearer is the JWT bearer grant (RFC 7523 section 2.1): the assertion
// (a workload identity token, say) traded for an access token. A refusal
// is final: no retry, no other grant.
func (o *OAuth) jwtBearer(ctx context.Context, d *discovery, scopes []string) (*Token, error) {
	assertion, err := o.Assertion(ctx, d.server.Issuer, d.resourceID)
	if err != nil {
		return nil, fmt.Errorf("oauth: assertion: %w", err)
	}
	return o.grant(ctx, d, url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {assertion}}, scopes)
}

// ExchangeIDJAG is the enterprise-managed authorization's first step
// (io.modelcontextprotocol/enterprise-managed-authorization): the user's ID
// token from the enterprise IdP exchanged there (RFC 8693 token exchange,
// as client idpClientID) for an identity assertion authorization grant
// (ID-JAG) for the authorization server issuer and the resource, which
// OAuth.Assertion then presents in the JWT bearer grant.
func ExchangeIDJAG(ctx context.Context, hc *http.Client, idpTokenEndpoint, idpClientID, idToken, issuer, resource string) (string, error) {
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"subject_token": {idToken}, "subject_token_type": {"urn:ietf:params:oauth:token-type:id_token"},
		"requested_token_type": {"urn:ietf:params:oauth:token-type:id-jag"},
		"audience":             {issuer}, "resource": {resource}, "client_id": {idpClientID}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, idpTokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	var tr struct {
		tokenResponse
		IssuedTokenType string `json:"issued_token_type"`
	}
	status, err := (&OAuth{HTTP: hc}).doJSON(req, &tr)
	switch {
	case err != nil:
		return "", fmt.Errorf("oauth: token exchange at the IdP: %w", err)
	case tr.Error != "" || status != http.StatusOK || tr.AccessToken == "":
		return "", fmt.Errorf("oauth: the IdP refused the token exchange (HTTP %d): %s %s", status, tr.Error, tr.Description)
	case tr.IssuedTokenType != "urn:ietf:params:oauth:token-type:id-jag":
		return "", fmt.Errorf("oauth: the IdP issued a %q, not an ID-JAG", tr.IssuedTokenType)
	}
	return tr.AccessToken, nil
}

// clientAssertion is the private_key_jwt client authentication (RFC 7523
// section 2.2): a JWT by the client about itself for the issuer, signed
// with ClientKey, valid for a minute.
func (o *OAuth) clientAssertion(clientID, issuer string) (string, error) {
	if o.ClientKey == nil {
		return "", errors.New("oauth: private_key_jwt needs a client key")
	}
	now := o.now()
	return SignJWT(o.ClientKey, map[string]any{"iss": clientID, "sub": clientID, "aud": issuer,
		"iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": randomString()}, nil)
}

// SignJWT makes a compact JWS of claims signed by key: ES256 for an ECDSA
// P-256 key, RS256 for an RSA key; header holds extra header fields.
func SignJWT(key crypto.Signer, claims, header map[string]any) (string, error) {
	h := map[string]any{"typ": "JWT"}
	for k, v := range header {
		h[k] = v
	}
	var alg string
	switch k := key.Public().(type) {
	case *ecdsa.PublicKey:
		if k.Curve.Params().BitSize != 256 {
			return "", errors.New("oauth: an ECDSA key must be P-256 (ES256)")
		}
		alg = "ES256"
	case *rsa.PublicKey:
		alg = "RS256"
	default:
		return "", fmt.Errorf("oauth: unsupported key type %T", k)
	}
	h["alg"] = alg
	hb, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	cb, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := base64.RawURLEncoding.EncodeToString(hb) + "." + base64.RawURLEncoding.EncodeToString(cb)
	sum := sha256.Sum256([]byte(input))
	sig, err := key.Sign(rand.Reader, sum[:], crypto.SHA256)
	if err != nil {
		return "", err
	}
	if alg == "ES256" { // ASN.1 (r, s) to JWS's fixed-width r || s
		var rs struct{ R, S *big.Int }
		if _, err := asn1.Unmarshal(sig, &rs); err != nil {
			return "", fmt.Errorf("oauth: ECDSA signature: %w", err)
		}
		sig = make([]byte, 64)
		rs.R.FillBytes(sig[:32])
		rs.S.FillBytes(sig[32:])
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// ParsePrivateKey reads a PEM private key (PKCS #8, SEC 1 EC or PKCS #1
// RSA) for ClientKey.
func ParsePrivateKey(pemText []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(pemText)
	if block == nil {
		return nil, errors.New("oauth: no PEM block in the private key")
	}
	var k any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		k, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: private key: %w", err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("oauth: private key of type %T cannot sign", k)
	}
	return s, nil
}

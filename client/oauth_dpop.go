package client

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"time"
)

// dpopKey is the key DPoP-bound tokens are bound to (RFC 9449), with the
// nonces the authorization server and the resource server last sent.
// OAuth's mutex guards it.
type dpopKey struct {
	key              *ecdsa.PrivateKey
	asNonce, rsNonce string
}

func newDPoPKey() (*dpopKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &dpopKey{key: k}, nil
}

// jwk is the public key as a JWK (RFC 7517), for the proof's header.
func (d *dpopKey) jwk() map[string]any {
	b, _ := d.key.PublicKey.Bytes() // uncompressed point: 0x04 || x || y
	return map[string]any{"kty": "EC", "crv": "P-256",
		"x": base64.RawURLEncoding.EncodeToString(b[1:33]), "y": base64.RawURLEncoding.EncodeToString(b[33:65])}
}

// proof is a DPoP proof (RFC 9449 section 4.2) of a request of method to
// u (its query and fragment left out), with the access token's hash when
// one is presented and the server's nonce when it sent one. Each proof has
// its own jti.
func (d *dpopKey) proof(method string, u *url.URL, accessToken, nonce string, now time.Time) (string, error) {
	htu := *u
	htu.RawQuery, htu.Fragment, htu.RawFragment = "", "", ""
	claims := map[string]any{"jti": randomString(), "htm": method, "htu": htu.String(), "iat": now.Unix()}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		claims["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	return SignJWT(d.key, claims, map[string]any{"typ": "dpop+jwt", "jwk": d.jwk()})
}

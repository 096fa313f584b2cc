package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/access"
)

// The credentials of group 11: an API key, and a JWT access token of an
// issuer the harness serves in-process (its metadata and JWKS); both act as
// the anonymous principal (the key by its entry, the token's
// issuer#subject mapped to it), so they read the same task records.
const (
	benchAPIKey   = "mcpq-bench-api-key-0123456789"
	benchResource = "http://mcp.bench.invalid/mcp"
	benchSubject  = "bench-agent"
)

// authTasksGet (group 11) measures tasks/get with a JWT access token
// beside tasks/get with an API key on one front end, in rounds at the
// highest concurrency: the JWT path is within 15 % when its verification
// is cached (docs/auth.md: verified tokens are reused until expiry).
func (s *suite) authTasksGet(ctx context.Context) error {
	if err := s.flush(ctx); err != nil {
		return err
	}
	if err := s.publishCatalog(ctx); err != nil {
		return err
	}
	iss, token, err := startBenchIssuer()
	if err != nil {
		return err
	}
	defer iss.Close()
	issuer := "http://" + iss.Addr().String()
	if err := access.New(s.rdb, "", nil).MapPrincipal(ctx, issuer+"#"+benchSubject, frontend.AnonymousPrincipal); err != nil {
		return err
	}
	fe, err := s.spawn(ctx, RoleFrontend, "-oauth-issuer", issuer)
	if err != nil {
		return err
	}
	defer fe.stop()
	refs, err := s.createTasks(ctx, getFixtures, 16, false)
	if err != nil {
		return err
	}
	taskIDs := ids(refs)
	time.Sleep(1200 * time.Millisecond) // the front end's catalog cache (1 s) sees the new catalog
	isWorking := expect200(`"status":"working"`)
	c := s.maxConc()
	byKey := idOp(fe.addr, newIDTemplate(fe.addr, "tasks/get", header{"Authorization", "Bearer " + benchAPIKey}), taskIDs, isWorking)
	byJWT := idOp(fe.addr, newIDTemplate(fe.addr, "tasks/get", header{"Authorization", "Bearer " + token}), taskIDs, isWorking)
	var keyRows, jwtRows []*Row
	for r := range s.cfg.Rounds {
		for _, f := range []struct {
			name string
			op   NewOp
			rows *[]*Row
		}{{fmt.Sprintf("tasks/get with an API key c=%d", c), byKey, &keyRows},
			{fmt.Sprintf("tasks/get with a JWT c=%d", c), byJWT, &jwtRows}} {
			row, err := s.loadRow(ctx, "11", f.name, c, fe, f.op)
			if err != nil {
				return err
			}
			s.roundDone(r, row)
			*f.rows = append(*f.rows, row)
		}
	}
	s.rep.add(combine(keyRows))
	j := combine(jwtRows)
	j.compareRows(jwtRows, keyRows, &Target{"ratio>=", 0.85})
	s.rep.add(j)
	return nil
}

// startBenchIssuer serves an authorization server's metadata and JWKS on
// loopback and returns a JWT access token it signed for benchResource,
// valid for a day.
func startBenchIssuer() (net.Listener, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	issuer := "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "jwks_uri": issuer + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &key.PublicKey, KeyID: "bench", Algorithm: "ES256", Use: "sig"}}})
	})
	go func() { _ = http.Serve(ln, mux) }()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "bench"))
	if err != nil {
		ln.Close()
		return nil, "", err
	}
	now := time.Now()
	tok, err := jwt.Signed(signer).Claims(map[string]any{"iss": issuer, "aud": benchResource, "sub": benchSubject,
		"iat": now.Unix(), "exp": now.Add(24 * time.Hour).Unix(), "scope": "mcp:tools"}).Serialize()
	if err != nil {
		ln.Close()
		return nil, "", err
	}
	return ln, tok, nil
}

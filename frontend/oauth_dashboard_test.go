package frontend_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
)

// GET /dashboard/oauth.json: the dashboard's sign-in settings where a
// dashboard client is configured (and the page may then post to the
// issuer), 404 where none is, 502 while the issuer cannot be read.
func TestDashboardSignInSettings(t *testing.T) {
	b := redistest.Mini(t)
	is := newTestIssuer(t)
	get := func(e *env, path string) reply {
		t.Helper()
		rep, err := do(t.Context(), e.h, http.MethodGet, path, nil, http.Header{})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}

	off := newOAuthEnv(t, b, is, nil)
	mustMatch(t, get(off, "/dashboard/oauth.json"), 404,
		`{"error":"this deployment's dashboard has no OAuth sign-in (--oauth-dashboard-client)"}`)
	if csp := get(off, "/dashboard/").Header.Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self';") {
		t.Errorf("without a dashboard client the page may connect elsewhere: %s", csp)
	}

	on := newOAuthEnv(t, b, is, func(c *frontend.OAuthConfig) { c.DashboardClientID = "dash" })
	mustMatch(t, get(on, "/dashboard/oauth.json"), 200, `{"issuer":"`+is.srv.URL+`","authorization_endpoint":"`+
		is.srv.URL+`/authorize","token_endpoint":"`+is.srv.URL+`/token","client_id":"dash","resource":"`+
		testResource+`","scope":"mcp:tools"}`)
	if csp := get(on, "/dashboard/").Header.Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self' "+is.srv.URL+";") {
		t.Errorf("the page may not post to the issuer's token endpoint: %s", csp)
	}

	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	down := newOAuthEnv(t, b, is, func(c *frontend.OAuthConfig) { c.Issuers, c.DashboardClientID = []string{gone.URL}, "dash" })
	rep := get(down, "/dashboard/oauth.json")
	if rep.Status != http.StatusBadGateway || !strings.Contains(string(rep.Body), gone.URL) {
		t.Errorf("issuer away: HTTP %d %s, want 502 naming it", rep.Status, rep.Body)
	}
}

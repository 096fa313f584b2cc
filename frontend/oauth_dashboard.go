package frontend

import (
	"net/http"
	"strings"
)

// dashboardSignIn is GET /dashboard/oauth.json: what the dashboard's
// script needs to sign a person in (frontend/dashboard/app.js): the
// authorization code flow with PKCE as a public client, against the first
// configured issuer, for this resource.
type dashboardSignIn struct {
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
	ClientID              string `json:"client_id"`
	Resource              string `json:"resource"`
	Scope                 string `json:"scope,omitempty"`
}

// dashboardSignInEnabled reports whether the dashboard signs in with OAuth
// (OAuthConfig.DashboardClientID set).
func (o *OAuth) dashboardSignInEnabled() bool { return o.cfg.DashboardClientID != "" }

// dashboardConnectOrigin is the origin the dashboard's script posts to for
// tokens: the first issuer's (its content security policy allows it).
func (o *OAuth) dashboardConnectOrigin() string {
	origin, _ := splitIssuer(o.order[0].id)
	return origin
}

// serveDashboardSignIn serves dashboardSignIn, or 404 where the dashboard
// has no OAuth sign-in, or 502 when the issuer's metadata cannot be read
// or lacks the endpoints.
func (o *OAuth) serveDashboardSignIn(w http.ResponseWriter, r *http.Request) {
	if !o.dashboardSignInEnabled() {
		writeREST(w, http.StatusNotFound, restError{Error: "this deployment's dashboard has no OAuth sign-in (--oauth-dashboard-client)"})
		return
	}
	is := o.order[0]
	m, err := is.metadata(r.Context())
	if err == nil && (m.AuthorizationEndpoint == "" || m.TokenEndpoint == "") {
		err = errDashboardEndpoints
	}
	if err != nil {
		writeREST(w, http.StatusBadGateway, restError{Error: "the authorization server " + is.id + ": " + err.Error()})
		return
	}
	writeREST(w, http.StatusOK, dashboardSignIn{Issuer: is.id, AuthorizationEndpoint: m.AuthorizationEndpoint,
		TokenEndpoint: m.TokenEndpoint, ClientID: o.cfg.DashboardClientID, Resource: o.cfg.Resource,
		Scope: strings.Join(o.cfg.Scopes, " ")})
}

type dashboardError string

func (e dashboardError) Error() string { return string(e) }

const errDashboardEndpoints = dashboardError("its metadata names no authorization_endpoint or no token_endpoint")

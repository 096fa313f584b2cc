package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/internal/oidctest"
)

// The dashboard's OAuth sign-in in headless Chromium, against a deployment
// that takes only OAuth: the page offers "Sign in", sends the person to
// oidc-provider (authorization code with PKCE as the public client
// "dashboard"), the person signs in and consents there, and back on the
// page its access token lists the person's own tasks and not a service's.
func TestDashboardOAuthSignIn(t *testing.T) {
	exe := chromium(t)
	addr := freeAddr(t)
	base := "http://" + addr
	p, url := startOAuthDevAt(t, addr, 600, []string{"--oauth-dashboard-client", "dashboard"},
		oidctest.Client{"client_id": "dashboard", "token_endpoint_auth_method": "none",
			"grant_types": []string{"authorization_code"}, "response_types": []string{"code"},
			"redirect_uris": []string{base + "/dashboard/"}, "scope": "mcp:tools"})
	ctx := within(t)
	svc := &client.Client{URL: url, Tasks: true, Header: http.Header{"Authorization": {
		"Bearer " + p.ClientCredentials(t, "svc", "svc-secret", url, "mcp:tools")}}}
	foreign := createTask(t, ctx, svc, "multi_input", nil).TaskID

	bctx, do := headless(t, ctx, exe)
	// Without a credential the page shows the 401 and offers the sign-in.
	do("open the dashboard", chromedp.Navigate(base+"/dashboard/"),
		chromedp.WaitVisible(css(`#signin`)), chromedp.WaitVisible(css(`#error`)))
	do("go to the provider's login page", chromedp.Click(css(`#signin`)),
		chromedp.WaitVisible(css(`input[name="login"]`)))
	if at, err := chromedp.Run(bctx, chromedp.Evaluate[string](`location.origin`)); err != nil || at != p.Issuer {
		t.Fatalf("the sign-in opened %q (%v), want the provider %s", at, err, p.Issuer)
	}
	do("sign in as alice", chromedp.SendKeys(css(`input[name="login"]`), "alice"),
		chromedp.SendKeys(css(`input[name="password"]`), "any"),
		chromedp.Click(css(`button[type="submit"]`)),
		chromedp.WaitReady(css(`input[name="prompt"][value="consent"]`)))
	do("consent", chromedp.Click(css(`button[type="submit"]`)),
		chromedp.WaitVisible(css(`#who.signed-in`)))
	who, err := chromedp.Run(bctx, chromedp.Text(css(`#who`)))
	if err != nil || who != "signed in at "+p.Issuer {
		t.Errorf("the page says %q (%v) after the sign-in", who, err)
	}
	page, err := chromedp.Run(bctx, chromedp.Evaluate[string](`location.href`))
	if err != nil || page != base+"/dashboard/" {
		t.Errorf("after the sign-in the page is at %q (%v), want the code and state gone from its URL", page, err)
	}
	token, err := chromedp.Run(bctx, chromedp.Evaluate[string](`sessionStorage.getItem("mcpq-key")`))
	if err != nil || strings.Count(token, ".") != 2 {
		t.Fatalf("the page keeps %q (%v), want the provider's JWT access token", token, err)
	}

	// A task alice starts with that token shows on her page; the service's
	// does not.
	alice := &client.Client{URL: url, Tasks: true, Header: http.Header{"Authorization": {"Bearer " + token}}}
	own := createTask(t, ctx, alice, "multi_input", nil).TaskID
	do("see alice's task listed", chromedp.WaitVisible(css(`tr[data-task="`+own+`"]`)))
	shown, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.querySelector('tr[data-task="`+foreign+`"]') !== null`))
	if err != nil || shown {
		t.Errorf("the service's task %s shows on alice's page (%v)", foreign, err)
	}
	if vis, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`!document.getElementById("error").hidden`)); err != nil || vis {
		t.Errorf("the signed-in page still shows an error (%v)", err)
	}
}

// The dashboard's OAuth sign-in (docs/auth.md, "The dashboard"): the
// authorization code flow with PKCE as a public client, against the
// authorization server the front end names at /dashboard/oauth.json
// (frontend/oauth_dashboard.go), for its resource. The access token is kept
// in sessionStorage (this tab only) and sent as Bearer, as a pasted API key
// is (app.js).
"use strict";

const SIGNIN_PENDING = "mcpq-signin"; // the request under way: its state and PKCE verifier

function base64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomString() { return base64url(crypto.getRandomValues(new Uint8Array(32))); }

// redirectURI is this page's URL without its query: the client's
// registered redirect URI.
function redirectURI() { return location.origin + location.pathname; }

// signInConfig resolves to the sign-in's settings, or null where the
// deployment offers none (404).
async function signInConfig() {
  const resp = await fetch("oauth.json", { headers: { Accept: "application/json" } });
  if (resp.status === 404) return null;
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok) throw new Error("sign-in unavailable: " + (body.error || "HTTP " + resp.status));
  return body;
}

// startSignIn sends the person to the authorization server.
async function startSignIn(cfg) {
  const verifier = randomString(), state = randomString();
  const challenge = base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  sessionStorage.setItem(SIGNIN_PENDING, JSON.stringify({ state, verifier }));
  const q = new URLSearchParams({
    response_type: "code", client_id: cfg.client_id, redirect_uri: redirectURI(), state,
    code_challenge: challenge, code_challenge_method: "S256", resource: cfg.resource,
  });
  if (cfg.scope) q.set("scope", cfg.scope);
  const sep = cfg.authorization_endpoint.includes("?") ? "&" : "?";
  location.assign(cfg.authorization_endpoint + sep + q);
}

// finishSignIn trades the code the authorization server sent the person
// back with for an access token. It resolves to the token, or "" when this
// page was not opened by such an answer, and throws on a refusal or an
// answer to a request this tab did not make.
async function finishSignIn(cfg) {
  const q = new URLSearchParams(location.search);
  if (!q.has("code") && !q.has("error")) return "";
  history.replaceState(null, "", redirectURI());
  const pending = JSON.parse(sessionStorage.getItem(SIGNIN_PENDING) || "null");
  sessionStorage.removeItem(SIGNIN_PENDING);
  if (q.has("error")) throw new Error("sign-in refused: " + (q.get("error_description") || q.get("error")));
  if (!pending || q.get("state") !== pending.state) throw new Error("sign-in: the answer is not for a request made in this tab");
  if (q.has("iss") && q.get("iss") !== cfg.issuer) throw new Error("sign-in: the answer came from " + q.get("iss") + ", not " + cfg.issuer);
  const resp = await fetch(cfg.token_endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" },
    body: new URLSearchParams({
      grant_type: "authorization_code", code: q.get("code"), redirect_uri: redirectURI(),
      client_id: cfg.client_id, code_verifier: pending.verifier, resource: cfg.resource,
    }),
  });
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok || !body.access_token) {
    throw new Error("sign-in: the token endpoint answered HTTP " + resp.status + " " + (body.error_description || body.error || ""));
  }
  return body.access_token;
}

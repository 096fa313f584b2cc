package frontend

import (
	"net/http"
	"strings"
	"sync"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

// heldScopes are the scopes of one request's credentials, read from the
// authenticator (a Scoper) on first need only: a request that meets no
// tool requiring scopes never asks.
type heldScopes struct {
	once    sync.Once
	auth    Scoper
	r       *http.Request
	scopes  []string
	limited bool
}

// heldScopes returns c's scopes, to be asked lazily.
func (s *Server) heldScopes(c *call) *heldScopes {
	sc, _ := s.cfg.Auth.(Scoper)
	return &heldScopes{auth: sc, r: c.httpReq}
}

// allow reports whether the credentials hold every scope of required.
func (h *heldScopes) allow(required []string) bool {
	if len(required) == 0 || h.auth == nil {
		return true
	}
	h.once.Do(func() { h.scopes, h.limited = h.auth.Scopes(h.r) })
	return !h.limited || hasScopes(h.scopes, required)
}

// checkScopes refuses a call of def without every scope it requires: HTTP
// 403 with WWW-Authenticate error="insufficient_scope" and the scopes
// (docs/auth.md). tasks/* on one's own tasks need no scope.
func (s *Server) checkScopes(c *call, def *catalog.Entry) error {
	if len(def.Scopes) == 0 || s.heldScopes(c).allow(def.Scopes) { // no scopes required: nothing to ask
		return nil
	}
	if ch, ok := s.cfg.Auth.(Challenger); ok {
		c.resp.w.Header().Set("WWW-Authenticate", ch.ScopeChallenge(def.Scopes))
	}
	e := proto.NewError(proto.CodeInvalidRequest, "Forbidden: insufficient_scope: tool %s requires the scopes %s",
		def.Tool.Name, strings.Join(def.Scopes, " "))
	e.Data = map[string]any{"error": "insufficient_scope", "scopes": def.Scopes}
	return withStatus(e, http.StatusForbidden)
}

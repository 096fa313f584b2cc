package frontend

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpq/mcpq/proto"
)

// checkOrigin rejects browser requests from origins not on the allow-list
// with 403, before anything else runs (DNS-rebinding protection).
func (s *Server) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && !s.originAllowed(origin) {
			s.writeError(w, nullID, withStatus(proto.NewError(proto.CodeInvalidRequest, "Forbidden: origin %q is not allowed", origin), http.StatusForbidden))
			return
		}
		// A request without credentials served as the anonymous principal
		// must also name an allowed host: a DNS-rebinding page is same-origin
		// to the browser (no Origin header on GET) but sends its own Host.
		if s.anonymousFor(r) && !s.hostAllowed(r.Host) {
			s.writeError(w, nullID, withStatus(proto.NewError(proto.CodeInvalidRequest, "Forbidden: host %q is not allowed", r.Host), http.StatusForbidden))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// anonymousFor reports whether r, if admitted, acts as the anonymous
// principal: anonymous mode, and no credentials sent.
func (s *Server) anonymousFor(r *http.Request) bool {
	switch a := s.cfg.Auth.(type) {
	case Anonymous:
		return true
	case *KeyAuth:
		return a.allowAnonymous && r.Header.Get("Authorization") == ""
	}
	return false
}

// hostAllowed reports whether a Host header names an allowed origin's host
// (any port), the same list as Origin.
func (s *Server) hostAllowed(hostport string) bool {
	if slices.Contains(s.cfg.AllowedOrigins, "*") {
		return true
	}
	u, err := url.Parse("http://" + hostport)
	if err != nil || u.Host == "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, a := range s.cfg.AllowedOrigins {
		if au, err := url.Parse(a); err == nil && strings.Contains(a, "://") {
			if strings.ToLower(au.Hostname()) == host {
				return true
			}
		} else if strings.Trim(strings.ToLower(a), "[]") == host {
			return true
		}
	}
	return false
}

func (s *Server) originAllowed(origin string) bool {
	if slices.Contains(s.cfg.AllowedOrigins, "*") || slices.Contains(s.cfg.AllowedOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, a := range s.cfg.AllowedOrigins {
		if !strings.Contains(a, "://") && strings.Trim(strings.ToLower(a), "[]") == host {
			return true
		}
	}
	return false
}

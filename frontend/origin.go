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
		if origin == "" || s.originAllowed(origin) {
			next.ServeHTTP(w, r)
			return
		}
		s.writeError(w, nullID, withStatus(proto.NewError(proto.CodeInvalidRequest, "Forbidden: origin %q is not allowed", origin), http.StatusForbidden))
	})
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

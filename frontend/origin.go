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
	case *OAuth:
		k, ok := a.cfg.Keys.(*KeyAuth)
		return ok && k.allowAnonymous && r.Header.Get("Authorization") == ""
	}
	return false
}

// hostAllowed reports whether a Host header names an allowed origin's host
// (any port), the same list as Origin. It runs on every anonymous request,
// so the list is read once (allowHosts) and a plain host[:port] is split
// without url.Parse.
func (s *Server) hostAllowed(hostport string) bool {
	if s.hosts.any {
		return true
	}
	host, ok := plainHost(hostport)
	if !ok {
		u, err := url.Parse("http://" + hostport)
		if err != nil || u.Host == "" {
			return false
		}
		host = u.Hostname()
	}
	return s.hosts.names[strings.ToLower(host)]
}

// plainHost splits "name" or "name:port" (no brackets, at most one colon,
// a non-empty name of letters, digits, '.', '-' and '_', digits after the
// colon); anything else is left to url.Parse.
func plainHost(hostport string) (string, bool) {
	host, port, hasPort := strings.Cut(hostport, ":")
	if host == "" || (hasPort && (port == "" || strings.Trim(port, "0123456789") != "")) {
		return "", false
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return "", false
		}
	}
	return host, true
}

// hostList is Config.AllowedOrigins as hostAllowed reads it: "*" allows
// any host; an origin with a scheme gives its host name; a bare entry is a
// host name itself (brackets trimmed). Names are lower case.
type hostList struct {
	any   bool
	names map[string]bool
}

func allowHosts(origins []string) hostList {
	l := hostList{any: slices.Contains(origins, "*"), names: make(map[string]bool, len(origins))}
	for _, a := range origins {
		if au, err := url.Parse(a); err == nil && strings.Contains(a, "://") {
			l.names[strings.ToLower(au.Hostname())] = true
		} else {
			l.names[strings.Trim(strings.ToLower(a), "[]")] = true
		}
	}
	return l
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

package frontend

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// dashboardFiles is the task dashboard: plain HTML, CSS and JS, no build
// step. The page holds no data: its script calls /v1/tasks and /mcp with
// the API key the person enters, or the access token of its OAuth sign-in
// (oauth_dashboard.go), so every task it shows is the caller's.
//
//go:embed dashboard
var dashboardFiles embed.FS

// serveDashboard serves GET /dashboard/. Its content security policy lets
// the page run only its own script, show result images, audio and video
// from data: and blob: URLs (a stored object is read through
// resources/read), and connect to this server and to connect, the
// authorization server its OAuth sign-in gets tokens from
// (oauth_dashboard.go; empty: none).
func serveDashboard(connect string) http.Handler {
	sub, _ := fs.Sub(dashboardFiles, "dashboard")
	files := http.StripPrefix("/dashboard/", http.FileServerFS(sub))
	csp := "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; media-src 'self' data: blob:; connect-src 'self'" +
		strings.TrimRight(" "+connect, " ") + "; form-action 'none'; frame-ancestors 'none'"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", csp)
		files.ServeHTTP(w, r)
	})
}

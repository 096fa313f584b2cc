package frontend

import (
	"embed"
	"io/fs"
	"net/http"
)

// dashboardFiles is the task dashboard: plain HTML, CSS and JS, no build
// step. The page holds no data: its script calls /v1/tasks and /mcp with
// the API key the person enters, so every task it shows is the caller's.
//
//go:embed dashboard
var dashboardFiles embed.FS

// serveDashboard serves GET /dashboard/. Its content security policy lets
// the page run only its own script, and show result images, audio and video
// from data: and blob: URLs (a stored object is read through resources/read).
func serveDashboard() http.Handler {
	sub, _ := fs.Sub(dashboardFiles, "dashboard")
	files := http.StripPrefix("/dashboard/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy",
			"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; media-src 'self' data: blob:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'")
		files.ServeHTTP(w, r)
	})
}

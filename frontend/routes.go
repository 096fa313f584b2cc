package frontend

import (
	"net/http"

	"github.com/gorilla/mux"
)

// Handler returns the HTTP routes: POST /mcp, GET and DELETE /mcp with a
// legacy session (its stream, its end; 405 for other methods and without
// a session),
// GET /v1/tasks, /v1/tasks/{id} and its /arguments (the caller's own
// tasks; console.go), GET /v1/ops/* (the operator view, admins only;
// ops.go, series.go), GET /healthz
// (liveness), GET /readyz (readiness: Redis and the catalog answer) and
// GET /metrics (Prometheus; observe.go) and GET /dashboard/ (the task
// dashboard; dashboard.go), and with OAuth the protected resource
// metadata (oauth_metadata.go) and the dashboard's sign-in settings
// (GET /dashboard/oauth.json; oauth_dashboard.go).
func (s *Server) Handler() http.Handler {
	r := mux.NewRouter()
	r.Handle("/mcp", s.observe(s.checkOrigin(http.HandlerFunc(s.serveMCP)))).Methods(http.MethodPost)
	r.Handle("/mcp", s.checkOrigin(http.HandlerFunc(s.serveDelete))).Methods(http.MethodDelete)
	r.Handle("/mcp", s.checkOrigin(http.HandlerFunc(s.serveGet))).Methods(http.MethodGet)
	r.HandleFunc("/mcp", methodNotAllowed)
	r.Handle("/v1/tasks", s.checkOrigin(http.HandlerFunc(s.listMyTasks))).Methods(http.MethodGet)
	r.Handle("/v1/tasks/{id}", s.checkOrigin(http.HandlerFunc(s.getMyTask))).Methods(http.MethodGet)
	r.Handle("/v1/tasks/{id}/arguments", s.checkOrigin(http.HandlerFunc(s.getMyArguments))).Methods(http.MethodGet)
	r.Handle("/v1/ops/queues", s.checkOrigin(s.operator(s.opsQueues))).Methods(http.MethodGet)
	r.Handle("/v1/ops/workers", s.checkOrigin(s.operator(s.opsWorkers))).Methods(http.MethodGet)
	r.Handle("/v1/ops/catalog", s.checkOrigin(s.operator(s.opsCatalog))).Methods(http.MethodGet)
	r.Handle("/v1/ops/series", s.checkOrigin(s.operator(s.opsSeries))).Methods(http.MethodGet)
	r.Handle("/v1/account", s.checkOrigin(http.HandlerFunc(s.getMyAccount))).Methods(http.MethodGet)
	r.Handle("/v1/ledger", s.checkOrigin(http.HandlerFunc(s.getMyLedger))).Methods(http.MethodGet)
	if o, ok := s.cfg.Auth.(*OAuth); ok {
		for _, p := range o.metadataPaths() {
			r.HandleFunc(p, o.serveMetadata).Methods(http.MethodGet, http.MethodOptions)
		}
	}
	r.HandleFunc("/healthz", s.serveHealth).Methods(http.MethodGet)
	r.HandleFunc("/readyz", s.serveReady).Methods(http.MethodGet)
	r.Handle("/metrics", s.serveMetrics()).Methods(http.MethodGet)
	r.Handle("/dashboard", http.RedirectHandler("/dashboard/", http.StatusMovedPermanently)).Methods(http.MethodGet)
	connect := ""
	if o, ok := s.cfg.Auth.(*OAuth); ok {
		r.HandleFunc("/dashboard/oauth.json", o.serveDashboardSignIn).Methods(http.MethodGet)
		if o.dashboardSignInEnabled() {
			connect = o.dashboardConnectOrigin()
		}
	}
	r.PathPrefix("/dashboard/").Handler(serveDashboard(connect)).Methods(http.MethodGet)
	return private(r)
}

// private marks every answer as not for caches (answers carry one
// principal's tasks and results) and not to be content-sniffed.
func private(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// Shared value slices (net/http's own trick): Set would allocate
		// one per header per request; nothing appends to these.
		h["Cache-Control"], h["X-Content-Type-Options"] = noStore, noSniff
		next.ServeHTTP(w, r)
	})
}

// muxVar is the path variable name of the matched route.
func muxVar(r *http.Request, name string) string { return mux.Vars(r)[name] }

var noStore, noSniff = []string{"no-store"}, []string{"nosniff"}

func methodNotAllowed(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Allow", http.MethodPost)
	http.Error(w, "only POST is served on /mcp", http.StatusMethodNotAllowed)
}

// serveGet and serveDelete serve GET and DELETE /mcp: an era's (a 2025-11-25
// session's stream and end, hook.go), else the modern transport's 405.
func (s *Server) serveGet(w http.ResponseWriter, r *http.Request) {
	if s.era == nil {
		methodNotAllowed(w, r)
		return
	}
	s.era.serveGet(w, r)
}

func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request) {
	if s.era == nil {
		methodNotAllowed(w, r)
		return
	}
	s.era.serveDelete(w, r)
}

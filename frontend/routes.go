package frontend

import (
	"net/http"

	"github.com/gorilla/mux"
)

// Handler returns the HTTP routes: POST /mcp (405 for other methods) and
// GET /healthz.
func (s *Server) Handler() http.Handler {
	r := mux.NewRouter()
	r.Handle("/mcp", s.checkOrigin(http.HandlerFunc(s.serveMCP))).Methods(http.MethodPost)
	r.HandleFunc("/mcp", methodNotAllowed)
	r.HandleFunc("/healthz", s.serveHealth).Methods(http.MethodGet)
	return r
}

func methodNotAllowed(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Allow", http.MethodPost)
	http.Error(w, "only POST is served on /mcp", http.StatusMethodNotAllowed)
}

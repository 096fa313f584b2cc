package frontend

import (
	"net/http"
	"slices"
	"sort"

	"github.com/mcpq/mcpq/taskstate/catalog"
)

// operator admits an admin principal (Config.Admins) to next, the
// operator view's data; any other principal gets 403 and no data.
func (s *Server) operator(next func(http.ResponseWriter, *http.Request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		principal, err := s.admit(w, r)
		if err != nil {
			s.restFail(w, err)
			return
		}
		if !slices.Contains(s.cfg.Admins, principal) {
			writeREST(w, http.StatusForbidden, restError{Error: "the operator view is for admin principals (--admin-principals)"})
			return
		}
		next(w, r)
	})
}

// queueView is one queue of GET /v1/ops/queues.
type queueView struct {
	// Queue is the mcpq queue's name.
	Queue string `json:"queue"`
	// Pending jobs wait for a worker; Active run; Scheduled wait for
	// their time (over a share, handed back); Retry and Archived are
	// asynq's own (mcpq does not retry through asynq).
	Pending   int `json:"pending"`
	Active    int `json:"active"`
	Scheduled int `json:"scheduled"`
	Retry     int `json:"retry"`
	Archived  int `json:"archived"`
	// OldestMs is the age of the oldest pending job (0 when none waits).
	OldestMs int64 `json:"oldestMs"`
}

// opsQueues serves GET /v1/ops/queues: each queue a job was ever enqueued
// on, by name, with what it holds now.
func (s *Server) opsQueues(w http.ResponseWriter, _ *http.Request) {
	if s.jobs == nil {
		writeREST(w, http.StatusNotImplemented, restError{Error: "this front end enqueues through its own Enqueuer: no queue view"})
		return
	}
	names, err := s.jobs.Queues()
	if err != nil {
		s.restFail(w, err)
		return
	}
	out := []queueView{}
	for name := range names {
		d, err := s.jobs.Depth(name)
		if err != nil {
			s.restFail(w, err)
			return
		}
		out = append(out, queueView{Queue: name, Pending: d.Pending, Active: d.Active, Scheduled: d.Scheduled,
			Retry: d.Retry, Archived: d.Archived, OldestMs: d.Latency.Milliseconds()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue < out[j].Queue })
	writeREST(w, http.StatusOK, map[string]any{"queues": out})
}

// opsWorkers serves GET /v1/ops/workers: the live workers as they
// describe themselves (catalog.WorkerInfo), by name.
func (s *Server) opsWorkers(w http.ResponseWriter, r *http.Request) {
	ws, err := s.store.Catalog().Workers(r.Context())
	if err != nil {
		s.restFail(w, err)
		return
	}
	writeREST(w, http.StatusOK, map[string]any{"workers": ws})
}

// coverage is one catalog entry of GET /v1/ops/catalog.
type coverage struct {
	// Key is the entry's catalog key (a tool's name); Title its title.
	Key   string `json:"key"`
	Title string `json:"title,omitempty"`
	// Queue is the queue its jobs go to.
	Queue string `json:"queue"`
	// Workers are the live workers serving it; none: calls wait or fail.
	Workers []string `json:"workers"`
	// Priced says a call reserves money where billing is on.
	Priced bool `json:"priced"`
}

// opsCatalog serves GET /v1/ops/catalog: every published entry and which
// live workers serve it, entries no worker serves first.
func (s *Server) opsCatalog(w http.ResponseWriter, r *http.Request) {
	entries, err := s.store.Catalog().Entries(r.Context())
	if err != nil {
		s.restFail(w, err)
		return
	}
	ws, err := s.store.Catalog().Workers(r.Context())
	if err != nil {
		s.restFail(w, err)
		return
	}
	servedBy := map[string][]string{}
	for _, wk := range ws {
		for _, k := range wk.Tools {
			servedBy[k] = append(servedBy[k], wk.Name)
		}
	}
	out := make([]coverage, 0, len(entries))
	for _, e := range entries {
		c := coverage{Key: e.Key(), Queue: e.Queue, Workers: servedBy[e.Key()], Priced: e.Price != nil}
		if e.Kind == catalog.KindTool {
			c.Title = e.Tool.Title
		}
		if c.Workers == nil {
			c.Workers = []string{}
		}
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if (len(out[i].Workers) == 0) != (len(out[j].Workers) == 0) {
			return len(out[i].Workers) == 0
		}
		return out[i].Key < out[j].Key
	})
	writeREST(w, http.StatusOK, map[string]any{"catalog": out})
}

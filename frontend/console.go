package frontend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/billing"
	"github.com/mcpq/mcpq/taskstate/catalog"
	"github.com/mcpq/mcpq/taskstate/timeline"
)

// taskFacts are what the console shows of a task beside its wire state,
// in GET /v1/tasks and GET /v1/tasks/{id} (docs/dashboard.md).
type taskFacts struct {
	// Tool is the tool called; Title its display title when the catalog has one.
	Tool  string `json:"tool,omitempty"`
	Title string `json:"title,omitempty"`
	// Progress is read from the status message ("3 of 10", "3/10", "30%").
	Progress *progress `json:"progress,omitempty"`
	// QueuedMs is how long the task waited for its first worker (absent
	// while it waits); ElapsedMs how long it has run since, until its end.
	QueuedMs  *int64 `json:"queuedMs,omitempty"`
	ElapsedMs *int64 `json:"elapsedMs,omitempty"`
	// Cost is a priced call's reservation and settlement.
	Cost *billing.Cost `json:"cost,omitempty"`
}

// progress is how far along a task says it is.
type progress struct {
	// Done of Total units; Total 100 for a percentage.
	Done  float64 `json:"done"`
	Total float64 `json:"total"`
}

// taskSummary is one entry of GET /v1/tasks.
type taskSummary struct {
	proto.Task
	taskFacts
}

// taskPage is what GET /v1/tasks/{id} adds for the task's page.
type taskPage struct {
	taskFacts
	// Timeline is what happened to the task, oldest first.
	Timeline []timeline.Entry `json:"timeline,omitempty"`
	// Attempts are its deliveries with their worker and why each ended.
	Attempts []timeline.Attempt `json:"attempts,omitempty"`
	// ArgumentsBytes is the size of the call's arguments while the task
	// holds them (they go when it ends); ArgumentsPreview their first
	// argumentsPreviewMax bytes; GET /v1/tasks/{id}/arguments has them whole.
	ArgumentsBytes   int    `json:"argumentsBytes,omitempty"`
	ArgumentsPreview string `json:"argumentsPreview,omitempty"`
	// ArgumentsRef is the object-store key of large arguments.
	ArgumentsRef string `json:"argumentsRef,omitempty"`
}

// argumentsPreviewMax bounds the arguments a task page carries inline.
const argumentsPreviewMax = 2 << 10

// progressPattern finds "n of m", "n/m" or "p%" in a status message; a
// short unit may follow each number ("3s of 10s", "2MB/8MB").
var progressPattern = regexp.MustCompile(`(\d+(?:\.\d+)?)[a-zA-Z]{0,3}\s*(?:of|/)\s*(\d+(?:\.\d+)?)|(\d+(?:\.\d+)?)\s*%`)

// parseProgress reads a status message's progress; nil when it says none.
func parseProgress(msg string) *progress {
	m := progressPattern.FindStringSubmatch(msg)
	if m == nil {
		return nil
	}
	if m[3] != "" {
		p, _ := strconv.ParseFloat(m[3], 64)
		return &progress{Done: min(p, 100), Total: 100}
	}
	done, _ := strconv.ParseFloat(m[1], 64)
	total, _ := strconv.ParseFloat(m[2], 64)
	if total <= 0 || done > total {
		return nil
	}
	return &progress{Done: done, Total: total}
}

// facts builds a task's taskFacts at now; titles maps tool names to titles.
func facts(rec *taskstate.Record, titles map[string]string, now time.Time) taskFacts {
	f := taskFacts{Tool: rec.Tool, Title: titles[rec.Tool], Cost: rec.Cost}
	if rec.Status == proto.StatusWorking || rec.Status == proto.StatusCompleted {
		f.Progress = parseProgress(rec.StatusMessage)
	}
	if rec.StartedAt.IsZero() {
		return f
	}
	q := rec.StartedAt.Sub(rec.CreatedAt).Milliseconds()
	end := now
	if terminal(rec.Status) {
		end = rec.LastUpdatedAt
	}
	e := max(end.Sub(rec.StartedAt).Milliseconds(), 0)
	f.QueuedMs, f.ElapsedMs = &q, &e
	return f
}

func terminal(s proto.TaskStatus) bool {
	return s == proto.StatusCompleted || s == proto.StatusFailed || s == proto.StatusCancelled
}

func (s *Server) summarize(rec *taskstate.Record, titles map[string]string) taskSummary {
	return taskSummary{Task: rec.Task(), taskFacts: facts(rec, titles, s.store.Now())}
}

func (s *Server) page(rec *taskstate.Record, titles map[string]string) taskPage {
	tl := rec.Timeline()
	p := taskPage{taskFacts: facts(rec, titles, s.store.Now()), Timeline: tl,
		Attempts: timeline.Attempts(tl), ArgumentsBytes: len(rec.Arguments), ArgumentsRef: rec.ArgumentsRef}
	if len(rec.Arguments) > 0 {
		p.ArgumentsPreview = string(rec.Arguments[:min(len(rec.Arguments), argumentsPreviewMax)])
	}
	return p
}

// toolTitles maps the served tools' names to their titles; a catalog that
// cannot be read leaves titles out rather than failing the listing.
func (s *Server) toolTitles(ctx context.Context) map[string]string {
	defs, err := s.catalog.list(ctx)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, d := range defs {
		if d.Kind == catalog.KindTool && d.Tool.Title != "" {
			out[d.Tool.Name] = d.Tool.Title
		}
	}
	return out
}

// findMyTask serves GET /v1/tasks?id=: the caller's task of that id as a
// one-entry listing, or none (any other principal's id is none too).
func (s *Server) findMyTask(w http.ResponseWriter, r *http.Request, principal, id string) {
	out := taskList{Tasks: []taskSummary{}}
	if !taskstate.ValidID(id) {
		writeREST(w, http.StatusOK, out)
		return
	}
	rec, err := s.store.Get(r.Context(), taskstate.Ref{Owner: taskstate.OwnerTag(principal), ID: id})
	switch {
	case err == nil:
		out.Tasks = append(out.Tasks, s.summarize(rec, s.toolTitles(r.Context())))
	case !errors.Is(err, taskstate.ErrNotFound) && !errors.Is(err, taskstate.ErrExpired):
		s.restFail(w, err)
		return
	}
	writeREST(w, http.StatusOK, out)
}

// getMyArguments serves GET /v1/tasks/{id}/arguments: the call's whole
// arguments while the task holds them (a download from the task page);
// 404 once they went or for another principal's id.
func (s *Server) getMyArguments(w http.ResponseWriter, r *http.Request) {
	principal, err := s.admit(w, r)
	if err != nil {
		s.restFail(w, err)
		return
	}
	id := muxVar(r, "id")
	rec, err := s.store.Get(r.Context(), taskstate.Ref{Owner: taskstate.OwnerTag(principal), ID: id})
	if err != nil {
		s.restFail(w, err)
		return
	}
	if len(rec.Arguments) == 0 {
		writeREST(w, http.StatusNotFound, restError{Error: "the task holds no arguments (they go when it ends, or sit in the object store: argumentsRef)"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-arguments.json"`, url.PathEscape(id)))
	_, _ = w.Write(rec.Arguments)
}

// queryTime reads an RFC 3339 time or unix milliseconds parameter (zero
// when absent); anything else is answered 400 here, and ok is false then.
func queryTime(w http.ResponseWriter, q url.Values, name string) (t time.Time, ok bool) {
	v := q.Get(name)
	if v == "" {
		return time.Time{}, true
	}
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.UnixMilli(ms), true
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		writeREST(w, http.StatusBadRequest, restError{Error: name + " must be an RFC 3339 time or unix milliseconds"})
		return time.Time{}, false
	}
	return t, true
}

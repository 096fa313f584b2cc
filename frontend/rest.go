package frontend

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// restError is the body of a REST error.
type restError struct {
	Error string `json:"error"`
}

func (s *Server) restFail(w http.ResponseWriter, err error) {
	pe, status := toRPC(err)
	if status == http.StatusOK {
		status = http.StatusBadRequest
		if errors.Is(err, taskstate.ErrNotFound) {
			status = http.StatusNotFound
		} else if pe.Code == proto.CodeInternalError {
			status = http.StatusInternalServerError
		}
	}
	setRetryAfter(w.Header(), status)
	writeREST(w, status, restError{Error: pe.Message})
}

func writeREST(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// taskList is the body of GET /v1/tasks.
type taskList struct {
	// Tasks are the caller's tasks, newest first.
	Tasks []taskSummary `json:"tasks"`
	// NextCursor continues the listing; absent on the last page.
	NextCursor string `json:"nextCursor,omitempty"`
}

// listMyTasks serves GET /v1/tasks?status=&tool=&since=&until=&limit=&cursor=
// (or ?id= for one): the caller's own tasks, newest first (console.go
// says what each carries). No other principal's task can appear: only the
// caller's index is read.
func (s *Server) listMyTasks(w http.ResponseWriter, r *http.Request) {
	principal, err := s.admit(w, r)
	if err != nil {
		s.restFail(w, err)
		return
	}
	q := r.URL.Query()
	if id := q.Get("id"); id != "" {
		s.findMyTask(w, r, principal, id)
		return
	}
	o := taskstate.ListOptions{Status: proto.TaskStatus(q.Get("status")), Cursor: q.Get("cursor"), Tool: q.Get("tool")}
	switch o.Status {
	case "", proto.StatusWorking, proto.StatusInputRequired, proto.StatusCompleted, proto.StatusFailed, proto.StatusCancelled:
	default:
		writeREST(w, http.StatusBadRequest, restError{Error: "status must be working, input_required, completed, failed or cancelled"})
		return
	}
	var ok bool
	if o.Limit, ok = queryLimit(w, q, 0, 500); !ok {
		return
	}
	if o.Since, ok = queryTime(w, q, "since"); !ok {
		return
	}
	if o.Until, ok = queryTime(w, q, "until"); !ok {
		return
	}
	res, err := s.store.ListTasks(r.Context(), principal, o)
	if errors.Is(err, taskstate.ErrBadCursor) {
		writeREST(w, http.StatusBadRequest, restError{Error: "invalid cursor"})
		return
	}
	if err != nil {
		s.restFail(w, err)
		return
	}
	titles := s.toolTitles(r.Context())
	out := taskList{Tasks: make([]taskSummary, len(res.Tasks)), NextCursor: res.Next}
	for i, rec := range res.Tasks {
		out.Tasks[i] = s.summarize(rec, titles)
	}
	writeREST(w, http.StatusOK, out)
}

// queryLimit reads the limit query parameter of a listing (def when
// absent); anything but a number from 1 to most is answered 400 here, and
// ok is false then.
func queryLimit(w http.ResponseWriter, q url.Values, def, most int) (n int, ok bool) {
	v := q.Get("limit")
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		writeREST(w, http.StatusBadRequest, restError{Error: fmt.Sprintf("limit must be a number from 1 to %d", most)})
		return 0, false
	}
	return n, true
}

// restTask is the body of GET /v1/tasks/{id}.
type restTask struct {
	proto.DetailedTask
	// Receipt is the task's billing receipt once its reservation settled
	// (billing.Receipt; absent for a free task or one still running).
	Receipt json.RawMessage `json:"receipt,omitempty"`
	taskPage
}

// getMyTask serves GET /v1/tasks/{id}: one of the caller's tasks, as
// tasks/get shows it, with its billing receipt; any other id is 404.
func (s *Server) getMyTask(w http.ResponseWriter, r *http.Request) {
	principal, err := s.admit(w, r)
	if err != nil {
		s.restFail(w, err)
		return
	}
	rec, err := s.store.Get(r.Context(), taskstate.Ref{Owner: taskstate.OwnerTag(principal), ID: mux.Vars(r)["id"]})
	if err != nil {
		s.restFail(w, err)
		return
	}
	writeREST(w, http.StatusOK, restTask{DetailedTask: rec.Detailed(), Receipt: rec.Receipt,
		taskPage: s.page(rec, s.toolTitles(r.Context()))})
}

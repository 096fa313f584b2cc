package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// An upstream may answer a tools/call with a task of its own: a 2025-11-25
// server for a tool whose execution.taskSupport is "required" or
// "optional" (mcpq asks for one: the call's "task" parameter), or a
// 2026-07-28 server with the Tasks extension (mcpq declares it). mcpq then
// keeps the upstream task's id in the mcpq task's checkpoint and follows
// it: its statusMessage becomes the mcpq task's, its input requests are
// relayed to the client, and its result is the call's. A delivery that
// finds an upstream task id in the checkpoint (its worker was lost) follows
// the same upstream task rather than calling again.

// Bounds of the interval between two tasks/get of an upstream task (the
// upstream's pollInterval within them; defaultPoll when it names none).
const (
	minPoll     = 100 * time.Millisecond
	maxPoll     = 5 * time.Second
	defaultPoll = time.Second
)

// upTask is an upstream task's state, in either era's shape.
type upTask struct {
	TaskID        string                     `json:"taskId"`
	Status        proto.TaskStatus           `json:"status"`
	StatusMessage string                     `json:"statusMessage"`
	PollInterval  *int64                     `json:"pollInterval"`   // 2025-11-25
	PollMs        *int64                     `json:"pollIntervalMs"` // 2026-07-28
	Result        json.RawMessage            `json:"result"`         // 2026-07-28, completed
	Error         *proto.Error               `json:"error"`          // 2026-07-28, failed
	InputRequests map[string]json.RawMessage `json:"inputRequests"`  // 2026-07-28, input_required
}

// poll is the interval the upstream asks for, within bounds.
func (t *upTask) poll() time.Duration {
	ms := t.PollMs
	if ms == nil {
		ms = t.PollInterval
	}
	if ms == nil {
		return defaultPoll
	}
	return min(max(time.Duration(*ms)*time.Millisecond, minPoll), maxPoll)
}

// taskOf reads the task a tools/call answer hands over, if it is one: a
// 2025-11-25 CreateTaskResult ({"task": {...}}) or a 2026-07-28 one (flat,
// resultType "task").
func taskOf(raw json.RawMessage) (*upTask, bool) {
	var r struct {
		ResultType string  `json:"resultType"`
		Task       *upTask `json:"task"`
		upTask
	}
	if json.Unmarshal(raw, &r) != nil {
		return nil, false
	}
	switch {
	case r.Task != nil && r.Task.TaskID != "":
		return r.Task, true
	case r.ResultType == proto.ResultTask && r.TaskID != "":
		return &r.upTask, true
	}
	return nil, false
}

// follow follows the upstream task id on sess until it ends, and returns
// its result (an upstream JSON-RPC error as a *proto.Error: the task fails
// with it). poll is the first interval.
func (s *Server) follow(ctx context.Context, c *worker.Call, sess *session, id string, poll time.Duration) (*proto.CallToolResult, error) {
	if sess.version == VersionStateless {
		return s.followStateless(ctx, c, sess, id, poll)
	}
	// 2025-11-25: tasks/result blocks until the task ends and carries the
	// requests the upstream queued for the task (elicitation with
	// relatedTask), which the session's relay answers; tasks/get beside it
	// reads the statusMessage.
	type answer struct {
		raw json.RawMessage
		err error
	}
	done := make(chan answer, 1)
	go func() {
		raw, err := sess.request(ctx, proto.MethodTasksRes, map[string]any{"taskId": id}, nil, nil)
		done <- answer{raw, err}
	}()
	st := &status{c: c}
	for {
		t := time.NewTimer(poll)
		select {
		case a := <-done:
			t.Stop()
			if a.err != nil {
				return nil, s.taskErr(id, a.err)
			}
			return s.decodeResult("task "+id, a.raw)
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		ut, err := s.getTask(ctx, sess, id)
		if err != nil {
			return nil, err
		}
		st.set(ctx, ut.StatusMessage)
		poll = ut.poll()
	}
}

// followStateless follows a 2026-07-28 upstream task with tasks/get: the
// result is in the completed task, and its input requests are relayed to
// the client (Call.HoldInput) and answered with tasks/update.
func (s *Server) followStateless(ctx context.Context, c *worker.Call, sess *session, id string, poll time.Duration) (*proto.CallToolResult, error) {
	st := &status{c: c}
	for {
		ut, err := s.getTask(ctx, sess, id)
		if err != nil {
			return nil, err
		}
		st.set(ctx, ut.StatusMessage)
		switch ut.Status {
		case proto.StatusCompleted:
			return s.decodeResult("task "+id, ut.Result)
		case proto.StatusFailed:
			if ut.Error != nil {
				return nil, ut.Error
			}
			return nil, proto.NewError(proto.CodeInternalError, "upstream %s: task %s failed without an error", s.spec.Name, id)
		case proto.StatusCancelled:
			return nil, proto.NewError(proto.CodeInternalError, "upstream %s: task %s was cancelled upstream", s.spec.Name, id)
		case proto.StatusInputRequired:
			if err := s.relayTaskInput(ctx, c, sess, id, ut.InputRequests); err != nil {
				return nil, err
			}
			continue
		}
		if err := worker.Sleep(ctx, poll); err != nil {
			return nil, err
		}
		poll = ut.poll()
	}
}

// relayTaskInput asks the client what the upstream task asks and sends
// the answers upstream with tasks/update.
func (s *Server) relayTaskInput(ctx context.Context, c *worker.Call, sess *session, id string, reqs map[string]json.RawMessage) error {
	resp, err := s.askClient(ctx, c, fmt.Sprintf("upstream-task-%d-", c.Attempt), reqs)
	if err != nil {
		return err
	}
	if _, err := sess.request(ctx, proto.MethodTasksUpd, map[string]any{"taskId": id, "inputResponses": resp}, nil, nil); err != nil {
		return s.taskErr(id, err)
	}
	return nil
}

// askClient asks the task's client what an upstream asks (its inputRequests,
// each {method, params}) under prefix+key, waiting with the call open
// (Call.HoldInput), and returns the answers under the upstream's keys.
func (s *Server) askClient(ctx context.Context, c *worker.Call, prefix string, reqs map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	ask := make(map[string]proto.InputRequest, len(reqs))
	for k, raw := range reqs {
		var r struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(raw, &r) != nil || r.Method == "" {
			return nil, fmt.Errorf("upstream %s asks for input that does not decode: %s", s.spec.Name, clip(raw, 200))
		}
		ask[prefix+k] = proto.InputRequest{Method: r.Method, Params: r.Params}
	}
	answers, err := c.HoldInput(ctx, ask)
	if err != nil {
		return nil, err
	}
	resp := make(map[string]json.RawMessage, len(reqs))
	for k := range reqs {
		resp[k] = answers[prefix+k]
	}
	return resp, nil
}

// getTask reads the upstream task id.
func (s *Server) getTask(ctx context.Context, sess *session, id string) (*upTask, error) {
	raw, err := sess.request(ctx, proto.MethodTasksGet, map[string]any{"taskId": id}, nil, nil)
	if err != nil {
		return nil, s.taskErr(id, err)
	}
	var ut upTask
	if err := json.Unmarshal(raw, &ut); err != nil || ut.Status == "" {
		return nil, fmt.Errorf("upstream %s: tasks/get of %s answered what does not decode: %s", s.spec.Name, id, clip(raw, 200))
	}
	return &ut, nil
}

// cancelTask passes a cancel of the mcpq task upstream (tasks/cancel of the
// upstream task in c's checkpoint, if any), on a session of its own.
func (s *Server) cancelTask(c *worker.Call) {
	if upstreamTask(c) == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	defer cancel()
	sl, sess, err := s.pool.take(ctx)
	if sl != nil {
		defer s.pool.release(sl)
	}
	if err != nil {
		s.log.Warn("upstream task not cancelled", "task", c.TaskID, "upstreamTask", upstreamTask(c), "err", err)
		return
	}
	s.cancelOn(ctx, sess, c)
}

// cancelOn sends tasks/cancel of c's upstream task (if any) on sess.
func (s *Server) cancelOn(ctx context.Context, sess *session, c *worker.Call) {
	id := upstreamTask(c)
	if id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handshakeTimeout)
	defer cancel()
	if _, err := sess.request(ctx, proto.MethodTasksCncl, map[string]any{"taskId": id}, nil, nil); err != nil {
		s.log.Warn("upstream task not cancelled", "task", c.TaskID, "upstreamTask", id, "err", err)
	}
}

// upstreamTask is the upstream task id in c's checkpoint ("" when none).
func upstreamTask(c *worker.Call) string {
	var m mark
	_, _ = c.LoadCheckpoint(&m)
	return m.Task
}

// taskErr is the error of a request about upstream task id: a JSON-RPC
// error from the upstream as is (the mcpq task fails with it), a context's
// as is, anything else wrapped.
func (s *Server) taskErr(id string, err error) error {
	var pe *proto.Error
	switch {
	case errors.As(err, &pe):
		return pe
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("upstream %s: task %s: %w", s.spec.Name, id, err)
}

// decodeResult decodes the CallToolResult of what (a tool, or an upstream task).
func (s *Server) decodeResult(what string, raw json.RawMessage) (*proto.CallToolResult, error) {
	var res proto.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("upstream %s: %s answered a result that does not decode: %v", s.spec.Name, what, err)
	}
	if res.Content == nil {
		res.Content = []proto.Content{}
	}
	return &res, nil
}

// status writes an upstream task's statusMessage into the mcpq task when
// it changed.
type status struct {
	c    *worker.Call
	last string
}

func (st *status) set(ctx context.Context, msg string) {
	if msg == "" || msg == st.last {
		return
	}
	st.last = msg
	_ = st.c.Progress(ctx, msg)
}

package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// The 2025-11-25 tasks utility (experimental in that revision) on the same
// task records as the Tasks extension: a task-augmented tools/call creates
// the record a modern call would, so tasks/get and tasks/cancel of either
// era act on tasks of both, each answering in its own era's shape, and
// only the principal that created a task can address it.

// taskSupport is a tool's 2025-11-25 execution.taskSupport, from its
// execution policy.
func taskSupport(p proto.Policy) string {
	switch p {
	case proto.PolicySync:
		return "forbidden"
	case proto.PolicyTask:
		return "required"
	}
	return "optional"
}

// listLegacyTools is tools/list as 2025-11-25 shows it: each tool with
// execution.taskSupport.
func (s *Server) listLegacyTools(ctx context.Context, _ *call) (any, error) {
	defs, err := s.catalog.list(ctx)
	if err != nil {
		return nil, err
	}
	tools := []proto.LegacyTool{}
	for _, d := range defs {
		if d.Kind == taskstate.KindTool {
			tools = append(tools, proto.LegacyTool{Tool: d.Tool, Execution: &proto.ToolExecution{TaskSupport: taskSupport(d.Policy)}})
		}
	}
	return map[string]any{"_meta": s.resultMeta, "tools": tools}, nil
}

// callLegacyTool is tools/call for a legacy session. With a task parameter
// the call becomes a task at once (CreateTaskResult); without one it is
// held open until the tool ends, with its progress and input requests on
// the request's SSE stream.
func (s *Server) callLegacyTool(ctx context.Context, c *call) (any, error) {
	var p struct {
		Name string          `json:"name"`
		Task json.RawMessage `json:"task"`
	}
	if err := decodeParams(c, &p); err != nil {
		return nil, err
	}
	if len(p.Task) > 0 && string(p.Task) != "null" {
		var task struct {
			TTL *float64 `json:"ttl"`
		}
		if p.Task[0] != '{' || decodeJSON(p.Task, &task) != nil {
			return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: task must be an object with an optional ttl (ms)")
		}
		if task.TTL != nil {
			ms := int64(*task.TTL)
			if *task.TTL != float64(ms) || ms <= 0 {
				return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: task.ttl must be a positive integer (ms), not %v", *task.TTL)
			}
			c.requestedTTL = &ms
		}
		def, err := s.catalog.get(ctx, p.Name)
		if err != nil {
			return nil, err
		}
		if def != nil && def.Kind == taskstate.KindTool && def.Policy == proto.PolicySync {
			return nil, proto.NewError(proto.CodeMethodNotFound, "Method not found: tool %s does not run as a task (execution.taskSupport forbidden)", p.Name)
		}
		c.legacyTask = true
	}
	res, err := s.callTool(ctx, c)
	var pe *proto.Error
	if errors.As(err, &pe) && pe.Code == proto.CodeMissingRequiredClientCapability && !c.legacyTask {
		return nil, proto.NewError(proto.CodeMethodNotFound, "Method not found: tool %s runs only as a task (execution.taskSupport required): call it with a task parameter", p.Name)
	}
	if err != nil {
		return nil, err
	}
	if ct, ok := res.(*proto.CreateTaskResult); ok {
		// The session's GET stream follows the task (legacystream.go).
		if err := s.sessions.AddSessionTask(ctx, c.session.Owner, c.session.ID, ct.Task.TaskID, s.cfg.SessionIdle); err != nil {
			s.log.Warn("index a session's task for its GET stream", "task", ct.Task.TaskID, "err", err)
		}
		return &proto.LegacyCreateTaskResult{Meta: s.resultMeta, Task: proto.LegacyTaskOf(ct.Task)}, nil
	}
	return s.withMeta(res), nil
}

// legacyTaskRef reads taskId under the calling principal.
func legacyTaskRef(c *call) (taskstate.Ref, error) {
	id, ok := rawString(c.names.TaskID)
	if !ok || id == "" {
		return taskstate.Ref{}, proto.NewError(proto.CodeInvalidParams, "Invalid params: taskId is required")
	}
	return taskstate.Ref{Owner: taskstate.OwnerTag(c.principal), ID: id}, nil
}

// legacyGetTask serves 2025-11-25 tasks/get.
func (s *Server) legacyGetTask(ctx context.Context, c *call) (any, error) {
	ref, err := legacyTaskRef(c)
	if err != nil {
		return nil, err
	}
	rec, err := s.store.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &proto.LegacyTaskResult{Meta: s.resultMeta, LegacyTask: proto.LegacyTaskOf(rec.Task())}, nil
}

// legacyCancelTask serves 2025-11-25 tasks/cancel: the task as it is after
// the cancel was recorded; -32602 for a task that already ended.
func (s *Server) legacyCancelTask(ctx context.Context, c *call) (any, error) {
	ref, err := legacyTaskRef(c)
	if err != nil {
		return nil, err
	}
	rec, err := s.store.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	if rec.Status.Terminal() {
		return nil, proto.NewError(proto.CodeInvalidParams, "Cannot cancel task: already in terminal status %s", rec.Status)
	}
	if err := s.store.RequestCancel(ctx, ref); err != nil && !errors.Is(err, taskstate.ErrTerminal) {
		return nil, err
	}
	if rec, err = s.store.Get(ctx, ref); err != nil {
		return nil, err
	}
	return &proto.LegacyTaskResult{Meta: s.resultMeta, LegacyTask: proto.LegacyTaskOf(rec.Task())}, nil
}

// legacyListTasks serves 2025-11-25 tasks/list: the caller's own tasks,
// newest first, 50 a page.
func (s *Server) legacyListTasks(ctx context.Context, c *call) (any, error) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if len(c.req.Params) > 0 {
		if err := decodeParams(c, &p); err != nil {
			return nil, err
		}
	}
	res, err := s.store.ListTasks(ctx, c.principal, taskstate.ListOptions{Cursor: p.Cursor})
	if errors.Is(err, taskstate.ErrBadCursor) {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: invalid cursor")
	}
	if err != nil {
		return nil, err
	}
	out := &proto.LegacyTaskList{Meta: s.resultMeta, Tasks: make([]proto.LegacyTask, len(res.Tasks)), NextCursor: res.Next}
	for i, rec := range res.Tasks {
		out.Tasks[i] = proto.LegacyTaskOf(rec.Task())
	}
	return out, nil
}

// legacyTaskResult serves 2025-11-25 tasks/result: it waits (up to the
// sync wait limit) until the task ends, sending its states as
// notifications/tasks/status and relaying its input requests on the
// request's stream meanwhile, and answers what the call would have.
// Leaving the wait does not cancel the task: the request only watches it.
// Its stream is resumable (sselog.go): a client whose connection broke
// resumes it with GET and Last-Event-ID on any front end.
func (s *Server) legacyTaskResult(ctx context.Context, c *call) (any, error) {
	ref, err := legacyTaskRef(c)
	if err != nil {
		return nil, err
	}
	c.observer = true
	sub, err := s.hub.Subscribe(ctx, s.store.Keys().Events(ref))
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	rec, err := s.store.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	c.watched = rec
	s.watchResumable(ctx, c, ref)
	if !settled(rec) {
		// The state the wait starts from, then each change.
		c.resp.notify(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: proto.NotifyTaskStatus,
			Params: proto.LegacyTaskOf(rec.Task())})
	}
	return s.awaitTaskResult(ctx, c, sub, rec)
}

// awaitTaskResult is the wait of a tasks/result (c.observer) from rec on,
// and its answer: the task's result, with its related-task _meta.
func (s *Server) awaitTaskResult(ctx context.Context, c *call, sub *taskstate.Subscription, rec *taskstate.Record) (any, error) {
	ref := rec.Ref
	start, wait := time.Now(), s.cfg.SyncWaitLimit
	c.seen = max(c.seen, rec.Version) // its state went out: an event for it or older is stale
	var err error
	if !settled(rec) {
		if rec, err = s.awaitSettled(ctx, c, sub, ref, wait, false); err != nil {
			return nil, err
		}
	}
	var res any
	switch {
	case rec.Status == proto.StatusInputRequired:
		res, err = s.relayInput(ctx, c, sub, rec, start, wait)
	case rec.Status.Terminal():
		res, err = finalResult(rec)
	default:
		return nil, proto.NewError(proto.CodeInternalError, "Task %s did not end within %s; ask again", ref.ID, wait)
	}
	if raw, ok := res.(rawResult); ok {
		res = s.withMeta(raw)
		var meta map[string]any
		_ = json.Unmarshal(raw["_meta"], &meta)
		meta[proto.MetaRelatedTask] = map[string]string{"taskId": ref.ID}
		raw["_meta"], _ = json.Marshal(meta)
	}
	return res, err
}

// taskStatus sends a watched task's new state (2025-11-25
// notifications/tasks/status, the full task) on the request's stream.
func taskStatus(c *call, ev taskstate.Event) {
	rec := *c.watched
	rec.Status, rec.StatusMessage, rec.LastUpdatedAt = ev.Status, ev.StatusMessage, ev.LastUpdatedAt
	c.resp.notify(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: proto.NotifyTaskStatus,
		Params: proto.LegacyTaskOf(rec.Task())})
}

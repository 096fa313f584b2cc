package legacy

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/catalog"
	"github.com/mcpq/mcpq/taskstate/events"
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

// listTools is tools/list as 2025-11-25 shows it: each tool with
// execution.taskSupport.
func (e *Era) listTools(ctx context.Context) (any, error) {
	defs, err := e.host.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	tools := []Tool{}
	for _, d := range defs {
		if d.Kind == catalog.KindTool {
			tools = append(tools, Tool{Tool: d.Tool, Execution: &ToolExecution{TaskSupport: taskSupport(d.Policy)}})
		}
	}
	return map[string]any{"_meta": e.cfg.ResultMeta, "tools": tools}, nil
}

// callTool is tools/call for a session. With a task parameter the call
// becomes a task at once (CreateTaskResult); without one it is held open
// until the tool ends, with its progress and input requests on the
// request's SSE stream.
func (c *Call) callTool(ctx context.Context) (any, error) {
	e := c.era
	var p struct {
		Name string          `json:"name"`
		Task json.RawMessage `json:"task"`
	}
	if err := c.decodeParams(&p); err != nil {
		return nil, err
	}
	asTask := len(p.Task) > 0 && string(p.Task) != "null"
	if asTask {
		if err := c.taskNow(ctx, p.Name, p.Task); err != nil {
			return nil, err
		}
	}
	res, err := e.host.Serve(ctx, c.req)
	var pe *proto.Error
	if errors.As(err, &pe) && pe.Code == proto.CodeMissingRequiredClientCapability && !asTask {
		return nil, proto.NewError(proto.CodeMethodNotFound, "Method not found: tool %s runs only as a task (execution.taskSupport required): call it with a task parameter", p.Name)
	}
	if err != nil {
		return nil, err
	}
	if ct, ok := res.(*proto.CreateTaskResult); ok {
		// The session's GET stream follows the task (stream.go).
		if err := e.store.AddSessionTask(ctx, c.session.Owner, c.session.ID, ct.Task.TaskID, e.cfg.SessionIdle); err != nil {
			e.log.Warn("index a session's task for its GET stream", "task", ct.Task.TaskID, "err", err)
		}
		return &CreateTaskResult{Meta: e.cfg.ResultMeta, Task: TaskOf(ct.Task)}, nil
	}
	return res, nil
}

// taskNow reads a tools/call's task parameter (raw, not null) and makes
// the call answer a task at once, with its ttl (ms) if it has one: -32602
// for a task that is not an object or a ttl that is not a positive
// integer, -32601 for a tool that never runs as a task.
func (c *Call) taskNow(ctx context.Context, name string, raw json.RawMessage) error {
	var task struct {
		TTL *float64 `json:"ttl"`
	}
	if raw[0] != '{' || json.Unmarshal(raw, &task) != nil {
		return proto.NewError(proto.CodeInvalidParams, "Invalid params: task must be an object with an optional ttl (ms)")
	}
	var ttl *int64
	if task.TTL != nil {
		ms := int64(*task.TTL)
		if *task.TTL != float64(ms) || ms <= 0 {
			return proto.NewError(proto.CodeInvalidParams, "Invalid params: task.ttl must be a positive integer (ms), not %v", *task.TTL)
		}
		ttl = &ms
	}
	def, err := c.era.host.Entry(ctx, name)
	if err != nil {
		return err
	}
	if def != nil && def.Kind == catalog.KindTool && def.Policy == proto.PolicySync {
		return proto.NewError(proto.CodeMethodNotFound, "Method not found: tool %s does not run as a task (execution.taskSupport forbidden)", name)
	}
	c.req.TaskNow(ttl)
	return nil
}

// taskRef is the task a tasks/* request names (its params' taskId) under
// the calling principal.
func (c *Call) taskRef(id string) (taskstate.Ref, error) {
	if id == "" {
		return taskstate.Ref{}, proto.NewError(proto.CodeInvalidParams, "Invalid params: taskId is required")
	}
	return taskstate.Ref{Owner: taskstate.OwnerTag(c.req.Principal()), ID: id}, nil
}

// getTask serves 2025-11-25 tasks/get.
func (c *Call) getTask(ctx context.Context, id string) (any, error) {
	ref, err := c.taskRef(id)
	if err != nil {
		return nil, err
	}
	rec, err := c.era.tasks.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &TaskResult{Meta: c.era.cfg.ResultMeta, Task: TaskOf(rec.Task())}, nil
}

// listTasks serves 2025-11-25 tasks/list: the caller's own tasks, newest
// first, 50 a page.
func (c *Call) listTasks(ctx context.Context) (any, error) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if len(c.req.RPC().Params) > 0 {
		if err := c.decodeParams(&p); err != nil {
			return nil, err
		}
	}
	res, err := c.era.tasks.ListTasks(ctx, c.req.Principal(), taskstate.ListOptions{Cursor: p.Cursor})
	if errors.Is(err, taskstate.ErrBadCursor) {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: invalid cursor")
	}
	if err != nil {
		return nil, err
	}
	out := &TaskList{Meta: c.era.cfg.ResultMeta, Tasks: make([]Task, len(res.Tasks)), NextCursor: res.Next}
	for i, rec := range res.Tasks {
		out.Tasks[i] = TaskOf(rec.Task())
	}
	return out, nil
}

// taskResult serves 2025-11-25 tasks/result: it waits (up to the sync
// wait limit) until the task ends, sending its states as
// notifications/tasks/status and relaying its input requests on the
// request's stream meanwhile, and answers what the call would have.
// Leaving the wait does not cancel the task: the request only watches it.
// Its stream is resumable (resume.go): a client whose connection broke
// resumes it with GET and Last-Event-ID on any front end.
func (c *Call) taskResult(ctx context.Context, id string) (any, error) {
	ref, err := c.taskRef(id)
	if err != nil {
		return nil, err
	}
	c.observe()
	sub, err := c.era.cfg.Hub.Subscribe(ctx, c.era.tasks.Keys().Events(ref))
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	rec, err := c.era.tasks.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	c.watched = rec
	c.watchResumable(ctx, ref)
	if !settled(rec) {
		// The state the wait starts from, then each change.
		c.req.Notify(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: NotifyTaskStatus, Params: TaskOf(rec.Task())})
	}
	return c.awaitTaskResult(ctx, sub, rec)
}

// observe marks the request as one that only watches its task.
func (c *Call) observe() {
	c.observer = true
	c.req.Observe()
}

// awaitTaskResult is the wait of a tasks/result from rec on, and its
// answer: the task's result, with its related-task _meta.
func (c *Call) awaitTaskResult(ctx context.Context, sub *events.Subscription, rec *taskstate.Record) (any, error) {
	ref := rec.Ref
	start, wait := time.Now(), c.era.cfg.SyncWaitLimit
	c.req.Shown(rec.Version) // its state went out: an event for it or older is stale
	var err error
	if !settled(rec) {
		if rec, err = c.req.Await(ctx, sub, ref, wait, false); err != nil {
			return nil, err
		}
	}
	switch {
	case rec.Status == proto.StatusInputRequired:
		if rec, err = c.relayInput(ctx, sub, rec, start, wait); err != nil {
			return nil, err
		}
	case !rec.Status.Terminal():
		return nil, proto.NewError(proto.CodeInternalError, "Task %s did not end within %s; ask again", ref.ID, wait)
	}
	return c.era.host.Result(rec, ref.ID)
}

package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// jobMaxRetry is how often asynq re-delivers a job whose worker failed
// (Redis errors, a worker that died); the record fences stale attempts.
const jobMaxRetry = 3

// callTool serves tools/call with the server-directed decision: a sync tool
// is waited for; a task tool answers a task at once; an auto tool waits its
// sync budget and then answers a task to a client with the Tasks extension
// (and keeps waiting for one without).
func (s *Server) callTool(ctx context.Context, c *call) (any, error) {
	var p proto.CallToolParams
	if err := decodeParams(c, &p); err != nil {
		return nil, err
	}
	if p.Name == "" {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: name is required")
	}
	if len(p.Arguments) > 0 && string(p.Arguments) != "null" && p.Arguments[0] != '{' {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: arguments must be an object")
	}
	def, err := s.catalog.get(ctx, p.Name)
	if err != nil {
		return nil, err
	}
	if def == nil {
		return nil, proto.NewError(proto.CodeInvalidParams, "Unknown tool: %s", p.Name)
	}
	declared := c.tasksDeclared()
	policy := def.Policy
	if policy == "" {
		policy = taskstate.PolicyAuto
	}
	if policy == taskstate.PolicyTask && !declared {
		return nil, proto.MissingTasksExtension()
	}

	cp := taskstate.CreateParams{
		ID:             taskstate.NewID(),
		Principal:      c.principal,
		Tool:           def.Tool.Name,
		Arguments:      p.Arguments,
		TTLMs:          s.ttlFor(def),
		PollIntervalMs: s.pollFor(def).Milliseconds(),
		StatusMessage:  "Queued",
	}
	ref := taskstate.Ref{Owner: taskstate.OwnerTag(c.principal), ID: cp.ID}
	handOut := policy == taskstate.PolicyTask // answer the task without waiting
	var sub *taskstate.Subscription
	if !handOut {
		// Subscribe before the create, so no state change can be missed.
		if sub, err = s.hub.Subscribe(ctx, s.store.Keys().Events(ref)); err != nil {
			return nil, err
		}
		defer sub.Close()
	}
	rec, err := s.store.Create(ctx, cp)
	if err != nil {
		return nil, err
	}
	if err := s.enqueue(ctx, rec, def); err != nil {
		return nil, err
	}
	if handOut {
		return createTaskResult(rec), nil
	}

	budget := s.cfg.SyncBudget
	if def.SyncBudgetMs > 0 {
		budget = time.Duration(def.SyncBudgetMs) * time.Millisecond
	}
	if policy == taskstate.PolicySync || !declared {
		budget = s.cfg.SyncWaitLimit
	}
	rec, err = s.waitTerminal(ctx, sub, ref, budget)
	if err != nil {
		return nil, err
	}
	if rec.Status.Terminal() {
		return finalResult(rec)
	}
	if policy == taskstate.PolicyAuto && declared {
		return createTaskResult(rec), nil
	}
	// Held open as long as allowed and still not done: give up the work too.
	_ = s.store.RequestCancel(context.WithoutCancel(ctx), ref)
	return nil, proto.NewError(proto.CodeInternalError, "Tool call timed out after %s", budget)
}

// waitTerminal waits up to d for the task to end, woken by its events (it
// does not poll), and returns the record as it is then.
func (s *Server) waitTerminal(ctx context.Context, sub *taskstate.Subscription, ref taskstate.Ref, d time.Duration) (*taskstate.Record, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case ev := <-sub.C:
			if !proto.TaskStatus(ev).Terminal() {
				continue
			}
		case <-timer.C:
		case <-ctx.Done():
			// The client went away: nobody can receive this call's result.
			_ = s.store.RequestCancel(context.WithoutCancel(ctx), ref)
			return nil, ctx.Err()
		}
		return s.store.Get(ctx, ref)
	}
}

// enqueue puts the task's job on its tool's queue. The asynq task id is the
// task id, so a repeated enqueue is a harmless conflict.
func (s *Server) enqueue(ctx context.Context, rec *taskstate.Record, def *taskstate.ToolDef) error {
	timeout := 24 * time.Hour
	if d := rec.Deadline(); !d.IsZero() {
		timeout = d.Sub(rec.CreatedAt)
	}
	job := asynq.NewTask(taskstate.JobType, taskstate.EncodeJob(rec.Ref))
	_, err := s.cfg.Enqueuer.EnqueueContext(ctx, job, asynq.TaskID(rec.Ref.ID), asynq.Queue(def.Queue),
		asynq.MaxRetry(jobMaxRetry), asynq.Timeout(timeout))
	if err == nil || errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil
	}
	// Nothing will run it: end the record rather than leave it working.
	_ = s.store.Finish(context.WithoutCancel(ctx), rec.Ref, 0, taskstate.Outcome{
		Status: proto.StatusFailed, StatusMessage: "Could not be scheduled",
		Error: proto.NewError(proto.CodeInternalError, "Internal error: the task could not be scheduled")})
	return fmt.Errorf("enqueue task %s: %w", rec.Ref.ID, err)
}

// ttlFor is the task lifetime of a tool's calls, capped by MaxTTL; nil is unlimited.
func (s *Server) ttlFor(def *taskstate.ToolDef) *int64 {
	ttl := s.cfg.DefaultTTL
	switch {
	case def.TTLMs == taskstate.UnlimitedTTL && s.cfg.AllowUnlimitedTTL:
		return nil
	case def.TTLMs == taskstate.UnlimitedTTL:
		ttl = s.cfg.MaxTTL
	case def.TTLMs > 0:
		ttl = time.Duration(def.TTLMs) * time.Millisecond
	}
	ms := min(ttl, s.cfg.MaxTTL).Milliseconds()
	return &ms
}

func (s *Server) pollFor(def *taskstate.ToolDef) time.Duration {
	if def.PollIntervalMs > 0 {
		return time.Duration(def.PollIntervalMs) * time.Millisecond
	}
	return s.cfg.PollInterval
}

func createTaskResult(rec *taskstate.Record) *proto.CreateTaskResult {
	return &proto.CreateTaskResult{ResultBase: proto.ResultBase{ResultType: proto.ResultTask}, Task: rec.Task()}
}

// finalResult is the plain answer of a call whose task ended in time.
func finalResult(rec *taskstate.Record) (any, error) {
	switch rec.Status {
	case proto.StatusCompleted:
		var r rawResult
		if err := json.Unmarshal(rec.Result, &r); err != nil {
			return nil, fmt.Errorf("stored result of task %s: %w", rec.Ref.ID, err)
		}
		return r, nil
	case proto.StatusFailed:
		return nil, rec.Detailed().Error
	}
	return nil, proto.NewError(proto.CodeInternalError, "The tool call was cancelled")
}

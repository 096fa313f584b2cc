package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/catalog"
	"github.com/mcpq/mcpq/taskstate/events"
)

// keepAliveEvery is how often a long wait writes an SSE comment.
const keepAliveEvery = 15 * time.Second

// noWorker is the answer to a call that cannot become a task while no
// live worker serves its entry.
func noWorker(inv invocation) error {
	return proto.NewError(proto.CodeInternalError,
		"No worker serves %s now (queue %s): try again when one is running", inv.name, inv.def.Queue)
}

// settled reports whether the request can be answered from rec as it is.
func settled(rec *taskstate.Record) bool {
	return rec.Status.Terminal() || rec.Status == proto.StatusInputRequired
}

// deliverAnswers applies an MRTR retry's inputResponses to the task its
// requestState names, resumes the task when nothing is pending any more,
// and returns the record as it is then.
func (s *Server) deliverAnswers(ctx context.Context, ref taskstate.Ref, inv invocation) (*taskstate.Record, error) {
	answers, err := decodeResponses(inv.responses)
	if err != nil {
		return nil, err
	}
	if len(answers) > 0 {
		res, err := s.store.Answer(ctx, ref, answers)
		notReplicated := errors.Is(err, taskstate.ErrNotReplicated) // written: still resume, then report
		switch {
		case errors.Is(err, taskstate.ErrNotFound), errors.Is(err, taskstate.ErrExpired):
			return nil, errBadState("its task no longer exists")
		case err != nil && !errors.Is(err, taskstate.ErrTerminal) && !notReplicated:
			return nil, err
		}
		if res.Resume > 0 {
			rec, gerr := s.store.Get(ctx, ref)
			if gerr != nil {
				return nil, gerr
			}
			if err := s.enqueue(ctx, rec, inv.def, res.Resume); err != nil {
				return nil, err
			}
			if notReplicated {
				return nil, err
			}
			return rec, nil
		}
		if notReplicated {
			return nil, err
		}
	}
	rec, err := s.store.Get(ctx, ref)
	if errors.Is(err, taskstate.ErrNotFound) {
		return nil, errBadState("its task no longer exists")
	}
	return rec, err
}

// awaitSettled waits up to d for the task to end or to ask for input, woken
// by its events (it does not poll); it relays the task's notifications to
// the request meanwhile and returns the record as it is then. A caller
// that answers a completed task with its result alone (finalResult) sets
// resultOnly: an event that carries the result then ends the wait without
// reading the record (the record returned holds what the event said).
func (s *Server) awaitSettled(ctx context.Context, c *call, sub *events.Subscription, ref taskstate.Ref, d time.Duration,
	resultOnly bool) (*taskstate.Record, error) {
	ctx, stopWatch := s.watchAuth(ctx, c)
	defer stopWatch()
	timer := time.NewTimer(d)
	defer timer.Stop()
	var keepAlive <-chan time.Time
	if d > keepAliveEvery {
		t := time.NewTicker(keepAliveEvery)
		defer t.Stop()
		keepAlive = t.C
	}
	var prime <-chan time.Time
	if c.resp.log != nil && !c.resp.resumable() {
		// A held call with a resumable stream (an era's, hook.go) still
		// running after the sync budget opens its stream, so its first
		// event id lets a client resume it.
		t := time.NewTimer(s.cfg.SyncBudget)
		defer t.Stop()
		prime = t.C
	}
	for {
		select {
		case payload := <-sub.C:
			ev := events.Decode(payload)
			if ev.Notification != "" {
				s.relay(c, ev.Notification)
				continue
			}
			if ev.Version > 0 {
				if ev.Version <= c.seen {
					continue // shown already (server.go, call.seen)
				}
				c.seen = ev.Version
			}
			if ev.Expired { // reaped at its deadline: answered now, not when d runs out
				return nil, proto.NewError(proto.CodeInternalError, "Internal error: the task expired (its ttlMs ran out) before it ended")
			}
			if c.hook != nil {
				c.hook.State(ev)
			}
			// A resync means events were lost while the hub reconnected:
			// the record tells whether the task settled meanwhile.
			if !ev.Resync && !ev.Status.Terminal() && ev.Status != proto.StatusInputRequired {
				continue
			}
			if resultOnly && ev.Status == proto.StatusCompleted && ev.Result != nil {
				return &taskstate.Record{Ref: ref, Status: ev.Status, StatusMessage: ev.StatusMessage,
					LastUpdatedAt: ev.LastUpdatedAt, Version: ev.Version, Result: ev.Result}, nil
			}
			rec, err := s.store.Get(ctx, ref)
			if err != nil || settled(rec) {
				return rec, err
			}
		case <-timer.C:
			return s.store.Get(ctx, ref)
		case <-keepAlive:
			c.resp.keepAlive()
		case <-prime:
			c.resp.keepAlive()
		case <-ctx.Done():
			return nil, s.abandoned(ctx, c, ref)
		}
	}
}

// abandoned ends a wait whose ctx ended: the client went away, or its key
// was revoked. Nobody can receive the call's answer, unless it resumes the
// stream (a resumable one, an era's; the task then runs on, bounded by its
// TTL), so the task is cancelled; a request that only watches the task
// (c.observer, a 2025-11-25 tasks/result) only stops watching.
func (s *Server) abandoned(ctx context.Context, c *call, ref taskstate.Ref) error {
	resumable := c.resp.resumable() && !errors.Is(context.Cause(ctx), errRevoked)
	if !c.observer && !resumable {
		_ = s.store.RequestCancel(context.WithoutCancel(ctx), ref)
	}
	return endedBy(ctx)
}

// relay forwards a worker's notification to the waiting request when the
// request asked for it: progress only with a progressToken, log messages
// only at or above the request's logLevel.
func (s *Server) relay(c *call, raw string) {
	var n struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal([]byte(raw), &n) != nil {
		return
	}
	switch n.Method {
	case proto.NotifyProgress:
		if len(c.meta.ProgressToken) == 0 {
			return
		}
		var p proto.ProgressParams
		if json.Unmarshal(n.Params, &p) != nil {
			return
		}
		if c.progressSent && p.Progress <= c.progress {
			return // progress only increases, also between the tool's own and an era's (NextProgress)
		}
		c.progress, c.progressSent = p.Progress, true
		p.ProgressToken = c.meta.ProgressToken
		c.resp.notify(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: n.Method, Params: p})
	case proto.NotifyMessage:
		want := proto.LoggingLevel(c.meta.LogLevel).Severity()
		var p proto.LoggingMessageParams
		if want < 0 || json.Unmarshal(n.Params, &p) != nil || p.Level.Severity() < want {
			return
		}
		c.resp.notify(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: n.Method, Params: p})
	}
}

// askInput answers the input a parked task asks for as an
// InputRequiredResult, or -32021 when the request did not declare a
// capability an input kind needs (the server never asks for those).
func (s *Server) askInput(ctx context.Context, c *call, rec *taskstate.Record, bind string) (any, error) {
	methods := make([]string, 0, len(rec.InputRequests))
	for _, raw := range rec.InputRequests {
		var r struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(raw, &r)
		methods = append(methods, r.Method)
	}
	var caps proto.ClientCapabilities
	if c.meta.ClientCapabilities != nil {
		caps = *c.meta.ClientCapabilities
	}
	if err := proto.MissingInputCapabilities(caps, methods); err != nil {
		_ = s.store.RequestCancel(context.WithoutCancel(ctx), rec.Ref)
		return nil, err
	}
	exp := s.cfg.Clock().Add(s.cfg.MaxTTL)
	if d := rec.Deadline(); !d.IsZero() && d.Before(exp) {
		exp = d
	}
	return &proto.InputRequiredResult{
		ResultBase:    proto.ResultBase{ResultType: proto.ResultInputRequired},
		InputRequests: rec.InputRequests,
		RequestState: s.signState(requestState{TaskID: rec.Ref.ID, Owner: rec.Ref.Owner, Binding: bind,
			Expires: exp.Unix(), Round: rec.Resumes}),
	}, nil
}

// create writes a new task's record and enqueues its job. With the default
// enqueuer both go to Redis in one round trip: the enqueue is captured
// first (internal/queue) and sent in the same pipeline, after the record.
func (s *Server) create(ctx context.Context, p taskstate.CreateParams, def *catalog.Entry) (*taskstate.Record, error) {
	ref := taskstate.Ref{Owner: p.Owner, ID: p.ID}
	if ref.Owner == "" {
		ref.Owner = taskstate.OwnerTag(p.Principal)
	}
	if s.jobs != nil {
		job, err := s.jobs.Capture(ctx, queueJob(jobOf(ref, def, 0)))
		if err != nil {
			return nil, fmt.Errorf("enqueue task %s: %w", ref.ID, err)
		}
		p.Job = job // nil when nothing was captured: enqueued after the record
	}
	rec, err := s.store.Create(ctx, p)
	var jobErr *taskstate.JobError
	if p.Job != nil && (rec == nil || rec.Ref != ref) && !errors.As(err, &jobErr) {
		// Refused (no funds, a cap) or replayed (an idempotency key's first
		// task answers): the job sent with the record names no record, so it
		// goes, and no job is left without its record and reservation. A
		// worker that took it first finds no record and drops it.
		s.dropJob(ctx, ref, def)
	}
	switch {
	case errors.As(err, &jobErr):
		s.unscheduled(ctx, rec)
		return nil, fmt.Errorf("enqueue task %s: %w", ref.ID, err)
	case errors.Is(err, taskstate.ErrNotReplicated): // written: run it, but do not acknowledge it
		if p.Job == nil {
			_ = s.enqueue(ctx, rec, def, 0)
		}
		return nil, err
	case err != nil:
		return nil, err
	case p.Job != nil, rec.Ref != ref: // enqueued with the record, or replayed: enqueued by its first call
		return rec, nil
	}
	return rec, s.enqueue(ctx, rec, def, 0)
}

// dropJob deletes the first job of ref, sent with a record that was not
// written. A job already taken by a worker is not there to delete, and is
// a no-op there.
func (s *Server) dropJob(ctx context.Context, ref taskstate.Ref, def *catalog.Entry) {
	err := s.jobs.Drop(queueJob(jobOf(ref, def, 0)))
	if err != nil && ctx.Err() == nil {
		s.log.Debug("job of a refused create not deleted", "task", ref.ID, "err", err)
	}
}

// enqueue puts the task's job on its queue; an id conflict means it is
// there already. A first run that cannot be enqueued fails the task.
func (s *Server) enqueue(ctx context.Context, rec *taskstate.Record, def *catalog.Entry, resume int64) error {
	err := s.submit(ctx, rec.Ref, def, resume)
	if err == nil {
		return nil
	}
	if resume == 0 {
		s.unscheduled(ctx, rec)
	}
	return fmt.Errorf("enqueue task %s: %w", rec.Ref.ID, err)
}

// submit hands the job of ref's run number resume to the enqueuer, on its
// entry's queue (a repeated enqueue is a harmless conflict).
func (s *Server) submit(ctx context.Context, ref taskstate.Ref, def *catalog.Entry, resume int64) error {
	return s.cfg.Enqueuer.Enqueue(ctx, jobOf(ref, def, resume))
}

// jobOf is the job of ref's run number seq, for its catalog entry def.
func jobOf(ref taskstate.Ref, def *catalog.Entry, seq int64) Job {
	return Job{Task: ref, Tool: def.Key(), Seq: seq, Queue: def.Queue}
}

// unscheduled ends a new record nothing will run, rather than leave it working.
func (s *Server) unscheduled(ctx context.Context, rec *taskstate.Record) {
	_ = s.store.Finish(context.WithoutCancel(ctx), rec.Ref, 0, taskstate.Outcome{
		Status: proto.StatusFailed, StatusMessage: "Could not be scheduled",
		Error: proto.NewError(proto.CodeInternalError, "Internal error: the task could not be scheduled")})
}

// ttlFor is the task lifetime of an entry's calls, capped by MaxTTL; nil is
// unlimited. A requested TTL (call.ttl, a 2025-11-25 task.ttl; nil: none)
// shortens it, never lengthens it.
func (s *Server) ttlFor(def *catalog.Entry, requested *int64) *int64 {
	ttl := s.cfg.DefaultTTL
	switch {
	case def.TTLMs == catalog.UnlimitedTTL && s.cfg.AllowUnlimitedTTL:
		return requested
	case def.TTLMs == catalog.UnlimitedTTL:
		ttl = s.cfg.MaxTTL
	case def.TTLMs > 0:
		ttl = time.Duration(def.TTLMs) * time.Millisecond
	}
	ms := min(ttl, s.cfg.MaxTTL).Milliseconds()
	if requested != nil && *requested < ms {
		ms = *requested
	}
	return &ms
}

func (s *Server) pollFor(def *catalog.Entry) time.Duration {
	if def.PollIntervalMs > 0 {
		return time.Duration(def.PollIntervalMs) * time.Millisecond
	}
	return s.cfg.PollInterval
}

func createTaskResult(rec *taskstate.Record) *proto.CreateTaskResult {
	return &proto.CreateTaskResult{ResultBase: proto.ResultBase{ResultType: proto.ResultTask}, Task: rec.Task()}
}

// finalResult is the plain answer of a request whose task ended in time.
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
	return nil, proto.NewError(proto.CodeInternalError, "The request was cancelled")
}

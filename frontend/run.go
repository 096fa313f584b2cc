package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// keepAliveEvery is how often a long wait writes an SSE comment.
const keepAliveEvery = 15 * time.Second

// invocation is one run of a catalog entry for a request: a tool call, a
// prompt, a resource read or a completion. All of them are task records run
// by workers, so each may ask for input (MRTR) the same way.
type invocation struct {
	def *taskstate.ToolDef
	// method and name identify the request a requestState is bound to.
	method, name string
	// args is the job's arguments object.
	args json.RawMessage
	// responses and state are the MRTR retry's inputResponses and requestState.
	responses json.RawMessage
	state     *string
}

// invoke runs inv with the server-directed decision (README, "How a call runs"): a sync
// entry is waited for; a task tool answers a task at once (or, with a sync
// budget, after gathering input by MRTR); an auto tool waits its budget and
// then answers a task to a client with the Tasks extension, and keeps
// waiting for one without. Input asked while the request still waits is
// answered as an InputRequiredResult whose requestState names the task.
func (s *Server) invoke(ctx context.Context, c *call, inv invocation) (any, error) {
	declared := c.tasksDeclared()
	policy := inv.def.Policy
	if inv.def.Kind != taskstate.KindTool {
		policy = proto.PolicySync
	} else if policy == "" {
		policy = proto.PolicyAuto
	}
	if policy == proto.PolicyTask && !declared {
		return nil, proto.MissingTasksExtension()
	}
	status := "Queued"
	if inv.state == nil && !inv.def.Served(s.store.Now()) {
		// No live worker serves the entry (catalog.go): never a silent wait.
		if policy == proto.PolicySync || (policy == proto.PolicyAuto && !declared) {
			return nil, noWorker(inv)
		}
		status = fmt.Sprintf("Queued: waiting for a worker of queue %s (none serves %s now)", inv.def.Queue, inv.name)
	}
	owner := taskstate.OwnerTag(c.principal)
	bind := func() string { return binding(inv.method, inv.name, inv.args) } // only MRTR needs it

	var (
		ref taskstate.Ref
		sub *taskstate.Subscription
		rec *taskstate.Record
		err error
	)
	if inv.state != nil {
		st, err := s.verifyState(*inv.state, owner, bind(), s.cfg.Clock())
		if err != nil {
			return nil, err
		}
		ref = taskstate.Ref{Owner: owner, ID: st.TaskID}
		if sub, err = s.hub.Subscribe(ctx, s.store.Keys().Events(ref)); err != nil {
			return nil, err
		}
		defer sub.Close()
		if rec, err = s.deliverAnswers(ctx, ref, inv); err != nil {
			return nil, err
		}
	} else {
		ref = taskstate.Ref{Owner: owner, ID: taskstate.NewID()}
		handOut := (policy == proto.PolicyTask && inv.def.SyncBudgetMs <= 0) || c.legacyTask
		// Subscribe before the create, so no state change can be missed. A
		// call that relays no notification (no progress token, no log
		// level) needs only the states, so it waits for Redis's confirmation
		// after the create (one round trip less): the create counts the
		// channel's subscribers first, and when ours was not among them
		// yet, the record is read once the subscription is confirmed.
		overlap := !handOut && len(c.meta.ProgressToken) == 0 && proto.LoggingLevel(c.meta.LogLevel).Severity() < 0
		var listening bool
		switch {
		case overlap:
			sub, err = s.hub.Start(ctx, s.store.Keys().Events(ref))
		case !handOut:
			sub, err = s.hub.Subscribe(ctx, s.store.Keys().Events(ref))
		}
		if err != nil {
			return nil, err
		}
		if sub != nil {
			defer sub.Close()
		}
		if s.cfg.MaxArgumentBytes > 0 && int64(len(inv.args)) > s.cfg.MaxArgumentBytes {
			return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: arguments are %d bytes, more than the %d allowed per call",
				len(inv.args), s.cfg.MaxArgumentBytes)
		}
		caps, _ := encodeJSON(c.meta.ClientCapabilities)
		p := taskstate.CreateParams{
			ID: ref.ID, Principal: c.principal, Tool: inv.def.Key(), Arguments: inv.args,
			TTLMs: s.ttlFor(inv.def, c.requestedTTL), PollIntervalMs: s.pollFor(inv.def).Milliseconds(),
			StatusMessage: status, Capabilities: caps, MaxLive: max(s.cfg.MaxLiveTasks, 0),
			MaxArgBytes: max(s.cfg.MaxArgumentBytesHeld, 0),
		}
		if overlap {
			p.Listening = &listening
		}
		if err := s.bill(c, inv, &p); err != nil {
			return nil, err
		}
		if s.cfg.InlineMaxArgumentBytes >= 0 && len(inv.args) > s.cfg.InlineMaxArgumentBytes {
			if p.ArgumentsRef, err = s.storeArguments(ctx, ref.ID, inv.args); err != nil {
				return nil, err
			}
		}
		if rec, err = s.create(ctx, p, inv.def); err != nil {
			if p.ArgumentsRef != "" {
				s.dropArguments(ctx, p.ArgumentsRef, err)
			}
			if fe := (*taskstate.FundsError)(nil); errors.As(err, &fe) {
				s.metrics.billing.Refused(inv.def.Key())
				return fundsResult(inv.name, fe), nil
			}
			return nil, err
		}
		if rec.Ref == ref {
			s.metrics.created.WithLabelValues(inv.def.Key()).Inc()
			if p.Reserve != nil {
				s.metrics.billing.Reserved(inv.def.Key(), *p.Reserve)
			}
		} else { // an idempotency key's retry: the first call's task
			if p.ArgumentsRef != "" { // stored for a task that was not made
				if derr := s.cfg.Blobs.Delete(context.WithoutCancel(ctx), p.ArgumentsRef); derr != nil {
					s.log.Warn("delete the arguments of a replayed call (the age sweep will)", "key", p.ArgumentsRef, "err", derr)
				}
			}
			ref = rec.Ref
			if !handOut {
				replayed, err := s.hub.Subscribe(ctx, s.store.Keys().Events(ref))
				if err != nil {
					return nil, err
				}
				defer replayed.Close()
				sub = replayed
				if rec, err = s.store.Get(ctx, ref); err != nil {
					return nil, err
				}
			}
		}
		if handOut {
			return createTaskResult(rec), nil
		}
		if overlap && rec.Ref == ref {
			if sub.Confirmed(ctx) != nil {
				return nil, s.abandoned(ctx, c, ref)
			}
			if !listening { // an event may have come before the subscription
				if rec, err = s.store.Get(ctx, ref); err != nil {
					return nil, err
				}
			}
		}
		if c.session != nil && c.req.Method == proto.MethodToolsCall {
			s.holdResumable(ctx, c, ref)
		}
	}

	wait := s.cfg.SyncWaitLimit
	switch {
	case policy == proto.PolicyTask:
		wait = time.Duration(inv.def.SyncBudgetMs) * time.Millisecond
	case policy == proto.PolicyAuto && declared:
		wait = s.cfg.SyncBudget
		if inv.def.SyncBudgetMs > 0 {
			wait = time.Duration(inv.def.SyncBudgetMs) * time.Millisecond
		}
	}
	waitStart := time.Now()
	if !settled(rec) {
		// Only a task policy answers a completed task with more than its
		// result (createTaskResult).
		if rec, err = s.awaitSettled(ctx, c, sub, ref, wait, policy != proto.PolicyTask); err != nil {
			return nil, err
		}
	}

	switch {
	case rec.Status == proto.StatusInputRequired && c.session != nil:
		return s.relayInput(ctx, c, sub, rec, waitStart, wait)
	case rec.Status == proto.StatusInputRequired:
		return s.askInput(ctx, c, rec, bind())
	case policy == proto.PolicyTask:
		return createTaskResult(rec), nil
	case rec.Status.Terminal():
		return finalResult(rec)
	case policy == proto.PolicyAuto && declared:
		return createTaskResult(rec), nil
	}
	// Held open as long as allowed and still not done: give up the work too.
	_ = s.store.RequestCancel(context.WithoutCancel(ctx), ref)
	return nil, proto.NewError(proto.CodeInternalError, "Timed out after %s waiting for %s", wait, inv.name)
}

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
func (s *Server) awaitSettled(ctx context.Context, c *call, sub *taskstate.Subscription, ref taskstate.Ref, d time.Duration,
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
		// A held legacy call still running after the sync budget opens its
		// stream, so its first event id lets a client resume it.
		t := time.NewTimer(s.cfg.SyncBudget)
		defer t.Stop()
		prime = t.C
	}
	for {
		select {
		case payload := <-sub.C:
			ev := taskstate.DecodeEvent(payload)
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
			if ev.Status == proto.StatusWorking && ev.StatusMessage != "" && c.session != nil {
				s.statusProgress(c, ev.StatusMessage)
			}
			if c.watched != nil && ev.Version > 0 && ev.Status != "" {
				taskStatus(c, ev)
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
// stream (sselog.go; the task then runs on, bounded by its TTL), so the
// task is cancelled; a tasks/result (c.observer) only stops watching.
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
			return // progress only increases, also between the tool's own and statusProgress's
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

// statusProgress sends a legacy call's statusMessage update as
// notifications/progress (the 2025-11-25 client has no tasks/get to read it
// from): one step past the last progress sent, with the message; the
// message sent last is not sent again.
func (s *Server) statusProgress(c *call, msg string) {
	if len(c.meta.ProgressToken) == 0 || (c.progressSent && msg == c.progressMessage) {
		return
	}
	if c.progressSent {
		c.progress++
	}
	c.progressSent, c.progressMessage = true, msg
	c.resp.notify(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: proto.NotifyProgress,
		Params: proto.ProgressParams{ProgressToken: c.meta.ProgressToken, Progress: c.progress, Message: msg}})
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
func (s *Server) create(ctx context.Context, p taskstate.CreateParams, def *taskstate.ToolDef) (*taskstate.Record, error) {
	ref := taskstate.Ref{Owner: taskstate.OwnerTag(p.Principal), ID: p.ID}
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
func (s *Server) dropJob(ctx context.Context, ref taskstate.Ref, def *taskstate.ToolDef) {
	err := s.jobs.Drop(queueJob(jobOf(ref, def, 0)))
	if err != nil && ctx.Err() == nil {
		s.log.Debug("job of a refused create not deleted", "task", ref.ID, "err", err)
	}
}

// enqueue puts the task's job on its queue; an id conflict means it is
// there already. A first run that cannot be enqueued fails the task.
func (s *Server) enqueue(ctx context.Context, rec *taskstate.Record, def *taskstate.ToolDef, resume int64) error {
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
func (s *Server) submit(ctx context.Context, ref taskstate.Ref, def *taskstate.ToolDef, resume int64) error {
	return s.cfg.Enqueuer.Enqueue(ctx, jobOf(ref, def, resume))
}

// jobOf is the job of ref's run number seq, for its catalog entry def.
func jobOf(ref taskstate.Ref, def *taskstate.ToolDef, seq int64) Job {
	return Job{Task: ref, Tool: def.Key(), Seq: seq, Queue: def.Queue}
}

// unscheduled ends a new record nothing will run, rather than leave it working.
func (s *Server) unscheduled(ctx context.Context, rec *taskstate.Record) {
	_ = s.store.Finish(context.WithoutCancel(ctx), rec.Ref, 0, taskstate.Outcome{
		Status: proto.StatusFailed, StatusMessage: "Could not be scheduled",
		Error: proto.NewError(proto.CodeInternalError, "Internal error: the task could not be scheduled")})
}

// ttlFor is the task lifetime of an entry's calls, capped by MaxTTL; nil is
// unlimited. A requested TTL (a 2025-11-25 task.ttl; nil: none) shortens it,
// never lengthens it.
func (s *Server) ttlFor(def *taskstate.ToolDef, requested *int64) *int64 {
	ttl := s.cfg.DefaultTTL
	switch {
	case def.TTLMs == taskstate.UnlimitedTTL && s.cfg.AllowUnlimitedTTL:
		return requested
	case def.TTLMs == taskstate.UnlimitedTTL:
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

func (s *Server) pollFor(def *taskstate.ToolDef) time.Duration {
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

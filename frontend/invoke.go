package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/billing"
	"github.com/mcpq/mcpq/taskstate/catalog"
	"github.com/mcpq/mcpq/taskstate/events"
)

// invocation is one run of a catalog entry for a request: a tool call, a
// prompt, a resource read or a completion. All of them are task records run
// by workers, so each may ask for input (MRTR) the same way.
type invocation struct {
	def *catalog.Entry
	// method and name identify the request a requestState is bound to.
	method, name string
	// args is the job's arguments object.
	args json.RawMessage
	// responses and state are the MRTR retry's inputResponses and requestState.
	responses json.RawMessage
	state     *string
}

// invoke runs inv with the server-directed decision (docs/calls.md), in
// four steps: decide the entry's policy and how long the
// request may wait (decide); start its task, or resume the one an MRTR
// retry's requestState names (start, resume); wait for the task to end or
// ask for input (await); answer what the policy gives the task as it is
// then (respond). A sync entry is waited for; a task tool answers a task at
// once (or, with a sync budget, after gathering input by MRTR); an auto
// tool waits its budget and then answers a task to a client with the Tasks
// extension, and keeps waiting for one without. Input asked while the
// request still waits is answered as an InputRequiredResult whose
// requestState names the task.
func (s *Server) invoke(ctx context.Context, c *call, inv invocation) (any, error) {
	pl, err := s.decide(c, inv)
	if err != nil {
		return nil, err
	}
	var t running
	defer t.close()
	if inv.state != nil {
		err = s.resume(ctx, c, inv, &t)
	} else {
		var answered any
		if answered, err = s.start(ctx, c, inv, pl, &t); answered != nil {
			return answered, nil
		}
	}
	if err != nil {
		return nil, err
	}
	waitStart := time.Now()
	if err := s.await(ctx, c, pl, &t); err != nil {
		return nil, err
	}
	return s.respond(ctx, c, inv, pl, &t, waitStart)
}

// plan is what decide settles for an invocation.
type plan struct {
	policy proto.Policy
	// declared: the request declared the Tasks extension.
	declared bool
	// handOut: answer the task at once, without waiting for it.
	handOut bool
	// status is a new task's first statusMessage.
	status string
	// wait is how long the request waits for the task.
	wait time.Duration
}

// decide is the invocation's plan: the entry's execution policy (every
// kind but a tool is sync; a tool's default is auto), refused with -32021
// for a task tool when the request did not declare the Tasks extension, or
// answered with an error at once when no live worker serves the entry and
// the request could only wait.
func (s *Server) decide(c *call, inv invocation) (plan, error) {
	pl := plan{policy: inv.def.Policy, declared: c.tasksDeclared(), status: "Queued"}
	if inv.def.Kind != catalog.KindTool {
		pl.policy = proto.PolicySync
	} else if pl.policy == "" {
		pl.policy = proto.PolicyAuto
	}
	if pl.policy == proto.PolicyTask && !pl.declared {
		return pl, proto.MissingTasksExtension()
	}
	if inv.state == nil && !inv.def.Served(s.store.Now()) {
		// No live worker serves the entry (catalog.go): never a silent wait.
		if pl.policy == proto.PolicySync || (pl.policy == proto.PolicyAuto && !pl.declared) {
			return pl, noWorker(inv)
		}
		pl.status = fmt.Sprintf("Queued: waiting for a worker of queue %s (none serves %s now)", inv.def.Queue, inv.name)
	}
	pl.handOut = (pl.policy == proto.PolicyTask && inv.def.SyncBudgetMs <= 0) || c.taskNow
	pl.wait = s.cfg.SyncWaitLimit
	switch {
	case pl.policy == proto.PolicyTask:
		pl.wait = time.Duration(inv.def.SyncBudgetMs) * time.Millisecond
	case pl.policy == proto.PolicyAuto && pl.declared:
		pl.wait = s.cfg.SyncBudget
		if inv.def.SyncBudgetMs > 0 {
			pl.wait = time.Duration(inv.def.SyncBudgetMs) * time.Millisecond
		}
	}
	return pl, nil
}

// running is the task an invocation waits for, as its steps pass it on.
type running struct {
	ref taskstate.Ref
	// sub carries the task's events (nil: a task handed out at once).
	sub *events.Subscription
	// rec is the record as last read (or as an event showed it).
	rec *taskstate.Record
}

func (t *running) close() {
	if t.sub != nil {
		t.sub.Close()
	}
}

// resume starts an MRTR retry from the task its requestState names
// (verified: this principal's, for this request), subscribed to its
// events, with the retry's inputResponses delivered (deliverAnswers).
func (s *Server) resume(ctx context.Context, c *call, inv invocation, t *running) error {
	owner := taskstate.OwnerTag(c.principal)
	st, err := s.verifyState(*inv.state, owner, binding(inv.method, inv.name, inv.args), s.cfg.Clock())
	if err != nil {
		return err
	}
	t.ref = taskstate.Ref{Owner: owner, ID: st.TaskID}
	if t.sub, err = s.hub.Subscribe(ctx, s.store.Keys().Events(t.ref)); err != nil {
		return err
	}
	t.rec, err = s.deliverAnswers(ctx, t.ref, inv)
	return err
}

// start creates the invocation's task (newTask), subscribed first to its
// events unless the plan hands the task out at once. It answers early
// (answered, not nil) with a task handed out at once, or a refusal for
// want of funds. An idempotency key's retry waits for the first call's
// task.
func (s *Server) start(ctx context.Context, c *call, inv invocation, pl plan, t *running) (answered any, err error) {
	t.ref = taskstate.Ref{Owner: taskstate.OwnerTag(c.principal), ID: taskstate.NewID()}
	// Subscribe before the create, so no state change can be missed. A
	// call that relays no notification (no progress token, no log level)
	// needs only the states, so it waits for Redis's confirmation after
	// the create (one round trip less): the create counts the channel's
	// subscribers first, and when ours was not among them yet, the record
	// is read once the subscription is confirmed.
	overlap := !pl.handOut && len(c.meta.ProgressToken) == 0 && proto.LoggingLevel(c.meta.LogLevel).Severity() < 0
	var listening bool
	switch {
	case overlap:
		t.sub, err = s.hub.Start(ctx, s.store.Keys().Events(t.ref))
	case !pl.handOut:
		t.sub, err = s.hub.Subscribe(ctx, s.store.Keys().Events(t.ref))
	}
	if err != nil {
		return nil, err
	}
	var heard *bool // overlap: whether the create found our subscription
	if overlap {
		heard = &listening
	}
	if t.rec, answered, err = s.newTask(ctx, c, inv, t.ref, pl.status, heard); answered != nil || err != nil {
		return answered, err
	}
	if t.rec.Ref != t.ref { // an idempotency key's retry: the first call's task
		t.ref = t.rec.Ref
		if !pl.handOut {
			replayed, err := s.hub.Subscribe(ctx, s.store.Keys().Events(t.ref))
			if err != nil {
				return nil, err
			}
			t.sub.Close()
			t.sub = replayed
			if t.rec, err = s.store.Get(ctx, t.ref); err != nil {
				return nil, err
			}
		}
	}
	if pl.handOut {
		return createTaskResult(t.rec), nil
	}
	if overlap {
		if t.sub.Confirmed(ctx) != nil {
			return nil, s.abandoned(ctx, c, t.ref)
		}
		if !listening { // an event may have come before the subscription
			if t.rec, err = s.store.Get(ctx, t.ref); err != nil {
				return nil, err
			}
		}
	}
	if c.hook != nil {
		c.hook.Held(ctx, t.ref)
	}
	return nil, nil
}

// newTask writes the task record ref of the invocation and enqueues its
// job (create): the arguments checked against the per-call bound, the
// call's price reserved (bill), large arguments stored apart. A refusal
// for want of funds is the call's answer (answered); an idempotency key's
// retry returns the first call's record. heard, when not nil, is
// CreateParams.Listening.
func (s *Server) newTask(ctx context.Context, c *call, inv invocation, ref taskstate.Ref, status string,
	heard *bool) (rec *taskstate.Record, answered any, err error) {
	if s.cfg.MaxArgumentBytes > 0 && int64(len(inv.args)) > s.cfg.MaxArgumentBytes {
		return nil, nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: arguments are %d bytes, more than the %d allowed per call",
			len(inv.args), s.cfg.MaxArgumentBytes)
	}
	caps, _ := encodeJSON(c.meta.ClientCapabilities)
	p := taskstate.CreateParams{
		ID: ref.ID, Owner: ref.Owner, Principal: c.principal, Tool: inv.def.Key(), Arguments: inv.args,
		TTLMs: s.ttlFor(inv.def, c.ttl), PollIntervalMs: s.pollFor(inv.def).Milliseconds(),
		StatusMessage: status, Capabilities: caps, MaxLive: max(s.cfg.MaxLiveTasks, 0),
		MaxArgBytes: max(s.cfg.MaxArgumentBytesHeld, 0), Listening: heard,
	}
	if err := s.bill(c, inv, &p); err != nil {
		return nil, nil, err
	}
	if s.cfg.InlineMaxArgumentBytes >= 0 && len(inv.args) > s.cfg.InlineMaxArgumentBytes {
		if p.ArgumentsRef, err = s.storeArguments(ctx, ref.ID, inv.args); err != nil {
			return nil, nil, err
		}
	}
	if rec, err = s.create(ctx, p, inv.def); err != nil {
		if p.ArgumentsRef != "" {
			s.dropArguments(ctx, p.ArgumentsRef, err)
		}
		if fe := (*billing.FundsError)(nil); errors.As(err, &fe) {
			s.metrics.billing.Refused(inv.def.Key())
			s.series.Refused(inv.def.Key())
			return nil, fundsResult(inv.name, fe), nil
		}
		return nil, nil, err
	}
	switch {
	case rec.Ref == ref:
		s.metrics.created.WithLabelValues(inv.def.Key()).Inc()
		s.series.Created(inv.def.Key())
		if p.Reserve != nil {
			s.metrics.billing.Reserved(inv.def.Key(), *p.Reserve)
			s.series.Reserved(inv.def.Key(), *p.Reserve)
		}
	case p.ArgumentsRef != "": // a replay: stored for a task that was not made
		if derr := s.cfg.Blobs.Delete(context.WithoutCancel(ctx), p.ArgumentsRef); derr != nil {
			s.log.Warn("delete the arguments of a replayed call (the age sweep will)", "key", p.ArgumentsRef, "err", derr)
		}
	}
	return rec, nil, nil
}

// await waits up to the plan's wait for the task to end or ask for input
// (awaitSettled), unless its record shows it did already.
func (s *Server) await(ctx context.Context, c *call, pl plan, t *running) error {
	if settled(t.rec) {
		return nil
	}
	// Only a task policy answers a completed task with more than its
	// result (createTaskResult).
	rec, err := s.awaitSettled(ctx, c, t.sub, t.ref, pl.wait, pl.policy != proto.PolicyTask)
	if err != nil {
		return err
	}
	t.rec = rec
	return nil
}

// respond is what the policy answers for the task as the wait left it:
// its input requests (an InputRequiredResult, or the era's relay when
// another era holds the call), a task (the task policy; auto for a client
// with the extension), or its result. A call held as long as allowed and
// still not done gives up the work too.
func (s *Server) respond(ctx context.Context, c *call, inv invocation, pl plan, t *running, waitStart time.Time) (any, error) {
	rec := t.rec
	switch {
	case rec.Status == proto.StatusInputRequired && c.hook != nil:
		return c.hook.AskInput(ctx, t.sub, rec, waitStart, pl.wait)
	case rec.Status == proto.StatusInputRequired:
		return s.askInput(ctx, c, rec, binding(inv.method, inv.name, inv.args))
	case pl.policy == proto.PolicyTask:
		return createTaskResult(rec), nil
	case rec.Status.Terminal():
		return finalResult(rec)
	case pl.policy == proto.PolicyAuto && pl.declared:
		return createTaskResult(rec), nil
	}
	_ = s.store.RequestCancel(context.WithoutCancel(ctx), t.ref)
	return nil, proto.NewError(proto.CodeInternalError, "Timed out after %s waiting for %s", pl.wait, inv.name)
}

package mcpqtest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
	"github.com/mcpq/mcpq/worker"
)

// Run is one call of a tool: a task (or, for arguments the schema refused,
// the answer that made none).
type Run struct {
	env   *Env
	tool  *tool
	ref   taskstate.Ref
	sub   *events.Subscription
	early *proto.CallToolResult // answered without a task
	// What the task's events said so far (observe): its log messages in
	// order, whether its end was heard, and whether some events were lost.
	logs  []proto.LoggingMessageParams
	ended bool
	lost  bool
}

// State is what a client (tasks/get) would see of the task now.
type State struct {
	// Status is the task's status ("" once Gone).
	Status proto.TaskStatus
	// StatusMessage is the tool's last progress message.
	StatusMessage string
	// InputRequests are the pending input requests by key (input_required).
	InputRequests map[string]proto.InputRequest
	// Result is the tool's result (completed).
	Result *proto.CallToolResult
	// Error is the JSON-RPC error the task failed with (failed).
	Error *proto.Error
	// Attempt counts the deliveries of the task's job that claimed it.
	Attempt int64
	// Gone is set once the task expired and its record was removed.
	Gone bool
}

// TaskID is the task's id ("" when the arguments made no task).
func (r *Run) TaskID() string { return r.ref.ID }

// State reads the task's state now.
func (r *Run) State(t testing.TB) State {
	t.Helper()
	st, err := r.state()
	if err != nil {
		t.Fatalf("mcpqtest: read task: %v", err)
	}
	return st
}

func (r *Run) state() (State, error) {
	if r.early != nil {
		return State{Status: proto.StatusCompleted, Result: r.early}, nil
	}
	rec, err := r.env.record(r.ref)
	if errors.Is(err, errGone) || errors.Is(err, taskstate.ErrExpired) {
		return State{Gone: errors.Is(err, errGone)}, nil
	}
	if err != nil {
		return State{}, err
	}
	st := State{Status: rec.Status, StatusMessage: rec.StatusMessage, Error: rec.Error, Attempt: rec.Attempt}
	if len(rec.InputRequests) > 0 {
		st.InputRequests = map[string]proto.InputRequest{}
		for k, raw := range rec.InputRequests {
			var req proto.InputRequest
			if err := json.Unmarshal(raw, &req); err != nil {
				return State{}, err
			}
			st.InputRequests[k] = req
		}
	}
	if rec.Status == proto.StatusCompleted {
		st.Result = &proto.CallToolResult{}
		if err := json.Unmarshal(rec.Result, st.Result); err != nil {
			return State{}, err
		}
	}
	return st, nil
}

// WaitFor waits until ok accepts the task's state (checked now, on every
// change of the task and of its deliveries) and returns that state; what
// names the wait in the failure.
func (r *Run) WaitFor(t testing.TB, what string, ok func(State) bool) State {
	t.Helper()
	deadline := time.NewTimer(Bound)
	defer deadline.Stop()
	// A slow tick as well: a clock move changes no record by itself.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last State
	for {
		_, _, changed := r.env.deliveries(r.ref.ID)
		st, err := r.state()
		if err != nil {
			t.Fatalf("mcpqtest: read task: %v", err)
		}
		if last = st; ok(st) {
			return st
		}
		var events <-chan string
		if r.sub != nil {
			events = r.sub.C
		}
		select {
		case payload := <-events:
			r.observe(payload)
		case <-changed:
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("mcpqtest: no %s within %v; last state %+v", what, Bound, last)
		}
	}
}

// WaitStatus waits for the task's status.
func (r *Run) WaitStatus(t testing.TB, status proto.TaskStatus) State {
	t.Helper()
	return r.WaitFor(t, "status "+string(status), func(s State) bool { return s.Status == status })
}

// WaitMessage waits for a statusMessage containing text.
func (r *Run) WaitMessage(t testing.TB, text string) State {
	t.Helper()
	return r.WaitFor(t, "statusMessage containing "+text, func(s State) bool {
		return strings.Contains(s.StatusMessage, text)
	})
}

// End waits for the task to end (completed, failed or cancelled).
func (r *Run) End(t testing.TB) State {
	t.Helper()
	return r.WaitFor(t, "end of the task", func(s State) bool { return s.Status.Terminal() })
}

// Result waits for the task to complete and returns its result (which may
// be a tool error: check IsError). A task that failed or was cancelled
// fails the test.
func (r *Run) Result(t testing.TB) *proto.CallToolResult {
	t.Helper()
	st := r.End(t)
	if st.Status != proto.StatusCompleted {
		t.Fatalf("mcpqtest: task ended %s (%s), error %v", st.Status, st.StatusMessage, st.Error)
	}
	return st.Result
}

// Logs waits for the task to end and returns the log messages
// (notifications/message, worker.Call.Log) the tool sent, in order: what
// a client holding the call at logLevel "debug" would have been sent.
func (r *Run) Logs(t testing.TB) []proto.LoggingMessageParams {
	t.Helper()
	if r.early != nil {
		return nil
	}
	deadline := time.NewTimer(Bound)
	defer deadline.Stop()
	for !r.ended {
		select {
		case payload := <-r.sub.C:
			r.observe(payload)
		case <-deadline.C:
			t.Fatalf("mcpqtest: the task did not end within %v (its log messages so far: %+v)", Bound, r.logs)
		}
	}
	if r.lost {
		t.Fatal("mcpqtest: some of the task's events were lost (left unread past the subscription's buffer), its log messages too")
	}
	return r.logs
}

// observe takes in one of the task's events.
func (r *Run) observe(payload string) {
	ev := events.Decode(payload)
	switch {
	case ev.Notification != "":
		var n struct {
			Method string                     `json:"method"`
			Params proto.LoggingMessageParams `json:"params"`
		}
		if json.Unmarshal([]byte(ev.Notification), &n) == nil && n.Method == proto.NotifyMessage {
			r.logs = append(r.logs, n.Params)
		}
	case ev.Resync:
		r.lost = true
	case ev.Status.Terminal(), ev.Expired:
		r.ended = true
	}
}

// Input waits until the task asks for input and returns its pending requests.
func (r *Run) Input(t testing.TB) map[string]proto.InputRequest {
	t.Helper()
	st := r.WaitFor(t, "input request", func(s State) bool {
		return s.Status == proto.StatusInputRequired || s.Status.Terminal()
	})
	if st.Status != proto.StatusInputRequired {
		t.Fatalf("mcpqtest: task ended %s (%s) without asking for input", st.Status, st.StatusMessage)
	}
	return st.InputRequests
}

// Answer sends answers (key → any JSON-encodable answer) as tasks/update
// does; once nothing is pending the task's job runs again. Answers to keys
// that are not pending are ignored, as a front end ignores them.
func (r *Run) Answer(t testing.TB, answers map[string]any) {
	t.Helper()
	raw := map[string]json.RawMessage{}
	for k, v := range answers {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("mcpqtest: answer %q: %v", k, err)
		}
		raw[k] = b
	}
	res, err := r.env.store.Answer(context.Background(), r.ref, raw)
	if err != nil {
		t.Fatalf("mcpqtest: answer: %v", err)
	}
	if res.Resume > 0 {
		r.enqueue(t, res.Resume)
	}
}

// Accept answers the elicitation asked under key with the submitted form content.
func (r *Run) Accept(t testing.TB, key string, content any) {
	t.Helper()
	r.Answer(t, map[string]any{key: map[string]any{"action": proto.ElicitAccept, "content": content}})
}

// Decline answers the elicitation asked under key: the user declined.
func (r *Run) Decline(t testing.TB, key string) {
	t.Helper()
	r.Answer(t, map[string]any{key: map[string]any{"action": proto.ElicitDecline}})
}

// Dismiss answers the elicitation asked under key: the user closed the
// form without choosing (action cancel).
func (r *Run) Dismiss(t testing.TB, key string) {
	t.Helper()
	r.Answer(t, map[string]any{key: map[string]any{"action": proto.ElicitCancel}})
}

// Cancel asks for the task's cancellation, as tasks/cancel does. Wait with
// End for the tool to stop.
func (r *Run) Cancel(t testing.TB) {
	t.Helper()
	if err := r.env.store.RequestCancel(context.Background(), r.ref); err != nil {
		t.Fatalf("mcpqtest: cancel: %v", err)
	}
}

// Expire moves the clock past the task's TTL and waits until the task was
// reaped (its record gone) and no handler of it runs any more.
func (r *Run) Expire(t testing.TB) {
	t.Helper()
	rec, err := r.env.store.Get(context.Background(), r.ref)
	if err != nil {
		t.Fatalf("mcpqtest: expire: %v", err)
	}
	if rec.TTLMs == nil {
		t.Fatalf("mcpqtest: expire: the task has an unlimited TTL")
	}
	deadline := rec.CreatedAt.Add(time.Duration(*rec.TTLMs) * time.Millisecond)
	r.env.clock.advance(deadline.Sub(r.env.clock.Now()) + time.Millisecond)
	r.WaitFor(t, "reaped task and stopped handler", func(s State) bool {
		_, active, _ := r.env.deliveries(r.ref.ID)
		return s.Gone && active == 0
	})
}

// Redeliver acts out the loss of the worker running the task: the
// handler's context ends and nothing it does afterwards reaches Redis
// first; the clock moves until its heartbeat counts as lost; the worker's
// takeover scan enqueues the job again; and Redeliver returns once a new
// delivery started the handler (from the start, with the saved
// checkpoint). What the lost delivery still writes is refused.
func (r *Run) Redeliver(t testing.TB) {
	t.Helper()
	rec, err := r.env.store.Get(context.Background(), r.ref)
	if err != nil {
		t.Fatalf("mcpqtest: redeliver: %v", err)
	}
	if rec.Status != proto.StatusWorking || rec.Running == 0 {
		t.Fatalf("mcpqtest: redeliver: task is %s and held by no delivery", rec.Status)
	}
	lost := rec.Running
	release := r.env.kill(r.ref.ID, lost)
	defer release()
	r.WaitFor(t, "new delivery", func(State) bool {
		rec, err := r.env.store.Get(context.Background(), r.ref)
		if err == nil && rec.Running == lost && r.env.clock.Now().Sub(rec.Heartbeat) <= lostAfter {
			// Still held, and its last heartbeat is not yet lost: move the
			// clock. Once it is lost no takeover's new claim can be made
			// to look lost too: the clock moves no more.
			r.env.clock.advance(lostAfter + time.Millisecond)
		}
		started, _, _ := r.env.deliveries(r.ref.ID)
		return len(started) > 0 && started[len(started)-1] > lost
	})
}

// Deliveries lists the attempt number of each delivery that started the
// handler, in order (the handler runs again after input and after a
// re-delivery).
func (r *Run) Deliveries() []int64 {
	started, _, _ := r.env.deliveries(r.ref.ID)
	return slices.Clone(started)
}

// enqueue puts the task's job number seq on its tool's queue, as a front
// end does.
func (r *Run) enqueue(t testing.TB, seq int64) {
	t.Helper()
	q := r.tool.Queue
	if q == "" {
		q = worker.DefaultQueue
	}
	err := r.env.jobs.Enqueue(context.Background(), queue.Job{Ref: r.ref, Tool: r.tool.Name, Seq: seq, Queue: q})
	if err != nil {
		t.Fatalf("mcpqtest: enqueue: %v", err)
	}
}

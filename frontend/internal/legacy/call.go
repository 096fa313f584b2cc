package legacy

import (
	"context"
	"net/http"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
)

// Call is one request of the era in flight. Its exported methods are what
// the modern call path leaves to an era (frontend/hook.go): they are called
// only for a request the era attached itself to (Request.Attach).
type Call struct {
	era *Era
	req Request
	// session is the session the request belongs to (nil: an initialize).
	session *Session
	// meta is the _meta rebuilt from the session (useSession).
	meta *proto.RequestMeta
	// observer: the request only watches a task (tasks/result).
	observer bool
	// watched is the task a tasks/result waits for, as it was when the
	// wait began: its status changes go out as notifications/tasks/status
	// on the request's stream.
	watched *taskstate.Record
	// stream names the request's resumable stream ("" before it has one).
	stream string
	// asked holds the input request keys the call's stream carried
	// already; relayInput does not ask them again.
	asked map[string]bool
	// progressMessage is the message of the last notifications/progress
	// that carried a statusMessage: the same one again (a stale event) is
	// not sent twice.
	progressMessage string
}

// Held is called once a tools/call's task exists and the call waits for
// it (task ref): a held call's stream becomes resumable, so a broken
// connection no longer cancels the task (resume.go).
func (c *Call) Held(ctx context.Context, ref taskstate.Ref) {
	if c.req.RPC().Method == proto.MethodToolsCall {
		c.holdResumable(ctx, ref)
	}
}

// State is called with each state of the task the request waits for that
// is new to it: a statusMessage goes out as notifications/progress (the
// era's client has no tasks/get to read it from), and a watched task's
// state as notifications/tasks/status.
func (c *Call) State(ev events.Event) {
	if ev.Status == proto.StatusWorking && ev.StatusMessage != "" {
		c.statusProgress(ev.StatusMessage)
	}
	if c.watched != nil && ev.Version > 0 && ev.Status != "" {
		c.taskStatus(ev)
	}
}

// AskInput answers a parked task's input requests as the era does: each
// goes to the client as a server-to-client request on the call's stream,
// and the call is held (until wait has passed since start) while the
// answers come back (input.go).
func (c *Call) AskInput(ctx context.Context, sub *events.Subscription, rec *taskstate.Record, start time.Time,
	wait time.Duration) (any, error) {
	rec, err := c.relayInput(ctx, sub, rec, start, wait)
	if err != nil {
		return nil, err
	}
	return c.era.host.Result(rec, "")
}

// Status is the HTTP status of the request's error: the 2025-11-25
// transport carries JSON-RPC errors in a 200 answer, so only statuses
// that are the transport's own (a missing session, 401, 413, 429, 503)
// stay.
func (c *Call) Status(err error, status int) int {
	if c.era.host.Pinned(err) {
		return status
	}
	if status == http.StatusBadRequest || status == http.StatusNotFound {
		return http.StatusOK
	}
	return status
}

// statusProgress sends a statusMessage update as notifications/progress:
// one step past the last progress sent, with the message; the message
// sent last is not sent again.
func (c *Call) statusProgress(msg string) {
	if len(c.meta.ProgressToken) == 0 || msg == c.progressMessage {
		return
	}
	c.progressMessage = msg
	c.req.Notify(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: proto.NotifyProgress,
		Params: proto.ProgressParams{ProgressToken: c.meta.ProgressToken, Progress: c.req.NextProgress(), Message: msg}})
}

// taskStatus sends a watched task's new state (notifications/tasks/status,
// the full task) on the request's stream.
func (c *Call) taskStatus(ev events.Event) {
	rec := *c.watched
	rec.Status, rec.StatusMessage, rec.LastUpdatedAt = ev.Status, ev.StatusMessage, ev.LastUpdatedAt
	c.req.Notify(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: NotifyTaskStatus, Params: TaskOf(rec.Task())})
}

// settled reports whether the request can be answered from rec as it is:
// the task ended or asks for input.
func settled(rec *taskstate.Record) bool {
	return rec.Status.Terminal() || rec.Status == proto.StatusInputRequired
}

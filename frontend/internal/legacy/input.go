package legacy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
)

// Input for a call held open (2025-11-25): each input request of
// the parked task goes to the client as a server-to-client request on the
// call's SSE stream, with an id naming the task and the request's key. The
// client POSTs its answer as a JSON-RPC response with its Mcp-Session-Id;
// whichever front end receives it writes it into the task record (the same
// update as tasks/update) and resumes the task, whose events then reach the
// front end holding the call.

// inputIDPrefix starts the id of a server-to-client input request.
const inputIDPrefix = "mcpq-input:"

// inputRequestID is the JSON-RPC id of the input request key of task id.
func inputRequestID(taskID, key string) string { return inputIDPrefix + taskID + ":" + key }

// parseInputRequestID splits an id made by inputRequestID.
func parseInputRequestID(id string) (taskID, key string, ok bool) {
	rest, ok := strings.CutPrefix(id, inputIDPrefix)
	if !ok {
		return "", "", false
	}
	taskID, key, ok = strings.Cut(rest, ":")
	return taskID, key, ok && taskstate.ValidID(taskID) && key != ""
}

// relayInput asks the client for the input the call's task waits for, on
// the call's stream, and keeps holding the call (until wait has passed
// since start) while the answers come back; it returns the task once it
// ended.
func (c *Call) relayInput(ctx context.Context, sub *events.Subscription, rec *taskstate.Record,
	start time.Time, wait time.Duration) (*taskstate.Record, error) {
	ref := rec.Ref
	asked := c.asked
	if asked == nil {
		asked = map[string]bool{}
	}
	var err error
	for rec.Status == proto.StatusInputRequired {
		if err := c.askInput(ctx, rec, asked); err != nil {
			return nil, err
		}
		left := wait - time.Since(start)
		if left <= 0 {
			break
		}
		if rec, err = c.req.Await(ctx, sub, ref, left, true); err != nil {
			return nil, err
		}
	}
	if rec.Status.Terminal() {
		return rec, nil
	}
	if !c.observer {
		_ = c.era.tasks.RequestCancel(context.WithoutCancel(ctx), ref)
	}
	return nil, proto.NewError(proto.CodeInternalError, "Timed out after %s waiting for input", wait)
}

// askInput sends the input requests of rec not in asked yet (then in it),
// in key order; a kind of input the session did not declare, or a client
// that takes no stream, cancels the task.
func (c *Call) askInput(ctx context.Context, rec *taskstate.Record, asked map[string]bool) error {
	ref := rec.Ref
	keys := make([]string, 0, len(rec.InputRequests))
	methods := make([]string, 0, len(rec.InputRequests))
	for k, raw := range rec.InputRequests {
		var r struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(raw, &r)
		keys, methods = append(keys, k), append(methods, r.Method)
	}
	if err := proto.MissingInputCapabilities(*c.meta.ClientCapabilities, methods); err != nil {
		_ = c.era.tasks.RequestCancel(context.WithoutCancel(ctx), ref)
		return proto.NewError(proto.CodeInvalidParams, "Invalid params: %s, which this session did not declare", err.Message)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if asked[k] || c.onGetStream(ctx, ref.ID, k) {
			asked[k] = true
			continue
		}
		asked[k] = true
		var r struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params,omitempty"`
		}
		_ = json.Unmarshal(rec.InputRequests[k], &r)
		if c.observer { // tasks/result: the request belongs to a task the client knows
			r.Params = withRelatedTask(r.Params, ref.ID)
		}
		if !c.req.Notify(ServerRequest{JSONRPC: proto.JSONRPCVersion, ID: inputRequestID(ref.ID, k),
			Method: r.Method, Params: r.Params}) {
			_ = c.era.tasks.RequestCancel(context.WithoutCancel(ctx), ref)
			return proto.NewError(proto.CodeInvalidRequest,
				"Invalid Request: this tool asks for input, which needs a text/event-stream answer (Accept header)")
		}
	}
	return nil
}

// onGetStream reports whether the session's GET stream carried the input
// request key of task already (stream.go, askSession), so a tasks/result
// does not send it again; otherwise the request is claimed for the
// tasks/result's stream, and the GET stream leaves it. A held call's task
// is not the GET stream's: it is never asked there.
func (c *Call) onGetStream(ctx context.Context, task, key string) bool {
	if !c.observer || c.session == nil {
		return false
	}
	holder, _, err := c.era.store.ClaimInput(ctx, c.session.Owner, c.session.ID, c.stream, task, key, c.era.cfg.SessionIdle)
	return err == nil && strings.HasPrefix(holder, getStream)
}

// ClientResponse is a JSON-RPC response a client POSTs (an answer to an
// input request), as the front end decodes it from the body.
type ClientResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   *proto.Error    `json:"error"`
}

// IsResponse reports whether r, decoded from a POST body, is a JSON-RPC
// response; false for a request or notification, or what is not JSON-RPC
// at all.
func (r *ClientResponse) IsResponse() bool {
	return r.Method == nil && len(r.ID) > 0 && (len(r.Result) > 0 || r.Error != nil)
}

// ServeResponse takes a client's answer to an input request (a POST
// body with Mcp-Session-Id that is a JSON-RPC response): a result is
// delivered to the task (and the task resumed when nothing is pending any
// more); an error (the client could not answer) cancels it. 202 when
// taken; 404 for an unknown session; 400 for an id mcpq never sent.
func (e *Era) ServeResponse(w http.ResponseWriter, r *http.Request, principal string, resp *ClientResponse) {
	ctx := r.Context()
	owner := taskstate.OwnerTag(principal)
	sess, err := e.store.Session(ctx, owner, r.Header.Get(HeaderSessionID), e.cfg.SessionIdle)
	if errors.Is(err, ErrNoSession) {
		e.host.WriteError(w, e.errNoSession())
		return
	} else if err != nil {
		e.host.WriteError(w, err)
		return
	}
	id, _ := jsonString(resp.ID)
	taskID, key, ok := parseInputRequestID(id)
	if !ok || resp.JSONRPC != proto.JSONRPCVersion {
		e.host.WriteError(w, e.host.WithStatus(proto.NewError(proto.CodeInvalidRequest,
			"Invalid Request: a response to a request this server did not send"), http.StatusBadRequest))
		return
	}
	ref := taskstate.Ref{Owner: sess.Owner, ID: taskID}
	if resp.Error != nil || len(resp.Result) == 0 || resp.Result[0] != '{' {
		e.log.Debug("legacy client could not answer an input request; cancelling its task", "task", taskID, "key", key)
		err = e.tasks.RequestCancel(ctx, ref)
	} else {
		err = e.host.Answer(ctx, ref, map[string]json.RawMessage{key: resp.Result})
	}
	if err != nil && !errors.Is(err, taskstate.ErrTerminal) {
		e.host.WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// jsonString decodes a raw JSON string; ok is false for any other value.
func jsonString(raw json.RawMessage) (v string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	return v, json.Unmarshal(raw, &v) == nil
}

// withRelatedTask adds _meta["io.modelcontextprotocol/related-task"] to a
// request's params (2025-11-25 tasks: messages of a task name it).
func withRelatedTask(params json.RawMessage, taskID string) json.RawMessage {
	p := map[string]json.RawMessage{}
	_ = json.Unmarshal(params, &p)
	meta := map[string]json.RawMessage{}
	_ = json.Unmarshal(p["_meta"], &meta)
	meta[MetaRelatedTask], _ = json.Marshal(map[string]string{"taskId": taskID})
	p["_meta"], _ = json.Marshal(meta)
	out, _ := json.Marshal(p)
	return out
}

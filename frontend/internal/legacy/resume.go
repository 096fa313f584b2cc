package legacy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
)

// Resumable SSE streams of a session (2025-11-25 Streamable HTTP,
// "Resumability and Redelivery"). Each message a front end writes on a
// held tools/call's stream, a tasks/result stream or a GET stream is first
// appended to that stream's log in Redis (sselog.go); the SSE event id is
// the stream's name and the log entry's id, "c.TASK/ENTRY" for a call,
// "r.ID/ENTRY" for a tasks/result, "g.ID/ENTRY" for a GET stream, unique
// within the session. A client that lost the connection sends GET with
// Last-Event-ID to any front end: the messages of that stream after the id
// are replayed from Redis, then the stream goes on live. A held call whose
// stream breaks keeps its task running (its TTL bounds it); the resumed
// stream carries its remaining progress (or task statuses), its input
// requests and its final response.

// headerLastEventID is the SSE resumption header.
const headerLastEventID = "Last-Event-ID"

// Stream name prefixes.
const (
	callStream   = "c." // a held tools/call, named by its task
	resultStream = "r." // a tasks/result, named by a fresh id (a task may have several)
	getStream    = "g." // a GET stream, named by a fresh id
)

// EventLog appends a stream's events to the session's log in Redis: the
// front end's responder calls it for each event (Request.Log).
type EventLog struct {
	ctx                    context.Context // outlives the request: a broken stream still logs what it sent
	store                  *Store
	log                    *slog.Logger
	owner, session, stream string
	// writer names this request's hold on a request's stream ("" for a
	// GET stream): a resume elsewhere takes the stream over.
	writer string
	idle   time.Duration
	// prime: open the stream with an id-only event.
	prime bool
	// call is written with the first event (then nil): what a resume needs.
	call *StreamCall
}

// Append logs b (nil: a priming event; final: the request's final
// response) and returns its SSE event id, "" when Redis refused (the event
// then goes out without an id).
func (l *EventLog) Append(b []byte, final bool) string {
	id, err := l.store.AppendStreamEvent(l.ctx, l.owner, l.session, l.stream, l.writer, b, final, l.call, l.idle)
	if errors.Is(err, ErrTakenOver) {
		// The client resumed the stream elsewhere: this request's
		// connection is gone, and what it still sends reaches no one.
		l.log.Debug("an SSE stream resumed elsewhere; not logging its old request's event", "stream", l.stream)
		return ""
	} else if err != nil {
		l.log.Warn("log an SSE event for resumption", "stream", l.stream, "err", err)
		return ""
	}
	l.call = nil
	return l.stream + "/" + id
}

// Prime reports whether the stream opens with an id-only event, so a
// client that loses it before anything else was sent can resume it.
func (l *EventLog) Prime() bool { return l.prime }

// newEventLog is the log of stream in sess, written as writer.
func (e *Era) newEventLog(ctx context.Context, sess *Session, stream, writer string, prime bool) *EventLog {
	return &EventLog{ctx: context.WithoutCancel(ctx), store: e.store, log: e.log, owner: sess.Owner,
		session: sess.ID, stream: stream, writer: writer, idle: e.cfg.SessionIdle, prime: prime}
}

// holdResumable makes a held tools/call's stream resumable: once it
// streams, its events carry ids, and a broken connection no longer cancels
// the task (the front end's wait sees the stream is resumable).
func (c *Call) holdResumable(ctx context.Context, ref taskstate.Ref) {
	l := c.era.newEventLog(ctx, c.session, callStream+ref.ID, taskstate.NewID(), true)
	l.call = &StreamCall{RequestID: c.req.RPC().ID, TaskID: ref.ID, ProgressToken: c.meta.ProgressToken}
	c.req.Log(l)
}

// watchResumable makes a tasks/result's stream resumable: each event
// carries an id from the start (its first is the task's status), and the
// request is recorded for a resume. A tasks/result never cancels its task,
// so nothing else changes when its stream breaks.
func (c *Call) watchResumable(ctx context.Context, ref taskstate.Ref) {
	c.stream = resultStream + taskstate.NewID()
	l := c.era.newEventLog(ctx, c.session, c.stream, taskstate.NewID(), false)
	l.call = &StreamCall{RequestID: c.req.RPC().ID, TaskID: ref.ID}
	c.req.Log(l)
}

// resumableStream reports whether a stream name is that of a request's
// stream (a held call or a tasks/result) rather than a GET stream.
func resumableStream(stream string) bool {
	return strings.HasPrefix(stream, callStream) || strings.HasPrefix(stream, resultStream)
}

// parseEventID splits an SSE event id made by EventLog.Append.
func parseEventID(id string) (stream, entry string, ok bool) {
	stream, entry, ok = strings.Cut(id, "/")
	var name string
	found := false
	for _, prefix := range []string{callStream, resultStream, getStream} {
		if name, found = strings.CutPrefix(stream, prefix); found {
			break
		}
	}
	ok = ok && found && taskstate.ValidID(name) && (EntryAfter(entry, "0-0") || entry == "0-0")
	return stream, entry, ok
}

// replay writes the logged events of stream after entry on req, and
// reports whether the request's final response was among the events.
func replay(req Request, stream, entry string, events []StreamEvent) (final bool) {
	for _, ev := range events {
		final = final || ev.Final
		if len(ev.Data) == 0 || !EntryAfter(ev.ID, entry) {
			continue
		}
		req.Resend(stream+"/"+ev.ID, ev.Data)
	}
	return final
}

// resume serves GET with the Last-Event-ID of a held call's or a
// tasks/result's stream (stream, entry): the request's messages after that
// id, then its remaining progress (or task statuses) and input requests
// and its final response, as the POST would have sent them.
func (c *Call) resume(ctx context.Context, w http.ResponseWriter, stream, entry string) {
	e := c.era
	c.stream = stream
	writer := taskstate.NewID()
	sc, events, err := c.resumed(ctx, stream, writer)
	if err != nil {
		e.host.WriteError(w, err)
		return
	}
	ref := taskstate.Ref{Owner: c.session.Owner, ID: sc.TaskID}
	// Subscribed before the stream opens, so no change after it is missed.
	sub, err := e.cfg.Hub.Subscribe(ctx, e.tasks.Keys().Events(ref))
	if err != nil {
		e.host.WriteError(w, err)
		return
	}
	defer sub.Close()
	c.req.Log(e.newEventLog(ctx, c.session, stream, writer, false))
	c.req.KeepAlive() // the stream is open: headers out now
	if replay(c.req, stream, entry, events) {
		return // answered already: the replay ended with the response
	}
	var res any
	if c.observer {
		res, err = c.watchAgain(ctx, sub, ref, c.sentStatus(events))
	} else {
		res, err = c.holdAgain(ctx, sub, ref)
	}
	if err != nil && ctx.Err() != nil {
		return // gone again: the client may resume once more
	}
	c.req.Finish(sc.RequestID, res, err)
}

// resumed takes stream over as writer and reads what a resume of it
// needs: the request it answers (then the request c serves, with the
// _meta it had) and the events sent so far (what they asked and the
// progress they showed are c's from now on). Taken over first, so an
// event the old request still logs is either among these or not logged
// at all. A stream this session cannot resume is 400.
func (c *Call) resumed(ctx context.Context, stream, writer string) (*StreamCall, []StreamEvent, error) {
	e := c.era
	sc, err := e.store.TakeStream(ctx, c.session.Owner, c.session.ID, stream, writer)
	if err == nil && !validRequestID(sc.RequestID) {
		err = ErrNoStream
	}
	if errors.Is(err, ErrNoStream) {
		return nil, nil, e.host.WithStatus(proto.NewError(proto.CodeInvalidRequest,
			"Bad Request: Last-Event-ID names no stream of this session that can be resumed"), http.StatusBadRequest)
	} else if err != nil {
		return nil, nil, err
	}
	events, err := e.store.StreamEvents(ctx, c.session.Owner, c.session.ID, stream)
	if err != nil {
		return nil, nil, err
	}
	rpc := &proto.Request{JSONRPC: proto.JSONRPCVersion, ID: sc.RequestID, Method: proto.MethodToolsCall}
	if strings.HasPrefix(stream, resultStream) {
		rpc.Method = proto.MethodTasksRes
		c.observe()
	}
	c.req.Rebind(rpc)
	if _, err := c.useSession(); err != nil {
		return nil, nil, err
	}
	c.meta.ProgressToken = sc.ProgressToken
	if len(sc.ProgressToken) == 0 {
		c.meta.ProgressToken = nil
	}
	c.sentBefore(events)
	return sc, events, nil
}

// sentBefore takes in what a resumed stream's client was sent already: the
// progress so far and the input asked.
func (c *Call) sentBefore(events []StreamEvent) {
	c.asked = map[string]bool{}
	var progress float64
	sent := false
	for _, ev := range events {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(ev.Data, &m) != nil {
			continue
		}
		var p proto.ProgressParams
		if m.Method == proto.NotifyProgress && json.Unmarshal(m.Params, &p) == nil && (!sent || p.Progress > progress) {
			progress, sent, c.progressMessage = p.Progress, true, p.Message
		}
		if id, ok := jsonString(m.ID); ok && m.Method != "" {
			if _, key, ok := parseInputRequestID(id); ok {
				c.asked[key] = true
			}
		}
	}
	if sent {
		c.req.RestoreProgress(progress)
	}
}

// sentStatus is the last task status a tasks/result's stream carried.
func (c *Call) sentStatus(events []StreamEvent) Task {
	var status Task
	for _, ev := range events {
		var m struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(ev.Data, &m) == nil && m.Method == NotifyTaskStatus {
			_ = json.Unmarshal(m.Params, &status)
		}
	}
	return status
}

// validRequestID reports whether id, read back from a stream's record, is
// a JSON-RPC request id: a JSON string (valid UTF-8) or number.
func validRequestID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch c := id[0]; {
	case c == '"':
		return utf8.Valid(id)
	case c == '-' || (c >= '0' && c <= '9'):
		return true
	}
	return false
}

// watchAgain waits for a resumed tasks/result's task as taskResult did:
// its status changes and input requests, then its result. sent is the
// last status the stream carried; a change since goes out first.
func (c *Call) watchAgain(ctx context.Context, sub *events.Subscription, ref taskstate.Ref, sent Task) (any, error) {
	rec, err := c.era.tasks.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	c.watched = rec
	if now := TaskOf(rec.Task()); !rec.Status.Terminal() && (now.Status != sent.Status || now.StatusMessage != sent.StatusMessage) {
		c.req.Notify(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: NotifyTaskStatus, Params: now})
	}
	return c.awaitTaskResult(ctx, sub, rec)
}

// holdAgain holds a resumed call as the front end held it: until the task
// ends (its result) or asks for input (relayed), up to the sync wait
// limit.
func (c *Call) holdAgain(ctx context.Context, sub *events.Subscription, ref taskstate.Ref) (any, error) {
	rec, err := c.era.tasks.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	start, wait := time.Now(), c.era.cfg.SyncWaitLimit
	if !settled(rec) {
		if rec, err = c.req.Await(ctx, sub, ref, wait, false); err != nil {
			return nil, err
		}
	}
	switch {
	case rec.Status == proto.StatusInputRequired:
		return c.AskInput(ctx, sub, rec, start, wait)
	case rec.Status.Terminal():
		return c.era.host.Result(rec, "")
	}
	_ = c.era.tasks.RequestCancel(context.WithoutCancel(ctx), ref)
	return nil, proto.NewError(proto.CodeInternalError, "Timed out after %s waiting for the task", wait)
}

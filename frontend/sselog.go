package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/mcpq/mcpq/frontend/internal/legacy"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// Resumable SSE streams of a legacy session (2025-11-25 Streamable HTTP,
// "Resumability and Redelivery"). Each message a front end writes on a
// held tools/call's stream, a tasks/result stream or a GET stream is first
// appended to that stream's log in Redis (taskstate/sselog.go); the SSE
// event id is the stream's name and the log entry's id, "c.TASK/ENTRY" for
// a call, "r.ID/ENTRY" for a tasks/result, "g.ID/ENTRY" for a GET stream,
// unique within the session. A client that lost the connection sends GET
// with Last-Event-ID to any front end: the messages of that stream after
// the id are replayed from Redis, then the stream goes on live. A held
// call whose stream breaks keeps its task running (its TTL bounds it); the
// resumed stream carries its remaining progress (or task statuses), its
// input requests and its final response.

// headerLastEventID is the SSE resumption header.
const headerLastEventID = "Last-Event-ID"

// Stream name prefixes.
const (
	callStream   = "c." // a held tools/call, named by its task
	resultStream = "r." // a tasks/result, named by a fresh id (a task may have several)
	getStream    = "g." // a GET stream, named by a fresh id
)

// eventLog appends a stream's events to the session's log in Redis.
type eventLog struct {
	ctx                    context.Context // outlives the request: a broken stream still logs what it sent
	store                  *legacy.Store
	log                    *slog.Logger
	owner, session, stream string
	idle                   time.Duration
	// prime: open the stream with an id-only event.
	prime bool
	// call is written with the first event (then nil): what a resume needs.
	call *legacy.StreamCall
}

// append logs b (nil: a priming event) and returns its SSE event id, ""
// when Redis refused (the event then goes out without an id).
func (l *eventLog) append(b []byte, final bool) string {
	id, err := l.store.AppendStreamEvent(l.ctx, l.owner, l.session, l.stream, b, final, l.call, l.idle)
	if err != nil {
		l.log.Warn("log an SSE event for resumption", "stream", l.stream, "err", err)
		return ""
	}
	l.call = nil
	return l.stream + "/" + id
}

// newEventLog is the log of stream in c's session.
func (s *Server) newEventLog(ctx context.Context, c *call, stream string, prime bool) *eventLog {
	return &eventLog{ctx: context.WithoutCancel(ctx), store: s.sessions, log: s.log, owner: c.session.Owner,
		session: c.session.ID, stream: stream, idle: s.cfg.SessionIdle, prime: prime}
}

// holdResumable makes a held legacy tools/call's stream resumable: once it
// streams, its events carry ids, and a broken connection no longer cancels
// the task (awaitSettled).
func (s *Server) holdResumable(ctx context.Context, c *call, ref taskstate.Ref) {
	l := s.newEventLog(ctx, c, callStream+ref.ID, true)
	l.call = &legacy.StreamCall{RequestID: c.req.ID, TaskID: ref.ID, ProgressToken: c.meta.ProgressToken}
	c.resp.mu.Lock()
	c.resp.log = l
	c.resp.mu.Unlock()
}

// watchResumable makes a tasks/result's stream resumable: each event
// carries an id from the start (its first is the task's status), and the
// request is recorded for a resume. A tasks/result never cancels its task,
// so nothing else changes when its stream breaks.
func (s *Server) watchResumable(ctx context.Context, c *call, ref taskstate.Ref) {
	l := s.newEventLog(ctx, c, resultStream+taskstate.NewID(), false)
	l.call = &legacy.StreamCall{RequestID: c.req.ID, TaskID: ref.ID}
	c.resp.mu.Lock()
	c.resp.log = l
	c.resp.mu.Unlock()
}

// resumableStream reports whether a stream name is that of a request's
// stream (a held call or a tasks/result) rather than a GET stream.
func resumableStream(stream string) bool {
	return strings.HasPrefix(stream, callStream) || strings.HasPrefix(stream, resultStream)
}

// parseEventID splits an SSE event id made by eventLog.append.
func parseEventID(id string) (stream, entry string, ok bool) {
	stream, entry, ok = strings.Cut(id, "/")
	var name string
	found := false
	for _, prefix := range []string{callStream, resultStream, getStream} {
		if name, found = strings.CutPrefix(stream, prefix); found {
			break
		}
	}
	ok = ok && found && taskstate.ValidID(name) && (legacy.EntryAfter(entry, "0-0") || entry == "0-0")
	return stream, entry, ok
}

// replay writes the logged events of stream after entry on resp, and
// reports whether the request's final response was among the events.
func replay(resp *responder, stream, entry string, events []legacy.StreamEvent) (final bool) {
	resp.mu.Lock()
	defer resp.mu.Unlock()
	for _, ev := range events {
		final = final || ev.Final
		if len(ev.Data) == 0 || !legacy.EntryAfter(ev.ID, entry) {
			continue
		}
		_, _ = resp.w.Write([]byte("id: " + stream + "/" + ev.ID + "\nevent: message\ndata: "))
		_, _ = resp.w.Write(ev.Data)
		_, _ = resp.w.Write([]byte("\n\n"))
	}
	resp.flush()
	return final
}

// resumeCall serves GET with the Last-Event-ID of a held call's or a
// tasks/result's stream: the request's messages after that id, then its
// remaining progress (or task statuses) and input requests and its final
// response, as the POST would have sent them.
func (s *Server) resumeCall(ctx context.Context, c *call, stream, entry string) {
	sc, err := s.sessions.StreamCallOf(ctx, c.session.Owner, c.session.ID, stream)
	if err == nil && (len(sc.RequestID) == 0 || !validID(sc.RequestID)) {
		err = legacy.ErrNoStream
	}
	if errors.Is(err, legacy.ErrNoStream) {
		s.writeError(c.resp.w, nullID, withStatus(proto.NewError(proto.CodeInvalidRequest,
			"Bad Request: Last-Event-ID names no stream of this session that can be resumed"), http.StatusBadRequest))
		return
	} else if err != nil {
		s.writeError(c.resp.w, nullID, err)
		return
	}
	events, err := s.sessions.StreamEvents(ctx, c.session.Owner, c.session.ID, stream)
	if err != nil {
		s.writeError(c.resp.w, nullID, err)
		return
	}
	c.observer = strings.HasPrefix(stream, resultStream)
	c.req = &proto.Request{JSONRPC: proto.JSONRPCVersion, ID: sc.RequestID, Method: proto.MethodToolsCall}
	if c.observer {
		c.req.Method = proto.MethodTasksRes
	}
	if err := s.legacyMeta(c); err != nil {
		s.writeError(c.resp.w, nullID, err)
		return
	}
	c.meta.ProgressToken = sc.ProgressToken
	if len(sc.ProgressToken) == 0 {
		c.meta.ProgressToken = nil
	}
	c.asked = map[string]bool{}
	var status proto.LegacyTask // the last task status sent (tasks/result)
	for _, ev := range events { // what the client was sent already: progress so far, input asked
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(ev.Data, &m) != nil {
			continue
		}
		var p proto.ProgressParams
		if m.Method == proto.NotifyProgress && json.Unmarshal(m.Params, &p) == nil && (!c.progressSent || p.Progress > c.progress) {
			c.progress, c.progressSent, c.progressMessage = p.Progress, true, p.Message
		}
		if m.Method == proto.NotifyTaskStatus {
			_ = json.Unmarshal(m.Params, &status)
		}
		if id, ok := rawString(m.ID); ok && m.Method != "" {
			if _, key, ok := parseInputRequestID(id); ok {
				c.asked[key] = true
			}
		}
	}
	ref := taskstate.Ref{Owner: c.session.Owner, ID: sc.TaskID}
	// Subscribed before the stream opens, so no change after it is missed.
	sub, err := s.hub.Subscribe(ctx, s.store.Keys().Events(ref))
	if err != nil {
		s.writeError(c.resp.w, nullID, err)
		return
	}
	defer sub.Close()
	c.resp.log = s.newEventLog(ctx, c, stream, false)
	c.resp.keepAlive() // the stream is open: headers out now
	if replay(c.resp, stream, entry, events) {
		return // answered already: the replay ended with the response
	}
	var res any
	if c.observer {
		res, err = s.watchAgain(ctx, c, sub, ref, status)
	} else {
		res, err = s.holdAgain(ctx, c, sub, ref)
	}
	if err != nil {
		if ctx.Err() != nil {
			return // gone again: the client may resume once more
		}
		pe, _ := toRPC(err)
		c.resp.finish(http.StatusOK, s.encode(proto.Response{JSONRPC: proto.JSONRPCVersion, ID: sc.RequestID, Error: pe}))
		return
	}
	c.resp.finish(http.StatusOK, s.encode(proto.Response{JSONRPC: proto.JSONRPCVersion, ID: sc.RequestID, Result: s.withMeta(res)}))
}

// watchAgain waits for a resumed tasks/result's task as legacyTaskResult
// did: its status changes and input requests, then its result. sent is
// the last status the stream carried; a change since goes out first.
func (s *Server) watchAgain(ctx context.Context, c *call, sub *taskstate.Subscription, ref taskstate.Ref, sent proto.LegacyTask) (any, error) {
	rec, err := s.store.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	c.watched = rec
	if now := proto.LegacyTaskOf(rec.Task()); !rec.Status.Terminal() && (now.Status != sent.Status || now.StatusMessage != sent.StatusMessage) {
		c.resp.notify(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: proto.NotifyTaskStatus, Params: now})
	}
	return s.awaitTaskResult(ctx, c, sub, rec)
}

// holdAgain holds a resumed call as invoke held it: until the task ends
// (its result) or asks for input (relayed), up to the sync wait limit.
func (s *Server) holdAgain(ctx context.Context, c *call, sub *taskstate.Subscription, ref taskstate.Ref) (any, error) {
	rec, err := s.store.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	start, wait := time.Now(), s.cfg.SyncWaitLimit
	if !settled(rec) {
		if rec, err = s.awaitSettled(ctx, c, sub, ref, wait, false); err != nil {
			return nil, err
		}
	}
	switch {
	case rec.Status == proto.StatusInputRequired:
		return s.relayInput(ctx, c, sub, rec, start, wait)
	case rec.Status.Terminal():
		return finalResult(rec)
	}
	_ = s.store.RequestCancel(context.WithoutCancel(ctx), ref)
	return nil, proto.NewError(proto.CodeInternalError, "Timed out after %s waiting for the task", wait)
}

// resumable reports whether a client that loses this stream can resume it:
// it is logged and has sent an event (with an id) already.
func (r *responder) resumable() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log != nil && r.streaming
}

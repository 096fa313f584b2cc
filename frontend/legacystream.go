package frontend

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/mcpq/mcpq/frontend/internal/legacy"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// The legacy session's standalone stream (GET /mcp with Mcp-Session-Id,
// 2025-11-25 Streamable HTTP) and the resource subscriptions it carries.
// Subscriptions live in Redis with the session, so a resources/subscribe
// on one front end is honoured by a GET stream on another; catalog changes
// and resource updates reach every stream through Redis pub/sub, as they
// reach subscriptions/listen streams.

// subscribe serves resources/subscribe and resources/unsubscribe.
func (s *Server) subscribe(ctx context.Context, c *call, on bool) (any, error) {
	var p struct {
		URI string `json:"uri"`
	}
	if err := decodeParams(c, &p); err != nil {
		return nil, err
	}
	if p.URI == "" {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: uri is required")
	}
	err := s.sessions.Subscribe(ctx, c.session.Owner, c.session.ID, p.URI, on, s.cfg.SessionIdle)
	if errors.Is(err, legacy.ErrSubscriptionsLimit) {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: at most %d resource subscriptions per session",
			legacy.MaxSessionSubscriptions)
	}
	if err != nil {
		return nil, err
	}
	return legacyResult{}, nil
}

// serveGet opens a legacy session's standalone SSE stream: list_changed
// notifications and updates of the resources the session subscribed to,
// until the client closes it, the session ends or the server drains.
// Without a session (or with the legacy era off) GET is the modern
// transport's 405.
func (s *Server) serveGet(w http.ResponseWriter, r *http.Request) {
	principal, id, ok := s.admitSession(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	owner := taskstate.OwnerTag(principal)
	sess, err := s.sessions.Session(ctx, owner, id, s.cfg.SessionIdle)
	if errors.Is(err, legacy.ErrNoSession) {
		s.writeError(w, nullID, errNoSession())
		return
	} else if err != nil {
		s.writeError(w, nullID, err)
		return
	}
	resp := newResponder(w, r)
	if !resp.sseOK {
		s.writeError(w, nullID, withStatus(proto.NewError(proto.CodeInvalidRequest,
			"GET /mcp answers a text/event-stream: the Accept header must allow it"), http.StatusNotAcceptable))
		return
	}
	stream, entry := getStream+taskstate.NewID(), ""
	if last := r.Header.Get(headerLastEventID); last != "" {
		var ok bool
		if stream, entry, ok = parseEventID(last); !ok {
			s.writeError(w, nullID, withStatus(proto.NewError(proto.CodeInvalidRequest,
				"Bad Request: Last-Event-ID is not an event id of this server"), http.StatusBadRequest))
			return
		}
		if resumableStream(stream) {
			s.resumeCall(ctx, &call{req: &proto.Request{}, httpReq: r, principal: principal, resp: resp, legacy: true, session: sess},
				stream, entry)
			return
		}
	}
	release, err := s.listens.acquire(principal, s.cfg.MaxListenStreams)
	if err != nil {
		s.writeError(w, nullID, err)
		return
	}
	defer release()
	c := &call{req: &proto.Request{}, httpReq: r, principal: principal, resp: resp, session: sess}
	ctx, stopWatch := s.watchAuth(ctx, c)
	defer stopWatch()
	keys := s.store.Keys()
	lists, err := s.hub.Subscribe(ctx, keys.Lists())
	if err != nil {
		s.writeError(w, nullID, err)
		return
	}
	defer lists.Close()
	updates, err := s.hub.Subscribe(ctx, keys.ResourceUpdates())
	if err != nil {
		s.writeError(w, nullID, err)
		return
	}
	defer updates.Close()
	// One stream of the session gets its messages (2025-11-25: a message
	// goes on one stream only): the newest opened, until it closes.
	if err := s.sessions.TakeGetStream(ctx, owner, id, stream, getStreamHold); err != nil {
		s.writeError(w, nullID, err)
		return
	}
	defer func() { _ = s.sessions.ReleaseGetStream(context.WithoutCancel(ctx), owner, id, stream) }()
	mine := func() bool {
		ok, err := s.sessions.HoldsGetStream(ctx, owner, id, stream, getStreamHold)
		return err == nil && ok
	}
	send := func(method string, params any) {
		resp.notify(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: method, Params: params})
	}
	tasks, err := s.followSessionTasks(ctx, sess)
	if err != nil {
		s.writeError(w, nullID, err)
		return
	}
	defer tasks.close()
	resp.log = s.newEventLog(ctx, c, stream, entry == "")
	resp.keepAlive() // the stream is open: headers out now, once it holds the session's messages
	if entry != "" { // a resumed stream: what it sent after the client's last event
		events, err := s.sessions.StreamEvents(ctx, owner, id, stream)
		if err != nil {
			return
		}
		replay(resp, stream, entry, events)
	}
	sent := map[string]string{} // task id -> the state last sent
	tick := time.NewTicker(keepAliveEvery)
	defer tick.Stop()
	for {
		select {
		case v := <-lists.C:
			if !mine() {
				continue
			}
			resync := v == taskstate.EventResync
			if resync || v == taskstate.ListTools {
				send(proto.NotifyToolsListChanged, map[string]any{})
			}
			if resync || v == taskstate.ListPrompts {
				send(proto.NotifyPromptsListChanged, map[string]any{})
			}
			if resync || v == taskstate.ListResources {
				send(proto.NotifyResourcesChanged, map[string]any{})
			}
		case uri := <-updates.C:
			if uri == taskstate.EventResync {
				continue // which resources changed is unknown; list_changed on lists covers the catalog
			}
			if ok, err := s.sessions.Subscribed(ctx, owner, id, uri); err == nil && ok && mine() {
				send(proto.NotifyResourceUpdated, map[string]any{"uri": uri})
			}
		case ref := <-tasks.changed:
			rec, err := s.store.Get(ctx, ref)
			if err != nil {
				continue // ended and gone
			}
			task := proto.LegacyTaskOf(rec.Task())
			state := string(task.Status) + "\x00" + task.StatusMessage
			if sent[ref.ID] == state {
				continue
			}
			// Decided in Redis: a stream that took over from another
			// learns of a change the other sent already, and skips it.
			if ok, err := s.sessions.SendTaskState(ctx, owner, id, stream, ref.ID, rec.Version, state, getStreamHold,
				s.cfg.SessionIdle); err != nil || !ok {
				continue
			}
			sent[ref.ID] = state
			send(proto.NotifyTaskStatus, task)
		case <-tick.C:
			// The session may have ended (DELETE on any front end, or idle).
			if _, err := s.sessions.Session(ctx, owner, id, s.cfg.SessionIdle); errors.Is(err, legacy.ErrNoSession) {
				return
			}
			mine() // renews the hold
			resp.keepAlive()
		case <-s.draining:
			return
		case <-ctx.Done():
			return
		}
	}
}

// getStreamHold is how long a GET stream keeps the session's messages
// without renewing its hold (it renews at each keep-alive): a front end
// that vanished hands them to another open stream after this.
const getStreamHold = 2 * keepAliveEvery

// sessionTasks follows the state changes of a session's tasks for its GET
// stream (notifications/tasks/status).
type sessionTasks struct {
	changed chan taskstate.Ref
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func (t *sessionTasks) close() { t.cancel(); t.wg.Wait() }

// followSessionTasks watches the tasks sess created (the newest
// legacy.MaxSessionTasks) and those it creates while the stream is open
// (up to the same number): each state change sends the task's ref.
func (s *Server) followSessionTasks(ctx context.Context, sess *legacy.Session) (*sessionTasks, error) {
	ctx, cancel := context.WithCancel(ctx)
	t := &sessionTasks{changed: make(chan taskstate.Ref, 16), cancel: cancel}
	keys := s.store.Keys()
	// Announcements first, then the index: no task falls between the two.
	created, err := s.hub.Subscribe(ctx, s.sessions.Keys().SessionTaskCreated(sess.Owner, sess.ID))
	if err != nil {
		cancel()
		return nil, err
	}
	ids, err := s.sessions.SessionTasks(ctx, sess.Owner, sess.ID)
	if err != nil {
		created.Close()
		cancel()
		return nil, err
	}
	followed := map[string]bool{}
	// follow watches task id; fresh: a task announced just now, whose
	// state may have changed before the subscription: read at once.
	follow := func(id string, fresh bool) {
		if followed[id] || len(followed) >= legacy.MaxSessionTasks || !taskstate.ValidID(id) {
			return
		}
		ref := taskstate.Ref{Owner: sess.Owner, ID: id}
		sub, err := s.hub.Subscribe(ctx, keys.Events(ref))
		if err != nil {
			return
		}
		followed[id] = true
		t.wg.Go(func() {
			defer sub.Close()
			if fresh {
				select {
				case t.changed <- ref:
				case <-ctx.Done():
					return
				}
			}
			for {
				select {
				case payload := <-sub.C:
					ev := taskstate.DecodeEvent(payload)
					if !ev.Resync && (ev.Version == 0 || ev.Status == "") {
						continue // a worker's notification: not a state change
					}
					select {
					case t.changed <- ref:
					case <-ctx.Done():
						return
					}
					if ev.Status.Terminal() {
						return
					}
				case <-ctx.Done():
					return
				}
			}
		})
	}
	for _, id := range ids {
		follow(id, false)
	}
	t.wg.Go(func() {
		defer created.Close()
		for {
			select {
			case id := <-created.C:
				if id != taskstate.EventResync {
					follow(id, true)
				}
			case <-ctx.Done():
				return
			}
		}
	})
	return t, nil
}

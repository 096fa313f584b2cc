package legacy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/catalog"
	"github.com/mcpq/mcpq/taskstate/events"
)

// A session's standalone stream (GET /mcp with Mcp-Session-Id,
// 2025-11-25 Streamable HTTP) and the resource subscriptions it carries.
// Subscriptions live in Redis with the session, so a resources/subscribe
// on one front end is honoured by a GET stream on another; catalog changes
// and resource updates reach every stream through Redis pub/sub, as they
// reach subscriptions/listen streams.

// subscribe serves resources/subscribe and resources/unsubscribe.
func (c *Call) subscribe(ctx context.Context, on bool) (any, error) {
	var p struct {
		URI string `json:"uri"`
	}
	if err := c.decodeParams(&p); err != nil {
		return nil, err
	}
	if p.URI == "" {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: uri is required")
	}
	err := c.era.store.Subscribe(ctx, c.session.Owner, c.session.ID, p.URI, on, c.era.cfg.SessionIdle)
	if errors.Is(err, ErrSubscriptionsLimit) {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: at most %d resource subscriptions per session",
			MaxSessionSubscriptions)
	}
	if err != nil {
		return nil, err
	}
	return result{}, nil
}

// ServeGet opens a session's standalone SSE stream (GET /mcp with
// Mcp-Session-Id): list_changed notifications, updates of the resources
// the session subscribed to and the states of its tasks, until the client
// closes it, the session ends or the server drains. With Last-Event-ID it
// resumes a stream instead (resume.go). Without a session GET is the
// modern transport's 405.
func (e *Era) ServeGet(w http.ResponseWriter, r *http.Request) {
	principal, id, ok := e.admitSession(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	sess, err := e.store.Session(ctx, taskstate.OwnerTag(principal), id, e.cfg.SessionIdle)
	if errors.Is(err, ErrNoSession) {
		e.host.WriteError(w, e.errNoSession())
		return
	} else if err != nil {
		e.host.WriteError(w, err)
		return
	}
	req := e.host.Open(w, r, principal)
	if !req.AcceptsSSE() {
		e.host.WriteError(w, e.host.WithStatus(proto.NewError(proto.CodeInvalidRequest,
			"GET /mcp answers a text/event-stream: the Accept header must allow it"), http.StatusNotAcceptable))
		return
	}
	stream, entry := getStream+taskstate.NewID(), ""
	if last := r.Header.Get(headerLastEventID); last != "" {
		var ok bool
		if stream, entry, ok = parseEventID(last); !ok {
			e.host.WriteError(w, e.host.WithStatus(proto.NewError(proto.CodeInvalidRequest,
				"Bad Request: Last-Event-ID is not an event id of this server"), http.StatusBadRequest))
			return
		}
		if resumableStream(stream) {
			c := &Call{era: e, req: req, session: sess}
			req.Attach(c)
			c.resume(ctx, w, stream, entry)
			return
		}
	}
	release, err := e.host.AcquireStream(principal)
	if err != nil {
		e.host.WriteError(w, err)
		return
	}
	defer release()
	ctx, stopWatch := req.WatchAuth(ctx)
	defer stopWatch()
	g := &getStreamOf{era: e, req: req, sess: sess, stream: stream, sent: map[string]string{}}
	defer g.close(ctx)
	if err := g.open(ctx); err != nil {
		e.host.WriteError(w, err)
		return
	}
	if g.start(ctx, entry) {
		g.run(ctx)
	}
}

// getStreamOf is one open GET stream of a session.
type getStreamOf struct {
	era     *Era
	req     Request
	sess    *Session
	stream  string // its name (getStream and an id)
	lists   *events.Subscription
	updates *events.Subscription
	tasks   *sessionTasks
	sent    map[string]string // task id -> the state last sent
	held    bool              // the stream took the session's hold (close gives it up)
}

// open subscribes the stream to what it carries and makes it the
// session's GET stream (2025-11-25: a message goes on one stream only: the
// newest opened, until it closes).
func (g *getStreamOf) open(ctx context.Context) error {
	e, keys := g.era, g.era.tasks.Catalog().Keys()
	var err error
	if g.lists, err = e.cfg.Hub.Subscribe(ctx, keys.Lists()); err != nil {
		return err
	}
	if g.updates, err = e.cfg.Hub.Subscribe(ctx, keys.ResourceUpdates()); err != nil {
		return err
	}
	if err := e.store.TakeGetStream(ctx, g.sess.Owner, g.sess.ID, g.stream, e.getStreamHold); err != nil {
		return err
	}
	g.held = true
	g.tasks, err = e.followSessionTasks(ctx, g.sess)
	return err
}

// start opens the stream; a resumed one (entry, the client's last event)
// first replays what it sent after that event. False: it ended already
// (its log could not be read).
func (g *getStreamOf) start(ctx context.Context, entry string) bool {
	e := g.era
	g.req.Log(e.newEventLog(ctx, g.sess, g.stream, "", entry == ""))
	g.req.KeepAlive() // the stream is open: headers out now, once it holds the session's messages
	if entry == "" {
		return true
	}
	events, err := e.store.StreamEvents(ctx, g.sess.Owner, g.sess.ID, g.stream)
	if err != nil {
		return false
	}
	replay(g.req, g.stream, entry, events)
	return true
}

// close ends what open started, in reverse order.
func (g *getStreamOf) close(ctx context.Context) {
	if g.tasks != nil {
		g.tasks.close()
	}
	if g.held {
		_ = g.era.store.ReleaseGetStream(context.WithoutCancel(ctx), g.sess.Owner, g.sess.ID, g.stream)
	}
	if g.updates != nil {
		g.updates.Close()
	}
	if g.lists != nil {
		g.lists.Close()
	}
}

// run carries the stream's messages until the client leaves, the session
// ends or the server drains.
func (g *getStreamOf) run(ctx context.Context) {
	e := g.era
	tick := time.NewTicker(e.cfg.KeepAlive)
	defer tick.Stop()
	for {
		select {
		case v := <-g.lists.C:
			g.listChanged(ctx, v)
		case uri := <-g.updates.C:
			if uri == events.Resync {
				continue // which resources changed is unknown; list_changed on lists covers the catalog
			}
			if ok, err := e.store.Subscribed(ctx, g.sess.Owner, g.sess.ID, uri); err == nil && ok && g.mine(ctx) {
				g.send(proto.NotifyResourceUpdated, map[string]any{"uri": uri})
			}
		case ref := <-g.tasks.changed:
			g.taskChanged(ctx, ref)
		case <-tick.C:
			// The session may have ended (DELETE on any front end, or idle).
			if _, err := e.store.Session(ctx, g.sess.Owner, g.sess.ID, e.cfg.SessionIdle); errors.Is(err, ErrNoSession) {
				return
			}
			g.mine(ctx) // renews the hold
			g.req.KeepAlive()
		case <-e.host.Draining():
			return
		case <-ctx.Done():
			return
		}
	}
}

// mine reports whether the stream holds the session's messages, renewing
// its hold (or taking it over when no stream holds them).
func (g *getStreamOf) mine(ctx context.Context) bool {
	ok, err := g.era.store.HoldsGetStream(ctx, g.sess.Owner, g.sess.ID, g.stream, g.era.getStreamHold)
	return err == nil && ok
}

func (g *getStreamOf) send(method string, params any) {
	g.req.Notify(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: method, Params: params})
}

// listChanged sends the list_changed notifications of a catalog change
// (v, the list that changed; a resync: all of them).
func (g *getStreamOf) listChanged(ctx context.Context, v string) {
	if !g.mine(ctx) {
		return
	}
	resync := v == events.Resync
	if resync || v == catalog.ListTools {
		g.send(proto.NotifyToolsListChanged, map[string]any{})
	}
	if resync || v == catalog.ListPrompts {
		g.send(proto.NotifyPromptsListChanged, map[string]any{})
	}
	if resync || v == catalog.ListResources {
		g.send(proto.NotifyResourcesChanged, map[string]any{})
	}
}

// taskChanged sends the state of a task of the session that changed, once
// across the session's GET streams.
func (g *getStreamOf) taskChanged(ctx context.Context, ref taskstate.Ref) {
	e := g.era
	rec, err := e.tasks.Get(ctx, ref)
	if err != nil {
		return // ended and gone
	}
	task := TaskOf(rec.Task())
	state := string(task.Status) + "\x00" + task.StatusMessage
	// Decided in Redis: a stream that took over from another learns of a
	// change the other sent already, and skips it.
	if g.sent[ref.ID] != state {
		if ok, err := e.store.SendTaskState(ctx, g.sess.Owner, g.sess.ID, g.stream, ref.ID, rec.Version, state, e.getStreamHold,
			e.cfg.SessionIdle); err == nil && ok {
			g.sent[ref.ID] = state
			g.send(NotifyTaskStatus, task)
		}
	}
	if rec.Status == proto.StatusInputRequired {
		g.askSession(ctx, rec)
	}
}

// askSession sends the input requests of a parked task of the session
// that no stream of the session carried yet (a tasks/result waiting for
// the task carries them itself: Call.onGetStream), each once, with the
// related-task _meta: a client that only polls tasks/get is asked too
// (2025-11-25: server messages may come on any SSE stream, the GET
// stream among them). Its answer is a response POSTed to any front end
// (ServeResponse). Kinds of input the session did not declare are not
// asked here (a tasks/result reports them).
func (g *getStreamOf) askSession(ctx context.Context, rec *taskstate.Record) {
	e := g.era
	if !g.mine(ctx) {
		return
	}
	var lc ClientCapabilities
	_ = json.Unmarshal(g.sess.Capabilities, &lc)
	caps := proto.ClientCapabilities{Roots: lc.Roots, Sampling: lc.Sampling, Elicitation: lc.Elicitation}
	keys := make([]string, 0, len(rec.InputRequests))
	for k := range rec.InputRequests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		var r struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params,omitempty"`
		}
		if json.Unmarshal(rec.InputRequests[k], &r) != nil || proto.MissingInputCapabilities(caps, []string{r.Method}) != nil {
			continue
		}
		if _, claimed, err := e.store.ClaimInput(ctx, g.sess.Owner, g.sess.ID, g.stream, rec.Ref.ID, k,
			e.cfg.SessionIdle); err != nil || !claimed {
			continue // carried already, by this stream or another (or unknown: not risked twice)
		}
		g.req.Notify(ServerRequest{JSONRPC: proto.JSONRPCVersion, ID: inputRequestID(rec.Ref.ID, k),
			Method: r.Method, Params: withRelatedTask(r.Params, rec.Ref.ID)})
	}
}

// sessionTasks follows the state changes of a session's tasks for its GET
// stream (notifications/tasks/status).
type sessionTasks struct {
	changed chan taskstate.Ref
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func (t *sessionTasks) close() { t.cancel(); t.wg.Wait() }

// followSessionTasks watches the tasks sess created (the newest
// MaxSessionTasks) and those it creates while the stream is open (up to
// the same number): each state change sends the task's ref.
func (e *Era) followSessionTasks(ctx context.Context, sess *Session) (*sessionTasks, error) {
	ctx, cancel := context.WithCancel(ctx)
	t := &sessionTasks{changed: make(chan taskstate.Ref, 16), cancel: cancel}
	keys, hub := e.tasks.Keys(), e.cfg.Hub
	// Announcements first, then the index: no task falls between the two.
	created, err := hub.Subscribe(ctx, e.store.Keys().SessionTaskCreated(sess.Owner, sess.ID))
	if err != nil {
		cancel()
		return nil, err
	}
	ids, err := e.store.SessionTasks(ctx, sess.Owner, sess.ID)
	if err != nil {
		created.Close()
		cancel()
		return nil, err
	}
	followed := map[string]bool{}
	// follow watches task id; fresh: a task announced just now, whose
	// state may have changed before the subscription: read at once.
	follow := func(id string, fresh bool) {
		if followed[id] || len(followed) >= MaxSessionTasks || !taskstate.ValidID(id) {
			return
		}
		ref := taskstate.Ref{Owner: sess.Owner, ID: id}
		sub, err := hub.Subscribe(ctx, keys.Events(ref))
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
					ev := events.Decode(payload)
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
				if id != events.Resync {
					follow(id, true)
				}
			case <-ctx.Done():
				return
			}
		}
	})
	return t, nil
}

package frontend

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/catalog"
	"github.com/mcpq/mcpq/taskstate/events"
)

// listenFilter is subscriptions/listen's notifications filter.
type listenFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
	TaskIDs               []string `json:"taskIds,omitempty"`
}

// Bounds of one subscription (docs/security.md): MaxListenTasks distinct
// taskIds (each costs a SUBSCRIBE and one record read at the start, and the
// stream holds the last state of each), MaxListenResources
// resourceSubscriptions. Repeated ids count once.
const (
	MaxListenTasks     = 100
	MaxListenResources = 100
)

// listenEvent is one event for a listen stream, from whichever channel.
type listenEvent struct {
	kind    string // "list", "resource" or "task"
	payload string
	ref     taskstate.Ref
}

// listen serves subscriptions/listen: an SSE stream that starts with the
// acknowledgement and then carries only the requested notification types,
// each tagged with the listen request's id. Catalog changes, resource
// updates and task state changes arrive through Redis pub/sub, so a change
// made through any replica or worker reaches every listener.
func (s *Server) listen(ctx context.Context, c *call) (any, error) {
	f, err := listenFilterOf(c)
	if err != nil {
		return nil, err
	}
	release, err := s.listens.acquire(c.principal, s.cfg.MaxListenStreams)
	if err != nil {
		return nil, err
	}
	defer release()
	ctx, stopWatch := s.watchAuth(ctx, c)
	defer stopWatch()
	l := &listener{s: s, c: c, f: f, events: make(chan listenEvent, 64),
		subMeta: map[string]any{proto.MetaSubscriptionID: c.req.ID}, last: map[string]*taskstate.Record{}}
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	honored, tasks, err := l.subscribe(ctx, lctx)
	if err != nil {
		return nil, err
	}
	c.resp.notify(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: proto.NotifySubscribed,
		Params: map[string]any{"_meta": l.subMeta, "notifications": honored}})
	for _, rec := range tasks { // the state as of the acknowledgement
		l.sendTask(rec)
	}
	return l.run(ctx)
}

// listenFilterOf reads and checks a listen request's filter: taskIds need
// the Tasks extension, repeats count once, both lists are bounded, and the
// answer is a stream.
func listenFilterOf(c *call) (listenFilter, error) {
	var p struct {
		Notifications listenFilter `json:"notifications"`
	}
	if err := decodeParams(c, &p); err != nil {
		return listenFilter{}, err
	}
	f := p.Notifications
	if len(f.TaskIDs) > 0 && !c.tasksDeclared() {
		return f, proto.MissingTasksExtension()
	}
	f.TaskIDs = slices.Compact(slices.Sorted(slices.Values(f.TaskIDs)))
	if len(f.TaskIDs) > MaxListenTasks {
		return f, proto.NewError(proto.CodeInvalidParams, "Invalid params: at most %d taskIds per subscription", MaxListenTasks)
	}
	f.ResourceSubscriptions = slices.Compact(slices.Sorted(slices.Values(f.ResourceSubscriptions)))
	if len(f.ResourceSubscriptions) > MaxListenResources {
		return f, proto.NewError(proto.CodeInvalidParams, "Invalid params: at most %d resourceSubscriptions per subscription", MaxListenResources)
	}
	if !c.resp.sseOK {
		return f, withStatus(proto.NewError(proto.CodeInvalidRequest,
			"subscriptions/listen answers a text/event-stream: the Accept header must allow it"), http.StatusNotAcceptable)
	}
	return f, nil
}

// listener is one open listen stream.
type listener struct {
	s      *Server
	c      *call
	f      listenFilter
	events chan listenEvent // from every subscription's forward
	// subMeta is the _meta of every notification: the listen request's id.
	subMeta map[string]any
	// last holds, by task id, the state the listener saw last.
	last map[string]*taskstate.Record
}

// subscribe subscribes the channels the filter asks for, each forwarded
// into l.events until lctx ends, and returns what is honoured (a task id
// that is unknown, expired or another principal's is not) with the tasks'
// states as of now.
func (l *listener) subscribe(ctx, lctx context.Context) (listenFilter, []*taskstate.Record, error) {
	s, f := l.s, l.f
	honored := listenFilter{ToolsListChanged: f.ToolsListChanged, PromptsListChanged: f.PromptsListChanged,
		ResourcesListChanged: f.ResourcesListChanged, ResourceSubscriptions: f.ResourceSubscriptions}
	keys := s.store.Catalog().Keys()
	if f.ToolsListChanged || f.PromptsListChanged || f.ResourcesListChanged {
		sub, err := s.hub.Subscribe(ctx, keys.Lists())
		if err != nil {
			return honored, nil, err
		}
		go l.forward(lctx, sub, "list", taskstate.Ref{})
	}
	if len(f.ResourceSubscriptions) > 0 {
		sub, err := s.hub.Subscribe(ctx, keys.ResourceUpdates())
		if err != nil {
			return honored, nil, err
		}
		go l.forward(lctx, sub, "resource", taskstate.Ref{})
	}
	var tasks []*taskstate.Record
	owner := taskstate.OwnerTag(l.c.principal)
	for _, id := range f.TaskIDs {
		if !taskstate.ValidID(id) { // cannot exist: not honoured, like any unknown id
			continue
		}
		ref := taskstate.Ref{Owner: owner, ID: id}
		sub, err := s.hub.Subscribe(ctx, s.store.Keys().Events(ref))
		if err != nil {
			return honored, nil, err
		}
		rec, err := s.store.Get(ctx, ref)
		if err != nil { // unknown, expired or another principal's: not honoured
			sub.Close()
			continue
		}
		honored.TaskIDs = append(honored.TaskIDs, id)
		tasks = append(tasks, rec)
		go l.forward(lctx, sub, "task", ref)
	}
	return honored, tasks, nil
}

// forward moves sub's payloads into l.events (as kind, of task ref) until
// lctx ends, then closes sub.
func (l *listener) forward(lctx context.Context, sub *events.Subscription, kind string, ref taskstate.Ref) {
	defer sub.Close()
	for {
		select {
		case v := <-sub.C:
			select {
			case l.events <- listenEvent{kind: kind, payload: v, ref: ref}:
			case <-lctx.Done():
				return
			}
		case <-lctx.Done():
			return
		}
	}
}

// run carries the stream until the server drains (the final result) or
// ctx ends (the client left, or its key was revoked). A task whose record
// could not be read for an event is read again every rereadEvery until it
// works.
func (l *listener) run(ctx context.Context) (any, error) {
	unread := map[taskstate.Ref]bool{}
	var reread <-chan time.Time
	keepAlive := time.NewTicker(keepAliveEvery)
	defer keepAlive.Stop()
	for {
		if len(unread) > 0 && reread == nil {
			reread = time.After(rereadEvery)
		}
		select {
		case ev := <-l.events:
			l.handle(ctx, ev, unread)
		case <-reread:
			reread = nil
			for ref := range unread {
				if l.s.applyTask(ctx, l.last, ref, events.Event{Resync: true}, l.sendTask) {
					delete(unread, ref)
				}
			}
		case <-keepAlive.C:
			l.c.resp.keepAlive()
		case <-l.s.draining:
			return &proto.Ack{ResultBase: proto.ResultBase{Meta: proto.ResultMeta{proto.MetaSubscriptionID: l.c.req.ID}}}, nil
		case <-ctx.Done():
			return nil, endedBy(ctx)
		}
	}
}

// handle sends what one event means to the listener; a task whose record
// could not be read joins unread.
func (l *listener) handle(ctx context.Context, ev listenEvent, unread map[taskstate.Ref]bool) {
	f := l.f
	resync := ev.payload == events.Resync // the hub reconnected: changes may be lost
	switch ev.kind {
	case "list":
		if f.ToolsListChanged && (resync || ev.payload == catalog.ListTools) {
			l.send(proto.NotifyToolsListChanged, map[string]any{})
		}
		if f.PromptsListChanged && (resync || ev.payload == catalog.ListPrompts) {
			l.send(proto.NotifyPromptsListChanged, map[string]any{})
		}
		if f.ResourcesListChanged && (resync || ev.payload == catalog.ListResources) {
			l.send(proto.NotifyResourcesChanged, map[string]any{})
		}
	case "resource":
		switch {
		case resync: // any subscribed resource may have changed meanwhile
			for _, uri := range f.ResourceSubscriptions { // sorted, without repeats
				l.send(proto.NotifyResourceUpdated, map[string]any{"uri": uri})
			}
		case slices.Contains(f.ResourceSubscriptions, ev.payload):
			l.send(proto.NotifyResourceUpdated, map[string]any{"uri": ev.payload})
		}
	case "task":
		if l.s.applyTask(ctx, l.last, ev.ref, events.Decode(ev.payload), l.sendTask) {
			delete(unread, ev.ref)
		} else {
			unread[ev.ref] = true
		}
	}
}

// send sends a list or resource notification tagged with the listen's id.
func (l *listener) send(method string, params map[string]any) {
	params["_meta"] = l.subMeta
	l.c.resp.notify(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: method, Params: params})
}

// sendTask sends a task's state as notifications/tasks and keeps it as
// the one the listener saw last.
func (l *listener) sendTask(rec *taskstate.Record) {
	rec.Arguments, rec.Checkpoint, rec.Answers = nil, nil, nil // never shown: not kept for the stream's life
	l.c.resp.notify(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: proto.NotifyTasks,
		Params: taskNote{DetailedTask: rec.Detailed(), Meta: l.subMeta}})
	// A result is written once and never needed again: only a terminal
	// state has one, and nothing follows it (feed.go's nextState). Kept,
	// a listen over 40 tasks of 0.9 MiB results held 36 MiB until it
	// closed; dropped, a stream holds one result at a time while it
	// writes it (issue 25, item 7).
	rec.Result, rec.Receipt = nil, nil
	l.last[rec.Ref.ID] = rec
}

// taskNote is the params of notifications/tasks: the task as tasks/get
// shows it, and the subscription's _meta.
type taskNote struct {
	proto.DetailedTask
	Meta map[string]any `json:"_meta"`
}

// listenCounts counts each principal's open listen streams on this front
// end, for Config.MaxListenStreams.
type listenCounts struct {
	mu sync.Mutex
	n  map[string]int
}

// acquire counts one more stream of principal, or answers 429 at limit
// (limit < 0: no cap).
func (l *listenCounts) acquire(principal string, limit int) (func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if limit >= 0 && l.n[principal] >= limit {
		return nil, withStatus(proto.NewError(proto.CodeInternalError,
			"Limit reached: at most %d open subscriptions/listen streams per principal on this server; close one", limit),
			http.StatusTooManyRequests)
	}
	if l.n == nil {
		l.n = map[string]int{}
	}
	l.n[principal]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.n[principal]--; l.n[principal] <= 0 {
			delete(l.n, principal)
		}
	}, nil
}

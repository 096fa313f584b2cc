package frontend

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
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
	var p struct {
		Notifications listenFilter `json:"notifications"`
	}
	if err := decodeParams(c, &p); err != nil {
		return nil, err
	}
	f := p.Notifications
	if len(f.TaskIDs) > 0 && !c.tasksDeclared() {
		return nil, proto.MissingTasksExtension()
	}
	f.TaskIDs = slices.Compact(slices.Sorted(slices.Values(f.TaskIDs)))
	if len(f.TaskIDs) > MaxListenTasks {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: at most %d taskIds per subscription", MaxListenTasks)
	}
	f.ResourceSubscriptions = slices.Compact(slices.Sorted(slices.Values(f.ResourceSubscriptions)))
	if len(f.ResourceSubscriptions) > MaxListenResources {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: at most %d resourceSubscriptions per subscription", MaxListenResources)
	}
	if !c.resp.sseOK {
		return nil, withStatus(proto.NewError(proto.CodeInvalidRequest,
			"subscriptions/listen answers a text/event-stream: the Accept header must allow it"), http.StatusNotAcceptable)
	}
	release, err := s.listens.acquire(c.principal, s.cfg.MaxListenStreams)
	if err != nil {
		return nil, err
	}
	defer release()
	ctx, stopWatch := s.watchAuth(ctx, c)
	defer stopWatch()
	events := make(chan listenEvent, 64)
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	forward := func(sub *taskstate.Subscription, kind string, ref taskstate.Ref) {
		defer sub.Close()
		for {
			select {
			case v := <-sub.C:
				select {
				case events <- listenEvent{kind: kind, payload: v, ref: ref}:
				case <-lctx.Done():
					return
				}
			case <-lctx.Done():
				return
			}
		}
	}
	honored := listenFilter{ToolsListChanged: f.ToolsListChanged, PromptsListChanged: f.PromptsListChanged,
		ResourcesListChanged: f.ResourcesListChanged, ResourceSubscriptions: f.ResourceSubscriptions}
	keys := s.store.Keys()
	if f.ToolsListChanged || f.PromptsListChanged || f.ResourcesListChanged {
		sub, err := s.hub.Subscribe(ctx, keys.Lists())
		if err != nil {
			return nil, err
		}
		go forward(sub, "list", taskstate.Ref{})
	}
	if len(f.ResourceSubscriptions) > 0 {
		sub, err := s.hub.Subscribe(ctx, keys.ResourceUpdates())
		if err != nil {
			return nil, err
		}
		go forward(sub, "resource", taskstate.Ref{})
	}
	var tasks []*taskstate.Record
	owner := taskstate.OwnerTag(c.principal)
	for _, id := range f.TaskIDs {
		if !taskstate.ValidID(id) { // cannot exist: not honoured, like any unknown id
			continue
		}
		ref := taskstate.Ref{Owner: owner, ID: id}
		sub, err := s.hub.Subscribe(ctx, keys.Events(ref))
		if err != nil {
			return nil, err
		}
		rec, err := s.store.Get(ctx, ref)
		if err != nil { // unknown, expired or another principal's: not honoured
			sub.Close()
			continue
		}
		honored.TaskIDs = append(honored.TaskIDs, id)
		tasks = append(tasks, rec)
		go forward(sub, "task", ref)
	}

	subMeta := map[string]any{proto.MetaSubscriptionID: c.req.ID}
	send := func(method string, params map[string]any) {
		params["_meta"] = subMeta
		c.resp.notify(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: method, Params: params})
	}
	c.resp.notify(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: proto.NotifySubscribed,
		Params: map[string]any{"_meta": subMeta, "notifications": honored}})
	last := map[string]*taskstate.Record{} // by task id: the state the listener saw last
	sendTask := func(rec *taskstate.Record) {
		rec.Arguments, rec.Checkpoint, rec.Answers = nil, nil, nil // never shown: not kept for the stream's life
		last[rec.Ref.ID] = rec
		c.resp.notify(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: proto.NotifyTasks,
			Params: taskNote{DetailedTask: rec.Detailed(), Meta: subMeta}})
	}
	for _, rec := range tasks { // the state as of the acknowledgement
		sendTask(rec)
	}

	// unread holds tasks whose record could not be read for an event; they
	// are read again every rereadEvery until it works.
	unread := map[taskstate.Ref]bool{}
	var reread <-chan time.Time
	keepAlive := time.NewTicker(keepAliveEvery)
	defer keepAlive.Stop()
	for {
		if len(unread) > 0 && reread == nil {
			reread = time.After(rereadEvery)
		}
		select {
		case ev := <-events:
			resync := ev.payload == taskstate.EventResync // the hub reconnected: changes may be lost
			switch ev.kind {
			case "list":
				if f.ToolsListChanged && (resync || ev.payload == taskstate.ListTools) {
					send(proto.NotifyToolsListChanged, map[string]any{})
				}
				if f.PromptsListChanged && (resync || ev.payload == taskstate.ListPrompts) {
					send(proto.NotifyPromptsListChanged, map[string]any{})
				}
				if f.ResourcesListChanged && (resync || ev.payload == taskstate.ListResources) {
					send(proto.NotifyResourcesChanged, map[string]any{})
				}
			case "resource":
				switch {
				case resync: // any subscribed resource may have changed meanwhile
					for _, uri := range f.ResourceSubscriptions { // sorted, without repeats
						send(proto.NotifyResourceUpdated, map[string]any{"uri": uri})
					}
				case slices.Contains(f.ResourceSubscriptions, ev.payload):
					send(proto.NotifyResourceUpdated, map[string]any{"uri": ev.payload})
				}
			case "task":
				if s.applyTask(ctx, last, ev.ref, taskstate.DecodeEvent(ev.payload), sendTask) {
					delete(unread, ev.ref)
				} else {
					unread[ev.ref] = true
				}
			}
		case <-reread:
			reread = nil
			for ref := range unread {
				if s.applyTask(ctx, last, ref, taskstate.Event{Resync: true}, sendTask) {
					delete(unread, ref)
				}
			}
		case <-keepAlive.C:
			c.resp.keepAlive()
		case <-s.draining:
			return &proto.Ack{ResultBase: proto.ResultBase{Meta: proto.ResultMeta{proto.MetaSubscriptionID: c.req.ID}}}, nil
		case <-ctx.Done():
			return nil, endedBy(ctx)
		}
	}
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

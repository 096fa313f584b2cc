package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

// Prompt is a prompt a worker serves: prompts/get runs Handler as a job, so
// a prompt may ask for input (Call.Input) like a tool. c.Arguments is the
// prompt's arguments object ({name: value}).
type Prompt struct {
	// Prompt is the prompts/list entry.
	Prompt proto.Prompt
	// Handler renders the prompt. A *proto.Error is answered as is; any other
	// error is an internal error.
	Handler func(ctx context.Context, c *Call) (*proto.GetPromptResult, error)
}

// Resource is a resource a worker serves; c.Arguments is {"uri": ...}.
type Resource struct {
	// Resource is the resources/list entry.
	Resource proto.Resource
	// Handler reads the resource.
	Handler func(ctx context.Context, c *Call) (*proto.ReadResourceResult, error)
}

// ResourceTemplate serves every resource whose URI matches the template;
// c.Arguments is {"uri": ..., "variables": {name: value}}.
type ResourceTemplate struct {
	// Template is the resources/templates/list entry.
	Template proto.ResourceTemplate
	// Handler reads a matching resource.
	Handler func(ctx context.Context, c *Call) (*proto.ReadResourceResult, error)
}

// Completer answers completion/complete; c.Arguments is the request's
// params ({ref, argument, context}).
type Completer func(ctx context.Context, c *Call) (*proto.CompleteResult, error)

// entry is one catalog entry and how to run it.
type entry struct {
	def catalog.Entry
	// run returns the result to store (it is JSON-encoded) or an error.
	run func(ctx context.Context, c *Call) (any, error)
	// toolErrors: plain errors are tool errors (isError), not protocol errors.
	toolErrors bool
	queue      string
}

// wrap adapts a typed handler; a nil result stays a nil interface.
func wrap[T any](fn func(context.Context, *Call) (*T, error)) func(context.Context, *Call) (any, error) {
	return func(ctx context.Context, c *Call) (any, error) {
		r, err := fn(ctx, c)
		if r == nil {
			return nil, err
		}
		return r, err
	}
}

func toolEntry(t Tool) (*entry, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	return &entry{def: t.def(), toolErrors: true, queue: t.queue(),
		run: wrap(t.Handler)}, nil
}

func internalEntry(def catalog.Entry, run func(ctx context.Context, c *Call) (any, error)) *entry {
	def.Policy, def.Queue = PolicySync, DefaultQueue
	return &entry{def: def, run: run, queue: DefaultQueue}
}

// AddTool registers a tool. While the worker runs, the tool is published at
// once and every front end's listeners get tools/list_changed.
func (w *Worker) AddTool(ctx context.Context, t Tool) error {
	e, err := toolEntry(t)
	if err != nil {
		return err
	}
	return w.add(ctx, e, catalog.ListTools)
}

// RemoveTool stops serving the tool name (an upstream server's tool that
// vanished, or whose server is down). The worker no longer heartbeats it,
// so it leaves tools/list as a dead worker's tools do (after
// ServedIntervals catalog intervals, unless another worker serves it); a
// job for it is handed back to a worker that serves it. It reports whether
// the tool was registered.
func (w *Worker) RemoveTool(name string) bool {
	key := catalog.EntryKey(catalog.KindTool, name)
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.entries[key]
	delete(w.entries, key)
	return ok
}

// AddPrompt registers a prompt (published at once while running).
func (w *Worker) AddPrompt(ctx context.Context, p Prompt) error {
	if p.Prompt.Name == "" || p.Handler == nil {
		return errors.New("worker: a prompt needs a name and a handler")
	}
	pr := p.Prompt
	return w.add(ctx, internalEntry(catalog.Entry{Kind: catalog.KindPrompt, Prompt: &pr},
		wrap(p.Handler)), catalog.ListPrompts)
}

// AddResource registers a resource (published at once while running).
func (w *Worker) AddResource(ctx context.Context, r Resource) error {
	if r.Resource.URI == "" || r.Handler == nil {
		return errors.New("worker: a resource needs a URI and a handler")
	}
	res := r.Resource
	return w.add(ctx, internalEntry(catalog.Entry{Kind: catalog.KindResource, Resource: &res},
		wrap(r.Handler)), catalog.ListResources)
}

// AddResourceTemplate registers a resource template (published at once while running).
func (w *Worker) AddResourceTemplate(ctx context.Context, t ResourceTemplate) error {
	if t.Template.URITemplate == "" || t.Handler == nil {
		return errors.New("worker: a resource template needs a URI template and a handler")
	}
	tpl := t.Template
	return w.add(ctx, internalEntry(catalog.Entry{Kind: catalog.KindTemplate, Template: &tpl},
		wrap(t.Handler)), catalog.ListResources)
}

// SetCompleter registers the completion/complete handler.
func (w *Worker) SetCompleter(ctx context.Context, fn Completer) error {
	if fn == nil {
		return errors.New("worker: nil completer")
	}
	return w.add(ctx, internalEntry(catalog.Entry{Kind: catalog.KindCompletion},
		wrap(fn)), "")
}

// ResourceUpdated tells listeners of uri (subscriptions/listen
// resourceSubscriptions) on every front end that it changed.
func (w *Worker) ResourceUpdated(ctx context.Context, uri string) error {
	return w.store.Catalog().AnnounceResourceUpdated(ctx, uri)
}

// ResourceChanged tells listeners of uri that it changed, once across the
// fleet: change names the change (a version, a timestamp), and of the
// workers announcing the same change of uri within keep only the first
// reaches the listeners. Use it where several workers see one change
// (each watching the same upstream); ResourceUpdated announces each call.
func (w *Worker) ResourceChanged(ctx context.Context, uri, change string, keep time.Duration) error {
	_, err := w.store.Catalog().AnnounceResourceChange(ctx, uri, change, keep)
	return err
}

// add registers e, replacing an entry of the same key; while running it
// publishes e and announces the list change.
func (w *Worker) add(ctx context.Context, e *entry, list string) error {
	w.mu.Lock()
	if old, ok := w.entries[e.def.Key()]; ok {
		e.def.Order = old.def.Order
	} else {
		e.def.Order = len(w.entries) + 1
	}
	w.place(e)
	w.entries[e.def.Key()] = e
	running := w.running && w.serves(e)
	w.mu.Unlock()
	if !running {
		return nil
	}
	if err := w.store.Catalog().Publish(ctx, []catalog.Entry{e.def}); err != nil {
		return fmt.Errorf("worker: publish %s: %w", e.def.Key(), err)
	}
	ch, err := w.serve(ctx, []string{e.def.Key()})
	if err != nil {
		return fmt.Errorf("worker: serve %s: %w", e.def.Key(), err)
	}
	if list == "" || slices.Contains(ch.Announced, list) {
		return nil
	}
	return w.store.Catalog().AnnounceListChanged(ctx, list) // a changed definition
}

// place moves e to its queue of Config.ToolQueues.
func (w *Worker) place(e *entry) {
	q, ok := w.cfg.ToolQueues[e.def.Key()]
	if !ok && e.queue == DefaultQueue {
		q, ok = w.cfg.ToolQueues["*"]
	}
	if ok {
		e.queue, e.def.Queue = q, q
	}
}

// serves reports whether this worker serves e's queue.
func (w *Worker) serves(e *entry) bool {
	return len(w.cfg.Queues) == 0 || w.cfg.Queues[e.queue] > 0
}

// entry returns the entry with the catalog key that this worker serves, or nil.
func (w *Worker) entry(key string) *entry {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.entries[key]; e != nil && w.serves(e) {
		return e
	}
	return nil
}

// encodeResult is the stored JSON of a handler's result, with resultType set.
func encodeResult(res any) (json.RawMessage, error) {
	if b, ok := res.(interface{ Base() *proto.ResultBase }); ok {
		b.Base().ResultType = proto.ResultComplete
	}
	return json.Marshal(res)
}

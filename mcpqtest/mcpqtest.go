// Package mcpqtest tests mcpq tools in a few lines, with no Redis server:
// New runs a real worker serving the tools on an embedded miniredis, and
// each Call creates a task the way a front end does (arguments checked
// against the tool's inputSchema first, as every front end checks them).
// A test then scripts what a client and the cluster do to the task
// (answer its input, cancel it, let it expire, lose its worker so the job
// is delivered again) and reads what the tool did.
//
//	env := mcpqtest.New(t, myTool())
//	run := env.Call(t, "my_tool", map[string]any{"seconds": 2})
//	run.Accept(t, "confirm", Confirm{OK: true})
//	res := run.Result(t)
//
// The task clock stands still unless a test moves it (Expire and
// Redeliver do), so a task never expires or looks lost by accident.
package mcpqtest

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/argcheck"
	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/workertest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
	"github.com/mcpq/mcpq/worker"
)

// Bound is how long any wait of this package may take before the test
// fails. It decides how long a broken tool takes to fail, never whether a
// working one passes.
const Bound = 15 * time.Second

// principal owns every task of an Env.
const principal = "mcpqtest"

// lostAfter is how old a heartbeat is when its delivery counts as lost
// (the clock only moves when a test moves it, so only Redeliver gets there).
const lostAfter = 100 * time.Millisecond

// defaultTTL is the lifetime of tasks of tools that set none.
const defaultTTL = time.Hour

// Env is a worker serving tools on an embedded Redis.
type Env struct {
	store *taskstate.Store
	rdb   *redis.Client
	hub   *events.Hub
	jobs  *queue.Client
	clock *clock
	tools map[string]*tool

	mu      sync.Mutex
	started map[string][]int64 // attempts whose handler started, by task id
	active  map[string]int     // handlers running, by task id
	changed chan struct{}      // closed and replaced on every change of the two
	// lives are the running handlers, by task id and attempt.
	lives map[string]map[int64]*life
}

// life is one running handler: kill ends its context (its worker is lost)
// and holds its return until released, so nothing it writes can come
// before the task was taken back from it.
type life struct {
	stop     context.CancelFunc
	killed   bool
	released chan struct{}
}

type tool struct {
	worker.Tool
	schema *jsonschema.Resolved // nil: nothing to check
}

// New runs a worker serving tools on a fresh embedded Redis until the test
// ends. A tool New cannot serve (say NewTool could not infer its schema)
// fails the test.
func New(t testing.TB, tools ...worker.Tool) *Env {
	t.Helper()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	e := &Env{rdb: rdb, clock: &clock{t: time.Now().Truncate(time.Millisecond)}, tools: map[string]*tool{},
		started: map[string][]int64{}, active: map[string]int{}, changed: make(chan struct{}),
		lives: map[string]map[int64]*life{}}
	e.store = taskstate.New(rdb, taskstate.Options{Clock: e.clock.Now, LostAfter: lostAfter})
	served := make([]worker.Tool, 0, len(tools))
	for _, tl := range tools {
		tl.Handler = e.track(tl.Handler)
		e.tools[tl.Name] = &tool{Tool: tl, schema: argcheck.Resolve(tl.InputSchema)}
		served = append(served, tl)
	}
	cfg := worker.Config{Redis: rdb, TaskCheckInterval: 5 * time.Millisecond, Clock: e.clock.Now,
		HeartbeatInterval: time.Hour, LostAfter: lostAfter, TakeoverInterval: 10 * time.Millisecond,
		ReapInterval: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	w, err := worker.New(cfg, served...)
	if err != nil {
		rdb.Close()
		t.Fatalf("mcpqtest: %v", err)
	}
	e.hub, e.jobs = events.NewHub(rdb), queue.NewClient(rdb, queue.Options{MaxTTL: worker.DefaultMaxTTL})
	t.Cleanup(func() { // after the worker stopped (cleanups run last first)
		e.hub.Close()
		rdb.Close()
	})
	workertest.Run(t, w)
	return e
}

// track wraps h to record each delivery that runs it.
func (e *Env) track(h worker.Handler) worker.Handler {
	return func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
		ctx, stop := context.WithCancel(ctx)
		defer stop()
		l := &life{stop: stop, released: make(chan struct{})}
		e.note(func() {
			e.started[c.TaskID] = append(e.started[c.TaskID], c.Attempt)
			e.active[c.TaskID]++
			if e.lives[c.TaskID] == nil {
				e.lives[c.TaskID] = map[int64]*life{}
			}
			e.lives[c.TaskID][c.Attempt] = l
		})
		defer e.note(func() {
			e.active[c.TaskID]--
			delete(e.lives[c.TaskID], c.Attempt)
		})
		res, err := h(ctx, c)
		e.mu.Lock()
		killed := l.killed
		e.mu.Unlock()
		if killed {
			select {
			case <-l.released:
			case <-time.After(Bound):
			}
		}
		return res, err
	}
}

func (e *Env) note(f func()) {
	e.mu.Lock()
	f()
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
}

// CallOption changes how Call creates the task.
type CallOption func(*taskstate.CreateParams)

// WithCapabilities sets the client capabilities of the creating request
// (default: elicitation, sampling, roots and the Tasks extension).
func WithCapabilities(caps proto.ClientCapabilities) CallOption {
	return func(p *taskstate.CreateParams) {
		b, err := json.Marshal(caps)
		if err != nil {
			panic(err) // a ClientCapabilities always encodes
		}
		p.Capabilities = b
	}
}

// Call calls the named tool with args (any JSON-encodable value; nil for
// none) as a front end does: arguments the tool's inputSchema refuses are
// answered with its tool execution error and make no task (the Run has
// ended, completed with that isError result); otherwise the task is
// created and its job enqueued.
func (e *Env) Call(t testing.TB, name string, args any, opts ...CallOption) *Run {
	t.Helper()
	tl := e.tools[name]
	if tl == nil {
		t.Fatalf("mcpqtest: no tool %q in this Env", name)
	}
	raw := json.RawMessage(`{}`)
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatalf("mcpqtest: arguments: %v", err)
		}
		raw = b
	}
	r := &Run{env: e, tool: tl}
	if bad := argcheck.Check(tl.schema, name, raw); bad != nil {
		r.early = bad
		return r
	}
	ttl := tl.TTL
	switch {
	case ttl == 0:
		ttl = defaultTTL
	case ttl < 0:
		ttl = 0 // unlimited
	}
	p := taskstate.CreateParams{ID: taskstate.NewID(), Principal: principal, Tool: name, Arguments: raw,
		PollIntervalMs: 1000, StatusMessage: "Queued",
		Capabilities: json.RawMessage(`{"elicitation":{},"sampling":{},"roots":{},"extensions":{"` + proto.TasksExtension + `":{}}}`)}
	if ttl > 0 {
		ms := ttl.Milliseconds()
		p.TTLMs = &ms
	}
	for _, o := range opts {
		o(&p)
	}
	r.ref = taskstate.Ref{Owner: taskstate.OwnerTag(principal), ID: p.ID}
	sub, err := e.hub.Subscribe(context.Background(), e.store.Keys().Events(r.ref))
	if err != nil {
		t.Fatalf("mcpqtest: subscribe: %v", err)
	}
	t.Cleanup(sub.Close)
	r.sub = sub
	if _, err := e.store.Create(context.Background(), p); err != nil {
		t.Fatalf("mcpqtest: create task: %v", err)
	}
	r.enqueue(t, 0)
	return r
}

// clock is the task clock: it moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// errGone is what a read of a reaped task's record says.
var errGone = errors.New("mcpqtest: task record gone")

// record reads the task's record (errGone once it was reaped).
func (e *Env) record(ref taskstate.Ref) (*taskstate.Record, error) {
	rec, err := e.store.Get(context.Background(), ref)
	if errors.Is(err, taskstate.ErrNotFound) || errors.Is(err, taskstate.ErrExpired) {
		n, xerr := e.rdb.Exists(context.Background(), e.store.Keys().Task(ref)).Result()
		if xerr != nil {
			return nil, xerr
		}
		if n == 0 {
			return nil, errGone
		}
		return nil, taskstate.ErrExpired
	}
	return rec, err
}

// kill ends the context of the task's running handler of attempt and
// holds its return until release is called.
func (e *Env) kill(id string, attempt int64) (release func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l := e.lives[id][attempt]
	if l == nil {
		return func() {}
	}
	l.killed = true
	l.stop()
	return sync.OnceFunc(func() { close(l.released) })
}

// deliveries is what the Env saw of the task's handler runs.
func (e *Env) deliveries(id string) (started []int64, active int, changed <-chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.started[id]), e.active[id], e.changed
}

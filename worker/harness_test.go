package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/internal/workertest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
	"github.com/mcpq/mcpq/worker"
)

func TestMain(m *testing.M) {
	// worker.run logs handler panics through slog.Default rather than
	// Config.Logger; keep those stacks out of the test output.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	redistest.Main(m)
}

// bound is the failure bound of every wait: generous, so timing never
// decides a pass, only how long a broken build takes to fail.
const bound = 10 * time.Second

// barrierTool is added to every harness worker. With Concurrency 1 a
// barrier job enqueued after another job on the same (FIFO) queue finishes
// only after that job's delivery has been fully processed.
const barrierTool = "_barrier"

// harness is one backend with a store, a queue client and a hub, on which
// tests start real workers and create, enqueue and watch tasks.
type harness struct {
	b      *redistest.Backend
	store  *taskstate.Store
	client *asynq.Client // for jobs no mcpq enqueue makes (an id asynq takes twice)
	jobs   *queue.Client
	hub    *events.Hub
	// queue is the queue test tools use: asynq keys carry no prefix, so on
	// a shared redis-server every test needs queues of its own.
	queue  string
	logs   *logBuffer
	mu     sync.Mutex
	queues map[string]string // tool name → queue, of the started workers
}

func newHarness(t *testing.T, b *redistest.Backend) *harness {
	t.Helper()
	h := &harness{
		b:      b,
		store:  taskstate.New(b.Client, taskstate.Options{Prefix: b.Prefix}),
		client: asynq.NewClientFromRedisClient(b.Client),
		jobs:   queue.NewClient(b.Client, queue.Options{Prefix: b.Prefix}),
		hub:    events.NewHub(b.Client),
		queue:  worker.DefaultQueue,
		logs:   &logBuffer{},
		queues: map[string]string{},
	}
	if b.Mini == nil {
		h.queue = "q" + b.Prefix
	}
	t.Cleanup(func() { // after the workers stopped (cleanups run last first)
		h.hub.Close()
		if b.Mini == nil {
			_ = asynq.NewInspectorFromRedisClient(b.Client).DeleteQueue(h.jobs.Keys().Queue(h.queue), true)
		}
		if t.Failed() {
			t.Logf("worker logs:\n%s", h.logs.String())
		}
	})
	return h
}

// mini is a harness on a fresh miniredis.
func mini(t *testing.T) *harness { return newHarness(t, redistest.Mini(t)) }

// tool is a test tool on the harness queue.
func (h *harness) tool(name string, fn worker.Handler) worker.Tool {
	return worker.Tool{Name: name, Queue: h.queue, Handler: fn}
}

// config is the worker configuration tests start from.
func (h *harness) config() worker.Config {
	// ShutdownTimeout well inside bound: a test's handler still running at
	// its end gets that long, and Run returns in time for the cleanup.
	return worker.Config{Redis: h.b.Client, Prefix: h.b.Prefix, TaskCheckInterval: 10 * time.Millisecond, ShutdownTimeout: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
}

// start runs a worker (with cfg and the barrier tool added to tools) until
// the test ends, or Stop (internal/workertest); the cleanup checks that
// Run returns nil.
func (h *harness) start(t *testing.T, cfg worker.Config, tools ...worker.Tool) *workertest.Running {
	t.Helper()
	tools = append(tools, h.tool(barrierTool, func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
		return worker.TextResult("barrier"), nil
	}))
	w, err := worker.New(cfg, tools...)
	if err != nil {
		t.Fatalf("worker.New: %v", err)
	}
	h.mu.Lock()
	for _, tl := range tools {
		h.queues[tl.Name] = tl.Queue
	}
	h.mu.Unlock()
	return workertest.Run(t, w)
}

// task is a created task and a subscription to its events, made before
// anything could publish on them.
type task struct {
	ref taskstate.Ref
	sub *events.Subscription
}

// create writes a task record for tool (not yet enqueued) and subscribes to
// its events.
func (h *harness) create(t testing.TB, tool, args string) task {
	t.Helper()
	ctx := context.Background()
	// The client declared every input kind (Call.Input refuses the others).
	rec, err := h.store.Create(ctx, taskstate.CreateParams{Principal: "alice", Tool: tool,
		Arguments: json.RawMessage(args), PollIntervalMs: 100,
		Capabilities: json.RawMessage(`{"elicitation":{},"sampling":{},"roots":{}}`)})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	sub, err := h.hub.Subscribe(ctx, h.store.Keys().Events(rec.Ref))
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(sub.Close)
	return task{ref: rec.Ref, sub: sub}
}

// enqueue puts the task's first job on its tool's queue, as the front end
// does; with id set, under that asynq task id (as no mcpq enqueue does).
func (h *harness) enqueue(t testing.TB, tk task, tool, id string) {
	t.Helper()
	h.mu.Lock()
	q, ok := h.queues[tool]
	h.mu.Unlock()
	if !ok || q == "" {
		q = h.queue
	}
	j := queue.Job{Ref: tk.ref, Tool: tool, Queue: q}
	if id == "" {
		if err := h.jobs.Enqueue(context.Background(), j); err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
		return
	}
	task := asynq.NewTask(queue.Type, queue.Payload(j))
	if _, err := h.client.Enqueue(task, asynq.TaskID(id), asynq.Queue(h.jobs.Keys().Queue(q))); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
}

// submit creates and enqueues a task.
func (h *harness) submit(t testing.TB, tool, args string) task {
	t.Helper()
	tk := h.create(t, tool, args)
	h.enqueue(t, tk, tool, "")
	return tk
}

// wait reads the record now and after every event until ok accepts it.
func (h *harness) wait(t testing.TB, tk task, what string, ok func(*taskstate.Record) bool) *taskstate.Record {
	t.Helper()
	timeout := time.NewTimer(bound)
	defer timeout.Stop()
	var last *taskstate.Record
	for {
		rec, err := h.store.Get(context.Background(), tk.ref)
		if err == nil {
			last = rec
			if ok(rec) {
				return rec
			}
		}
		select {
		case <-tk.sub.C:
		case <-timeout.C:
			t.Fatalf("task %s: no %s within %v; last record: %+v", tk.ref.ID, what, bound, last)
		}
	}
}

// terminal waits for the task to end.
func (h *harness) terminal(t testing.TB, tk task) *taskstate.Record {
	t.Helper()
	return h.wait(t, tk, "terminal status", func(r *taskstate.Record) bool { return r.Status.Terminal() })
}

// barrier runs a barrier job to the end. With Concurrency 1 every job
// enqueued before it has then been processed.
func (h *harness) barrier(t testing.TB) {
	t.Helper()
	if rec := h.terminal(t, h.submit(t, barrierTool, `{}`)); rec.Status != proto.StatusCompleted {
		t.Fatalf("barrier ended %s", rec.Status)
	}
}

// get reads the task record.
func (h *harness) get(t testing.TB, ref taskstate.Ref) *taskstate.Record {
	t.Helper()
	rec, err := h.store.Get(context.Background(), ref)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return rec
}

// counter counts handler invocations.
type counter struct{ n atomic.Int64 }

func (c *counter) wrap(fn worker.Handler) worker.Handler {
	return func(ctx context.Context, call *worker.Call) (*proto.CallToolResult, error) {
		c.n.Add(1)
		return fn(ctx, call)
	}
}

// recv receives from c within the bound.
func recv[T any](t testing.TB, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(bound):
		t.Fatalf("no %s within %v", what, bound)
		panic("unreachable")
	}
}

// jsonEqual compares two JSON texts by value.
func jsonEqual(t testing.TB, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("result %q is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %q: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("result = %s\nwant     %s", got, want)
	}
}

// logBuffer collects the worker's logs, shown when a test fails.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

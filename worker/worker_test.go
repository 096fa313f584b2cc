package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/catalog"
	"github.com/mcpq/mcpq/worker"
)

// TestOutcomes runs one job per way a handler can end, through a real
// worker, on miniredis and on a real redis-server.
func TestOutcomes(t *testing.T) {
	type outcome struct {
		status  proto.TaskStatus
		message string // final statusMessage
		result  string // result JSON (completed)
		code    int    // error code (failed)
		errMsg  string // error message (failed)
	}
	cases := []struct {
		name    string
		args    string
		handler worker.Handler
		want    outcome
	}{
		{
			name: "text result",
			handler: func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
				return worker.TextResult("hi there"), nil
			},
			want: outcome{status: proto.StatusCompleted, message: "Completed",
				result: `{"resultType":"complete","content":[{"type":"text","text":"hi there"}]}`},
		},
		{
			name: "arguments reach the handler",
			args: `{"n":41}`,
			handler: func(_ context.Context, c *worker.Call) (*proto.CallToolResult, error) {
				var a struct{ N int }
				if err := c.Bind(&a); err != nil {
					return nil, err
				}
				return worker.TextResult(fmt.Sprint(a.N+1, " ", c.Attempt, " ", len(c.TaskID) > 0)), nil
			},
			want: outcome{status: proto.StatusCompleted, message: "Completed",
				result: `{"resultType":"complete","content":[{"type":"text","text":"42 1 true"}]}`},
		},
		{
			name: "structured content",
			handler: func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
				return &proto.CallToolResult{StructuredContent: json.RawMessage(`{"sum":3}`)}, nil
			},
			want: outcome{status: proto.StatusCompleted, message: "Completed",
				result: `{"resultType":"complete","content":[],"structuredContent":{"sum":3}}`},
		},
		{
			name: "nil result is an empty result",
			handler: func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
				return nil, nil
			},
			want: outcome{status: proto.StatusCompleted, message: "Completed",
				result: `{"resultType":"complete","content":[]}`},
		},
		{
			name: "ErrorResult is a tool error",
			handler: func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
				return worker.ErrorResult("file not found"), nil
			},
			want: outcome{status: proto.StatusCompleted, message: "Completed with a tool error",
				result: `{"resultType":"complete","content":[{"type":"text","text":"file not found"}],"isError":true}`},
		},
		{
			name: "plain error is a tool error",
			handler: func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
				return worker.TextResult("ignored"), errors.New("disk full")
			},
			want: outcome{status: proto.StatusCompleted, message: "Completed with a tool error",
				result: `{"resultType":"complete","content":[{"type":"text","text":"disk full"}],"isError":true}`},
		},
		{
			name: "wrapped plain error keeps its text",
			handler: func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
				return nil, fmt.Errorf("read input: %w", io.ErrUnexpectedEOF)
			},
			want: outcome{status: proto.StatusCompleted, message: "Completed with a tool error",
				result: `{"resultType":"complete","content":[{"type":"text","text":"read input: unexpected EOF"}],"isError":true}`},
		},
		{
			name: "protocol error fails the task",
			handler: func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
				return nil, proto.NewError(proto.CodeInvalidParams, "Invalid arguments: x must be positive")
			},
			want: outcome{status: proto.StatusFailed, message: "Invalid arguments: x must be positive",
				code: proto.CodeInvalidParams, errMsg: "Invalid arguments: x must be positive"},
		},
		{
			name: "wrapped protocol error fails the task",
			handler: func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
				return nil, fmt.Errorf("step 2: %w", proto.NewError(-32001, "Quota exceeded"))
			},
			want: outcome{status: proto.StatusFailed, message: "Quota exceeded", code: -32001, errMsg: "Quota exceeded"},
		},
		{
			name: "Bind error is invalid params",
			args: `{"n":"not a number"}`,
			handler: func(_ context.Context, c *worker.Call) (*proto.CallToolResult, error) {
				var a struct {
					N int `json:"n"`
				}
				if err := c.Bind(&a); err != nil {
					return nil, err
				}
				return worker.TextResult("unreachable"), nil
			},
			want: outcome{status: proto.StatusFailed, code: proto.CodeInvalidParams, errMsg: "Invalid arguments: "},
		},
		{
			name: "panic fails with internal error",
			handler: func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
				panic("boom")
			},
			want: outcome{status: proto.StatusFailed, message: "Internal error: tool handler panicked",
				code: proto.CodeInternalError, errMsg: "Internal error: tool handler panicked"},
		},
		{
			name: "unencodable result fails with internal error",
			handler: func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
				return &proto.CallToolResult{StructuredContent: json.RawMessage(`{not json`)}, nil
			},
			want: outcome{status: proto.StatusFailed, code: proto.CodeInternalError,
				errMsg: "Internal error: result not encodable"},
		},
	}
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		h := newHarness(t, b)
		tools := make([]worker.Tool, len(cases))
		for i, tc := range cases {
			tools[i] = h.tool(fmt.Sprintf("tool%d", i), tc.handler)
		}
		h.start(t, h.config(), tools...)
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				rec := h.terminal(t, h.submit(t, tools[i].Name, orDefault(tc.args, `{}`)))
				if rec.Status != tc.want.status {
					t.Fatalf("status = %s (%+v), want %s", rec.Status, rec.Error, tc.want.status)
				}
				if tc.want.message != "" && rec.StatusMessage != tc.want.message {
					t.Errorf("statusMessage = %q, want %q", rec.StatusMessage, tc.want.message)
				}
				if rec.Attempt != 1 {
					t.Errorf("attempt = %d, want 1", rec.Attempt)
				}
				switch rec.Status {
				case proto.StatusCompleted:
					jsonEqual(t, rec.Result, tc.want.result)
					if rec.Error != nil {
						t.Errorf("completed task has error %+v", rec.Error)
					}
				case proto.StatusFailed:
					if rec.Error == nil {
						t.Fatal("failed task without error")
					}
					if rec.Error.Code != tc.want.code || !strings.HasPrefix(rec.Error.Message, tc.want.errMsg) {
						t.Errorf("error = %d %q, want %d %q…", rec.Error.Code, rec.Error.Message, tc.want.code, tc.want.errMsg)
					}
					if len(rec.Result) != 0 {
						t.Errorf("failed task has result %s", rec.Result)
					}
				}
			})
		}
	})
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TestUnknownTool: a job for a tool no live worker serves fails -32602
// (handback.go), as does one that does not name its tool (enqueued by an
// older front end) for a tool this worker does not serve.
func TestUnknownTool(t *testing.T) {
	h := mini(t)
	h.start(t, h.config())
	rec := h.terminal(t, h.submit(t, "no_such_tool", `{}`))
	if rec.Status != proto.StatusFailed || rec.Error == nil || rec.Error.Code != proto.CodeInvalidParams ||
		rec.Error.Message != "Unknown tool: no_such_tool (no live worker serves it)" || rec.Attempt != 0 {
		t.Fatalf("got %s %+v (attempt %d), want failed -32602 Unknown tool, never claimed", rec.Status, rec.Error, rec.Attempt)
	}
	tk := h.create(t, "no_such_tool", `{}`)
	bare := asynq.NewTask(queue.Type, []byte(`{"o":"`+tk.ref.Owner+`","id":"`+tk.ref.ID+`"}`))
	if _, err := h.client.Enqueue(bare, asynq.TaskID(tk.ref.ID), asynq.Queue(h.jobs.Keys().Queue(h.queue))); err != nil {
		t.Fatal(err)
	}
	rec = h.terminal(t, tk)
	if rec.Status != proto.StatusFailed || rec.Error == nil || rec.Error.Code != proto.CodeInvalidParams ||
		rec.Error.Message != "Unknown tool: no_such_tool" {
		t.Fatalf("job without its tool: got %s %+v, want failed -32602 Unknown tool", rec.Status, rec.Error)
	}
}

// TestPanicKeepsServing: with a single slot, the jobs after a panicking one
// still run.
func TestPanicKeepsServing(t *testing.T) {
	h := mini(t)
	cfg := h.config()
	cfg.Concurrency = 1
	h.start(t, cfg,
		h.tool("panics", func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
			var m map[string]int
			m["x"] = 1 // a runtime panic, not just panic(value)
			return nil, nil
		}),
		h.tool("ok", func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
			return worker.TextResult("still here"), nil
		}))
	p1 := h.submit(t, "panics", `{}`)
	ok1 := h.submit(t, "ok", `{}`)
	p2 := h.submit(t, "panics", `{}`)
	ok2 := h.submit(t, "ok", `{}`)
	for _, tk := range []task{p1, p2} {
		rec := h.terminal(t, tk)
		if rec.Status != proto.StatusFailed || rec.Error == nil || rec.Error.Code != proto.CodeInternalError {
			t.Errorf("panicking job: %s %+v, want failed -32603", rec.Status, rec.Error)
		}
	}
	for _, tk := range []task{ok1, ok2} {
		rec := h.terminal(t, tk)
		if rec.Status != proto.StatusCompleted {
			t.Fatalf("job after a panic: %s %+v", rec.Status, rec.Error)
		}
		jsonEqual(t, rec.Result, `{"resultType":"complete","content":[{"type":"text","text":"still here"}]}`)
	}
}

// TestProgress: Progress sets statusMessage while the task is working.
func TestProgress(t *testing.T) {
	h := mini(t)
	release := make(chan struct{})
	progErr := make(chan error, 2)
	h.start(t, h.config(), h.tool("progress", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
		for i, msg := range []string{"Loaded 1 of 2", "Loaded 2 of 2"} {
			err := c.Progress(ctx, msg)
			progErr <- err
			if err != nil {
				return nil, err
			}
			if err := c.Step(ctx, func(ctx context.Context) error {
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}); err != nil {
				return nil, fmt.Errorf("step %d: %w", i, err)
			}
		}
		return worker.TextResult("loaded"), nil
	}))
	tk := h.submit(t, "progress", `{}`)
	for _, msg := range []string{"Loaded 1 of 2", "Loaded 2 of 2"} {
		if err := recv(t, progErr, "progress"); err != nil {
			t.Fatalf("Progress(%q): %v", msg, err)
		}
		rec := h.wait(t, tk, "statusMessage "+msg, func(r *taskstate.Record) bool { return r.StatusMessage == msg })
		if rec.Status != proto.StatusWorking {
			t.Errorf("status with progress %q = %s, want working", msg, rec.Status)
		}
		if rec.Heartbeat.IsZero() || rec.LastUpdatedAt.Before(rec.CreatedAt) {
			t.Errorf("progress did not touch heartbeat/lastUpdatedAt: %+v", rec)
		}
		release <- struct{}{}
	}
	rec := h.terminal(t, tk)
	if rec.Status != proto.StatusCompleted || rec.StatusMessage != "Completed" {
		t.Fatalf("got %s %q, want completed \"Completed\"", rec.Status, rec.StatusMessage)
	}
}

// TestCatalog: Run publishes every tool's definition, and publishes it again
// every CatalogInterval.
func TestCatalog(t *testing.T) {
	h := mini(t)
	noop := func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
		return worker.TextResult("ok"), nil
	}
	schema := `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`
	tools := []worker.Tool{
		{Name: "search", Title: "Search", Description: "Finds things.", InputSchema: json.RawMessage(schema),
			Policy: worker.PolicySync, SyncBudget: 300 * time.Millisecond, TTL: 2 * time.Minute,
			PollInterval: 1500 * time.Millisecond, Handler: noop},
		{Name: "train", Policy: worker.PolicyTask, Queue: "gpu", TTL: -1, Handler: noop},
		{Name: "convert", Policy: worker.PolicyAuto, Handler: noop},
		{Name: "plain", Handler: noop},
	}
	want := map[string]catalog.Entry{
		"search": {Tool: proto.Tool{Name: "search", Title: "Search", Description: "Finds things.",
			InputSchema: json.RawMessage(schema)}, Policy: "sync", SyncBudgetMs: 300, TTLMs: 120000,
			PollIntervalMs: 1500, Queue: "mcpq"},
		"train": {Tool: proto.Tool{Name: "train", InputSchema: json.RawMessage(`{"type":"object"}`)},
			Policy: "task", TTLMs: catalog.UnlimitedTTL, Queue: "gpu"},
		"convert": {Tool: proto.Tool{Name: "convert", InputSchema: json.RawMessage(`{"type":"object"}`)},
			Policy: "auto", Queue: "mcpq"},
		"plain": {Tool: proto.Tool{Name: "plain", InputSchema: json.RawMessage(`{"type":"object"}`)},
			Queue: "mcpq"},
		barrierTool: {Tool: proto.Tool{Name: barrierTool, InputSchema: json.RawMessage(`{"type":"object"}`)},
			Queue: "mcpq"},
	}
	before := time.Now().Add(-time.Second)
	cfg := h.config()
	cfg.CatalogInterval = 20 * time.Millisecond
	h.start(t, cfg, tools...)
	// A finished job on each queue shows Run is past publishing and serves both queues.
	for _, name := range []string{"train", "plain"} {
		if rec := h.terminal(t, h.submit(t, name, `{}`)); rec.Status != proto.StatusCompleted {
			t.Fatalf("%s job ended %s", name, rec.Status)
		}
	}
	defs, err := h.store.Catalog().Entries(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) != len(want) {
		t.Errorf("catalog has %d tools, want %d: %+v", len(defs), len(want), defs)
	}
	for _, d := range defs {
		w, ok := want[d.Tool.Name]
		if !ok {
			t.Errorf("unexpected tool %q in catalog", d.Tool.Name)
			continue
		}
		if d.PublishedAt.Before(before) || d.PublishedAt.After(time.Now().Add(time.Second)) {
			t.Errorf("%s: publishedAt %v not around now", d.Tool.Name, d.PublishedAt)
		}
		got, _ := json.Marshal(published(d))
		exp, _ := json.Marshal(published(w))
		jsonEqual(t, got, string(exp))
	}

	// Republishing: a catalog entry removed by hand comes back.
	ctx := context.Background()
	if err := h.b.Client.HDel(ctx, h.store.Catalog().Keys().Entries(), "search").Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "search republished", func() bool {
		n, err := h.b.Client.HExists(ctx, h.store.Catalog().Keys().Entries(), "search").Result()
		return err == nil && n
	})
}

// published is what a tool definition promises front ends (publishedAt is
// checked apart, fields this test does not set are left out).
func published(d catalog.Entry) any {
	return struct {
		Tool                                proto.Tool
		Policy                              proto.Policy
		Queue                               string
		SyncBudgetMs, TTLMs, PollIntervalMs int64
	}{d.Tool, d.Policy, d.Queue, d.SyncBudgetMs, d.TTLMs, d.PollIntervalMs}
}

// eventually polls cond (for state that publishes no event) up to the bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, bound)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestNewValidation: New refuses configurations it cannot serve.
func TestNewValidation(t *testing.T) {
	b := redistest.Mini(t)
	cfg := worker.Config{Redis: b.Client, Prefix: b.Prefix}
	noop := func(context.Context, *worker.Call) (*proto.CallToolResult, error) { return nil, nil }
	ok := worker.Tool{Name: "ok", Handler: noop}
	cases := []struct {
		name  string
		cfg   worker.Config
		tools []worker.Tool
		want  string // substring of the error; "" means valid
	}{
		{"no redis", worker.Config{}, []worker.Tool{ok}, "Redis is required"},
		{"duplicate name", cfg, []worker.Tool{ok, {Name: "ok", Handler: noop}}, `"ok" registered twice`},
		{"unknown policy", cfg, []worker.Tool{{Name: "p", Policy: "sometimes", Handler: noop}}, `unknown policy "sometimes"`},
		{"invalid schema", cfg, []worker.Tool{{Name: "s", InputSchema: json.RawMessage(`{"type":`), Handler: noop}}, "not JSON"},
		{"no name", cfg, []worker.Tool{{Handler: noop}}, "without a name"},
		{"no handler", cfg, []worker.Tool{{Name: "h"}}, `"h" has no handler`},
		{"valid policies", cfg, []worker.Tool{ok, {Name: "s", Policy: worker.PolicySync, Handler: noop},
			{Name: "t", Policy: worker.PolicyTask, Handler: noop}, {Name: "a", Policy: worker.PolicyAuto, Handler: noop},
			{Name: "j", InputSchema: json.RawMessage(`{"type":"object"}`), Handler: noop}}, ""},
	}
	// A worker with nothing to serve is refused by New or, since tools can
	// be added after New, by Run, which then returns at once.
	t.Run("no tools", func(t *testing.T) {
		w, err := worker.New(cfg)
		if err != nil {
			return
		}
		done := make(chan error, 1)
		go func() { done <- w.Run(context.Background()) }()
		if err := recv(t, done, "Run return"); err == nil {
			t.Fatal("Run of a worker without tools returned nil")
		}
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := worker.New(tc.cfg, tc.tools...)
			if tc.want == "" {
				if err != nil || w == nil {
					t.Fatalf("New = %v, %v; want a worker", w, err)
				}
				return
			}
			if err == nil || w != nil {
				t.Fatalf("New = %v, %v; want error containing %q", w, err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// TestRunReturnsOnCancel: Run returns nil once its context is cancelled.
func TestRunReturnsOnCancel(t *testing.T) {
	h := mini(t)
	w, err := worker.New(h.config(), h.tool(barrierTool, func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
		return worker.TextResult("barrier"), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	h.barrier(t) // Run is serving
	cancel()
	if err := recv(t, done, "Run return"); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}

	// A context already done: Run does not start serving.
	go func() { done <- w.Run(ctx) }()
	recv(t, done, "Run return on a done context")
}

// TestShutdownRequeuesRunningJob: a job still running when the shutdown
// timeout ends goes back to the queue without touching the record, and the
// next worker runs it as attempt 2.
func TestShutdownRequeuesRunningJob(t *testing.T) {
	h := mini(t)
	started := make(chan int64, 2)
	ended := make(chan error, 2)
	tool := h.tool("long", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
		started <- c.Attempt
		if c.Attempt > 1 {
			return worker.TextResult(fmt.Sprint("done by attempt ", c.Attempt)), nil
		}
		err := c.Step(ctx, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
		ended <- err
		return nil, err
	})
	cfg := h.config()
	cfg.ShutdownTimeout = 50 * time.Millisecond
	w, err := worker.New(cfg, tool)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	tk := h.submit(t, "long", `{}`)
	if a := recv(t, started, "attempt 1 start"); a != 1 {
		t.Fatalf("first attempt = %d", a)
	}
	cancel()
	if err := recv(t, done, "Run return"); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if err := recv(t, ended, "attempt 1 step end"); !errors.Is(err, context.Canceled) {
		t.Errorf("attempt 1's step ended with %v, want context.Canceled", err)
	}
	rec := h.get(t, tk.ref)
	if rec.Status != proto.StatusWorking || rec.Attempt != 1 || len(rec.Result) != 0 || rec.Error != nil {
		t.Fatalf("record after shutdown: %+v, want working attempt 1 untouched", rec)
	}
	info, err := asynq.NewInspectorFromRedisClient(h.b.Client).GetTaskInfo(h.jobs.Keys().Queue(h.queue), tk.ref.ID)
	if err != nil {
		t.Fatalf("job after shutdown: %v", err)
	}
	if info.State != asynq.TaskStatePending {
		t.Errorf("job state after shutdown = %v, want pending", info.State)
	}

	h.start(t, h.config(), tool)
	rec = h.terminal(t, tk)
	if rec.Status != proto.StatusCompleted || rec.Attempt != 2 {
		t.Fatalf("after restart: %s attempt %d, want completed attempt 2", rec.Status, rec.Attempt)
	}
	jsonEqual(t, rec.Result, `{"resultType":"complete","content":[{"type":"text","text":"done by attempt 2"}]}`)
}

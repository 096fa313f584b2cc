package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate/catalog"
	"github.com/mcpq/mcpq/taskstate/events"
	"github.com/mcpq/mcpq/worker"
)

// TestQueues: a "gpu" worker and a "cpu" worker built with the same tools
// and the same ToolQueues each publish and run only the tools of their
// queues; when the gpu worker stops, its tool leaves the served catalog
// within ServedIntervals × CatalogInterval and the sweep announces it.
func TestQueues(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		h := newHarness(t, b)
		if b.Mini == nil {
			t.Cleanup(func() {
				insp := asynq.NewInspectorFromRedisClient(b.Client)
				for _, q := range []string{"gpu", "cpu"} {
					_ = insp.DeleteQueue(h.jobs.Keys().Queue(q), true)
				}
			})
		}
		lists, err := h.hub.Subscribe(context.Background(), h.store.Catalog().Keys().Lists())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(lists.Close)
		tools := func(label string) []worker.Tool {
			ran := func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
				return worker.TextResult(label), nil
			}
			return []worker.Tool{{Name: "render", Handler: ran}, {Name: "echo", Handler: ran}}
		}
		cfg := func(queues map[string]int) worker.Config {
			c := h.config()
			c.Queues, c.ToolQueues = queues, map[string]string{"render": "gpu", "*": "cpu"}
			c.CatalogInterval, c.TakeoverInterval = 100*time.Millisecond, 100*time.Millisecond
			return c
		}
		runWorker := func(c worker.Config, tools []worker.Tool) (stop func()) {
			w, err := worker.New(c, tools...)
			if err != nil {
				t.Fatalf("worker.New: %v", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- w.Run(ctx) }()
			recv(t, w.Ready(), "worker ready")
			stopped := false
			stop = func() {
				if stopped {
					return
				}
				stopped = true
				cancel()
				if err := recv(t, done, "Run to return"); err != nil {
					t.Errorf("Run: %v", err)
				}
			}
			t.Cleanup(stop)
			return stop
		}
		stopGPU := runWorker(cfg(map[string]int{"gpu": 1}), tools("gpu worker"))
		runWorker(cfg(map[string]int{"cpu": 2}), tools("cpu worker"))

		entries := func() map[string]catalog.Entry {
			defs, err := h.store.Catalog().Entries(context.Background())
			if err != nil {
				t.Fatalf("Tools: %v", err)
			}
			m := map[string]catalog.Entry{}
			for _, d := range defs {
				m[d.Key()] = d
			}
			return m
		}
		served := func(key string) bool {
			d := entries()[key]
			return d.Served(time.Now())
		}
		c := entries()
		if c["render"].Queue != "gpu" || c["echo"].Queue != "cpu" || len(c) != 2 {
			t.Fatalf("catalog %+v: want render on gpu, echo on cpu, nothing else", c)
		}
		for key := range c {
			if !served(key) {
				t.Fatalf("%s not served", key)
			}
		}
		for range 3 {
			for tool, want := range map[string]string{"render": "gpu worker", "echo": "cpu worker"} {
				tk := h.create(t, tool, `{}`)
				if err := h.jobs.Enqueue(context.Background(), queue.Job{Ref: tk.ref, Tool: tool, Queue: c[tool].Queue}); err != nil {
					t.Fatal(err)
				}
				rec := h.terminal(t, tk)
				if rec.Status != proto.StatusCompleted || !strings.Contains(string(rec.Result), want) {
					t.Fatalf("%s ended %s with %s, want it run by the %s", tool, rec.Status, rec.Result, want)
				}
			}
		}

		drain(lists)
		stopGPU()
		deadline := time.After(bound)
		for served("render") {
			select {
			case <-deadline:
				t.Fatal("render still served long after its only worker stopped")
			case <-time.After(20 * time.Millisecond):
			}
		}
		if !served("echo") {
			t.Fatal("echo stopped being served with the gpu worker")
		}
		if got := recv(t, lists.C, "tools list change"); got != catalog.ListTools {
			t.Fatalf("Lists got %q", got)
		}
		for entries()["render"].ServedUntil != (time.Time{}) { // swept by the cpu worker
			select {
			case <-deadline:
				t.Fatal("render never swept from the serving set")
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
}

func drain(s *events.Subscription) {
	for {
		select {
		case <-s.C:
		default:
			return
		}
	}
}

// TestQueuesConfig: bad queue settings are refused with precise errors, and
// a worker whose queues hold none of its entries does not start.
func TestQueuesConfig(t *testing.T) {
	t.Parallel()
	h := mini(t)
	noop := func(context.Context, *worker.Call) (*proto.CallToolResult, error) { return nil, nil }
	for _, tc := range []struct {
		name string
		mod  func(*worker.Config)
		want string
	}{
		{"zero concurrency", func(c *worker.Config) { c.Queues = map[string]int{"gpu": 0} }, `queue "gpu" needs`},
		{"unnamed queue", func(c *worker.Config) { c.Queues = map[string]int{"": 2} }, `queue "" needs`},
		{"empty tool queue", func(c *worker.Config) { c.ToolQueues = map[string]string{"render": ""} }, `"render"="" needs`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := h.config()
			tc.mod(&c)
			if _, err := worker.New(c, worker.Tool{Name: "render", Handler: noop}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want %q", err, tc.want)
			}
		})
	}
	c := h.config()
	c.Queues = map[string]int{"gpu": 1}
	w, err := worker.New(c, worker.Tool{Name: "render", Handler: noop})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "nothing to serve on queues") {
		t.Fatalf("Run: %v, want nothing to serve", err)
	}
}

package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/internal/workertest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
)

// A worker's side of the wake path (internal/queue, whose server_test.go
// holds the rest): its servers hold their dequeue for a wake-up and its
// metrics say so. Its workers poll once an hour: a hold lasts at most
// 20 s, after which asynq sleeps for most of the hour, so within a test
// (bound, 10 s) only a wake-up delivers a job to them.
const noPoll = time.Hour

// wakeWorker is a worker started by a test, with its registry.
type wakeWorker struct {
	reg *prometheus.Registry
}

// startWake starts a worker of tool on the harness queue polling every
// interval; ran receives name for each call it runs.
func (h *harness) startWake(t *testing.T, name string, interval time.Duration, ran chan<- string) *wakeWorker {
	t.Helper()
	cfg := h.config()
	cfg.TaskCheckInterval = interval
	cfg.Metrics = prometheus.NewRegistry()
	w, err := worker.New(cfg, h.tool("echo", func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
		ran <- name
		return worker.TextResult(name), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	workertest.Run(t, w)
	return &wakeWorker{reg: cfg.Metrics}
}

// gauge reads one of the worker's metrics.
func (ww *wakeWorker) gauge(t testing.TB, name string) float64 {
	t.Helper()
	mfs, err := ww.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// until waits (within bound) for cond, checking it every millisecond.
func until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, bound)
		}
		time.Sleep(time.Millisecond)
	}
}

// holding waits until the worker's asynq server holds its dequeue for a
// wake-up (its queues are empty).
func (ww *wakeWorker) holding(t testing.TB) {
	t.Helper()
	until(t, "hold", func() bool { return ww.gauge(t, "mcpq_worker_idle_holds") == 1 })
}

// createWoken creates a task of tool "echo" with its job, as the front end
// does: record, job and wake-up in one pipeline.
func (h *harness) createWoken(t testing.TB) task {
	t.Helper()
	ctx := context.Background()
	ref := taskstate.Ref{Owner: taskstate.OwnerTag("alice"), ID: taskstate.NewID()}
	capture := queue.NewClient(h.b.Client, queue.Options{Prefix: h.b.Prefix, Capture: true})
	j, err := capture.Capture(ctx, queue.Job{Ref: ref, Tool: "echo", Queue: h.queue})
	if err != nil || j == nil {
		t.Fatalf("capture enqueue: %v %v", j, err)
	}
	sub, err := h.hub.Subscribe(ctx, h.store.Keys().Events(ref))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	if _, err := h.store.Create(ctx, taskstate.CreateParams{ID: ref.ID, Principal: "alice", Tool: "echo",
		Arguments: json.RawMessage(`{}`), Job: j}); err != nil {
		t.Fatalf("Create: %v", err)
	}
	return task{ref: ref, sub: sub}
}

func TestWorkerWakesWithoutPolling(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		h := newHarness(t, b)
		ran := make(chan string, 4)
		ww := h.startWake(t, "w", noPoll, ran)
		for i := range 3 { // each job after the hold that follows the last
			ww.holding(t)
			tk := h.createWoken(t)
			if rec := h.terminal(t, tk); rec.Status != proto.StatusCompleted {
				t.Fatalf("job %d ended %s", i, rec.Status)
			}
			<-ran
			if n := ww.gauge(t, "mcpq_worker_woken_jobs_total"); n != float64(i+1) {
				t.Errorf("woken jobs = %v, want %d", n, i+1)
			}
		}
	})
}

package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpq/mcpq/internal/job"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
)

// The wake path (worker/wake.go). Its workers poll once an hour: a hold
// lasts at most 20 s, after which asynq sleeps for most of the hour, so
// within a test (bound, 10 s) only a wake-up delivers a job to them.
const noPoll = time.Hour

// wakeWorker is a worker started by a test, with its registry and the
// means to stop it.
type wakeWorker struct {
	reg  *prometheus.Registry
	stop context.CancelFunc
	done chan error
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
	ctx, cancel := context.WithCancel(context.Background())
	ww := &wakeWorker{reg: cfg.Metrics, stop: cancel, done: make(chan error, 1)}
	go func() { ww.done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-ww.done // asynq must not outlive the Redis client (harness_test.go, start)
	})
	recv(t, w.Ready(), name+" ready")
	return ww
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
	enq := asynq.NewClientFromRedisClient(taskstate.NewJobCapture(h.b.Client))
	cctx, j := taskstate.CaptureJob(ctx)
	if err := job.Enqueue(cctx, enq, ref, 0, h.store.Keys().Queue(h.queue), taskstate.DefaultMaxTTL); err != nil {
		t.Fatalf("capture enqueue: %v", err)
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

func TestWakeDeliversWithoutPolling(t *testing.T) {
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

func TestWakeLostStillPolled(t *testing.T) {
	t.Parallel()
	h := mini(t)
	ran := make(chan string, 1)
	ww := h.startWake(t, "w", 10*time.Millisecond, ran)
	ww.holding(t)
	tk := h.create(t, "echo", `{}`)
	h.enqueue(t, tk, "echo", "") // no wake-up published
	if rec := h.terminal(t, tk); rec.Status != proto.StatusCompleted {
		t.Fatalf("ended %s", rec.Status)
	}
	if n := ww.gauge(t, "mcpq_worker_woken_jobs_total"); n != 0 {
		t.Errorf("woken jobs = %v, want 0: the poll delivered it", n)
	}
}

func TestWakeWorkerStoppedWhileHolding(t *testing.T) {
	t.Parallel()
	h := mini(t)
	ran := make(chan string, 2)
	a := h.startWake(t, "a", noPoll, ran)
	bw := h.startWake(t, "b", noPoll, ran)
	a.holding(t)
	bw.holding(t)
	a.stop()
	if err := recv(t, a.done, "worker a's Run to return"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	a.done <- nil // for the cleanup
	tk := h.createWoken(t)
	if rec := h.terminal(t, tk); rec.Status != proto.StatusCompleted {
		t.Fatalf("ended %s", rec.Status)
	}
	if got := <-ran; got != "b" {
		t.Errorf("ran on %s, want b", got)
	}
}

func TestWakeShutdownWhileHoldingIsPrompt(t *testing.T) {
	t.Parallel()
	h := mini(t)
	ww := h.startWake(t, "w", noPoll, make(chan string))
	ww.holding(t)
	ww.stop()
	// Without the hold's release, Run returns after the hold (20 s) and
	// asynq's sleep (most of an hour).
	if err := recv(t, ww.done, "Run to return"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	ww.done <- nil
}

func TestWakeAfterRedisRestart(t *testing.T) {
	t.Parallel()
	p := redistest.StartPrivate(t)
	h := newHarness(t, p.Backend)
	ran := make(chan string, 2)
	ww := h.startWake(t, "w", noPoll, ran)
	ww.holding(t)
	p.Kill(t)
	p.Start(t)
	channel := h.store.Keys().Wake(h.queue)
	until(t, "wake subscription after the restart", func() bool {
		n, err := p.Client.PubSubNumSub(context.Background(), channel).Result()
		return err == nil && n[channel] == 1
	})
	ww.holding(t)
	tk := h.createWoken(t)
	if rec := h.terminal(t, tk); rec.Status != proto.StatusCompleted {
		t.Fatalf("ended %s", rec.Status)
	}
	<-ran
	if n := ww.gauge(t, "mcpq_worker_woken_jobs_total"); n != 1 {
		t.Errorf("woken jobs = %v, want 1", n)
	}
}

package queue_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
)

// The wake path (dequeue.go). These servers poll once an hour: a hold
// lasts at most 20 s, after which asynq sleeps for most of the hour, so
// within a test (bound) only a wake-up delivers a job to them.
const noPoll = time.Hour

// bound is the failure bound of every wait: it decides how long a broken
// build takes to fail, never whether a working one passes.
const bound = 10 * time.Second

// served is one worker's queue servers on the "default" queue, with what
// they delivered and their hold counters.
type served struct {
	srvs    *queue.Servers
	holding atomic.Int64 // servers holding a dequeue now
	woken   atomic.Int64 // jobs a wake-up delivered
	stopped atomic.Bool
}

// serve starts servers polling every interval; ran receives name for
// each job they deliver.
func serve(t *testing.T, b *redistest.Backend, hub *events.Hub, name string, interval time.Duration, ran chan<- string) *served {
	t.Helper()
	s := &served{}
	srvs, err := queue.Serve(ctx(t), queue.ServeConfig{Redis: b.Client, Keys: queue.Keys{Prefix: b.Prefix}, Hub: hub,
		Groups: []queue.Group{{Queues: []string{"default"}, Concurrency: 1}}, TaskCheckInterval: interval,
		ShutdownTimeout: time.Second, Logger: slog.New(slog.DiscardHandler),
		Holding: func(d float64) { s.holding.Add(int64(math.Round(d))) }, Woken: func() { s.woken.Add(1) }},
		func(_ context.Context, j queue.Job) error {
			ran <- name
			return nil
		})
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	s.srvs = srvs
	t.Cleanup(s.stop) // before the Redis client closes (asynq must not outlive it)
	return s
}

func (s *served) stop() {
	if !s.stopped.Swap(true) {
		s.srvs.Stop()
	}
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

// holdingNow waits until the server holds its dequeue for a wake-up (its
// queue is empty).
func (s *served) holdingNow(t testing.TB) {
	t.Helper()
	until(t, "hold", func() bool { return s.holding.Load() == 1 })
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

// createWoken creates a task with its job, as the front end does: record,
// job and wake-up in one pipeline.
func (e *captureEnv) createWoken(t *testing.T) {
	t.Helper()
	ref := newRef()
	if _, err := e.s.Create(ctx(t), taskstate.CreateParams{ID: ref.ID, Principal: principal, Tool: "echo",
		Arguments: json.RawMessage(`{}`), Job: e.capture(t, ref)}); err != nil {
		t.Fatalf("Create: %v", err)
	}
}

// TestWakeDeliversWithoutPolling pins what the wake path leans on in
// asynq (its dequeue script, keys and answer): with an hour's poll, only
// a wake-up can deliver the job.
func TestWakeDeliversWithoutPolling(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newCaptureEnv(t, b)
		hub := events.NewHub(b.Client)
		t.Cleanup(func() { _ = hub.Close() })
		ran := make(chan string, 4)
		s := serve(t, b, hub, "s", noPoll, ran)
		for i := range 3 { // each job after the hold that follows the last
			s.holdingNow(t)
			e.createWoken(t)
			recv(t, ran, "delivery")
			if n := s.woken.Load(); n != int64(i+1) {
				t.Errorf("woken jobs = %d, want %d", n, i+1)
			}
		}
	})
}

func TestWakeLostStillPolled(t *testing.T) {
	t.Parallel()
	b := redistest.Mini(t)
	hub := events.NewHub(b.Client)
	t.Cleanup(func() { _ = hub.Close() })
	ran := make(chan string, 1)
	s := serve(t, b, hub, "s", 10*time.Millisecond, ran)
	s.holdingNow(t)
	// Enqueued through asynq alone: no wake-up is published.
	j := queue.Job{Ref: newRef(), Tool: "echo", Queue: "default"}
	if _, err := asynq.NewClientFromRedisClient(b.Client).Enqueue(asynq.NewTask(queue.Type, queue.Payload(j)),
		asynq.TaskID(j.Ref.ID), asynq.Queue(queue.Keys{Prefix: b.Prefix}.Queue("default"))); err != nil {
		t.Fatal(err)
	}
	recv(t, ran, "delivery")
	if n := s.woken.Load(); n != 0 {
		t.Errorf("woken jobs = %d, want 0: the poll delivered it", n)
	}
}

func TestWakeServerStoppedWhileHolding(t *testing.T) {
	t.Parallel()
	b := redistest.Mini(t)
	e := newCaptureEnv(t, b)
	hub := events.NewHub(b.Client)
	t.Cleanup(func() { _ = hub.Close() })
	ran := make(chan string, 2)
	a := serve(t, b, hub, "a", noPoll, ran)
	other := serve(t, b, hub, "b", noPoll, ran)
	a.holdingNow(t)
	other.holdingNow(t)
	a.stop()
	e.createWoken(t)
	if got := recv(t, ran, "delivery"); got != "b" {
		t.Errorf("ran on %s, want b", got)
	}
}

func TestWakeStopWhileHoldingIsPrompt(t *testing.T) {
	t.Parallel()
	b := redistest.Mini(t)
	hub := events.NewHub(b.Client)
	t.Cleanup(func() { _ = hub.Close() })
	s := serve(t, b, hub, "s", noPoll, make(chan string))
	s.holdingNow(t)
	// Without the hold's release, Stop returns after the hold (20 s) and
	// asynq's sleep (most of an hour).
	done := make(chan struct{})
	go func() { s.stop(); close(done) }()
	recv(t, done, "Stop to return")
}

func TestWakeAfterRedisRestart(t *testing.T) {
	t.Parallel()
	p := redistest.StartPrivate(t)
	e := newCaptureEnv(t, p.Backend)
	hub := events.NewHub(p.Client)
	t.Cleanup(func() { _ = hub.Close() })
	ran := make(chan string, 2)
	s := serve(t, p.Backend, hub, "s", noPoll, ran)
	s.holdingNow(t)
	p.Kill(t)
	p.Start(t)
	channel := queue.Keys{Prefix: p.Prefix}.Wake("default")
	until(t, "wake subscription after the restart", func() bool {
		n, err := p.Client.PubSubNumSub(context.Background(), channel).Result()
		return err == nil && n[channel] == 1
	})
	s.holdingNow(t)
	e.createWoken(t)
	recv(t, ran, "delivery")
	if n := s.woken.Load(); n != 1 {
		t.Errorf("woken jobs = %d, want 1", n)
	}
}

package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
)

// lostConfig makes deliveries that do not heartbeat count as lost quickly:
// heartbeats are an hour apart, so a handler that takes no step is silent.
func (h *harness) lostConfig(maxLost int) worker.Config {
	cfg := h.config()
	cfg.HeartbeatInterval = time.Hour
	cfg.LostAfter = 150 * time.Millisecond
	cfg.TakeoverInterval = 20 * time.Millisecond
	cfg.MaxLostDeliveries = maxLost
	return cfg
}

// TestTakeoverOfSilentDelivery: a delivery that stops heartbeating (its
// worker hung or died) is taken back by mcpq and the task run again under
// a new job and attempt, which completes it; the silent delivery's own
// outcome is refused.
func TestTakeoverOfSilentDelivery(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		h := newHarness(t, b)
		first := make(chan struct{})
		h.start(t, h.lostConfig(3), h.tool("hang", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			if c.Attempt == 1 {
				close(first)
				<-ctx.Done() // silent until stopped (the takeover's signal stops it)
				return worker.TextResult("stale"), nil
			}
			return worker.TextResult("second"), nil
		}))
		tk := h.submit(t, "hang", `{}`)
		recv(t, first, "first delivery")
		rec := h.terminal(t, tk)
		if rec.Status != proto.StatusCompleted || !strings.Contains(string(rec.Result), "second") {
			t.Fatalf("ended %s with %s, want completed by the second delivery", rec.Status, rec.Result)
		}
		if rec.Lost != 1 || rec.Resumes != 1 || rec.Attempt < 2 {
			t.Fatalf("lost %d, job %d, attempt %d: want one lost delivery and job 1", rec.Lost, rec.Resumes, rec.Attempt)
		}
	})
}

// TestAllDeliveriesLost: a task whose every delivery goes silent ends
// failed after MaxLostDeliveries, with a message that says why, instead of
// staying "working" with nothing left to run it.
func TestAllDeliveriesLost(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		h := newHarness(t, b)
		runs := &counter{}
		h.start(t, h.lostConfig(2), h.tool("hang", runs.wrap(func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})))
		tk := h.submit(t, "hang", `{}`)
		rec := h.terminal(t, tk)
		if rec.Status != proto.StatusFailed || rec.Error == nil || !strings.Contains(rec.Error.Message, "worker was lost 3 times") {
			t.Fatalf("ended %s (%+v), want failed after 3 lost deliveries", rec.Status, rec.Error)
		}
		if n := runs.n.Load(); n != 3 {
			t.Errorf("handler ran %d times, want 3 (one per delivery)", n)
		}
	})
}

// TestCancelWithoutLiveWorker: a cancel acknowledged on a task whose
// handler never looks at its context or the cancel (its worker wedged)
// still ends it "cancelled", through the takeover scan after the grace,
// and the handler's later result is not written.
func TestCancelWithoutLiveWorker(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		h := newHarness(t, b)
		started, release := make(chan struct{}), make(chan struct{})
		cfg := h.config()
		cfg.HeartbeatInterval = time.Hour
		cfg.TakeoverInterval = 20 * time.Millisecond
		h.start(t, cfg, h.tool("wedged", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			close(started)
			<-release
			return worker.TextResult("too late"), nil
		}))
		defer close(release)
		tk := h.submit(t, "wedged", `{}`)
		recv(t, started, "delivery")
		store := taskstate.New(b.Client, taskstate.Options{Prefix: b.Prefix, CancelGrace: 50 * time.Millisecond})
		if err := store.RequestCancel(context.Background(), tk.ref); err != nil {
			t.Fatal(err)
		}
		if rec := h.terminal(t, tk); rec.Status != proto.StatusCancelled || rec.Result != nil {
			t.Fatalf("ended %s with %s, want cancelled", rec.Status, rec.Result)
		}
	})
}

// TestStopSignalIsAHint: a task id on the stops channel makes a running
// delivery look at its record at once, and only the record decides. A
// takeover's signal can reach a worker after the task's next delivery
// started there; that delivery (still the task's own, never cancelled)
// must go on and complete.
func TestStopSignalIsAHint(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		h := newHarness(t, b)
		started, release := make(chan struct{}), make(chan struct{})
		cfg := h.config()
		cfg.HeartbeatInterval = time.Hour
		h.start(t, cfg, h.tool("wait", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			close(started)
			select {
			case <-release:
				return worker.TextResult("done"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}))
		tk := h.submit(t, "wait", `{}`)
		recv(t, started, "delivery")
		// The signal goes out and is acted on: the delivery heartbeats (the
		// test clears the heartbeat first, so a new one shows).
		key := h.store.Keys().Task(tk.ref)
		if err := b.Client.HDel(context.Background(), key, "heartbeat").Err(); err != nil {
			t.Fatal(err)
		}
		if err := b.Publish(context.Background(), h.store.Keys().Stops(), tk.ref.ID); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(bound)
		for h.get(t, tk.ref).Heartbeat.IsZero() {
			if time.Now().After(deadline) {
				t.Fatal("the stop signal did not make the delivery look at its record")
			}
			time.Sleep(5 * time.Millisecond)
		}
		close(release)
		if rec := h.terminal(t, tk); rec.Status != proto.StatusCompleted {
			t.Fatalf("ended %s after a stop signal with no cancel, want completed", rec.Status)
		}
	})
}

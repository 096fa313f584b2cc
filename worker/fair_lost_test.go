package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
)

// submitTTL is submitAs for a task that expires ttlMs after its creation.
func (h *harness) submitTTL(t testing.TB, principal, tool string, ttlMs int64) task {
	t.Helper()
	ctx := context.Background()
	rec, err := h.store.Create(ctx, taskstate.CreateParams{Principal: principal, Tool: tool,
		Arguments: json.RawMessage(`{}`), PollIntervalMs: 100, TTLMs: &ttlMs})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	sub, err := h.hub.Subscribe(ctx, h.store.Keys().Events(rec.Ref))
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(sub.Close)
	if err := h.jobs.Enqueue(ctx, queue.Job{Ref: rec.Ref, Tool: tool, Queue: h.queue}); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return task{ref: rec.Ref, sub: sub}
}

// TestFairWaitingCancelAndExpiry: a task whose job waits in line (its
// principal at its cap) is cancelled at once by a cancel and ends
// "expired" at its TTL; when their jobs reach a slot they run nothing,
// and the queue is left empty.
func TestFairWaitingCancelAndExpiry(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		h := newHarness(t, b)
		log := &fairLog{}
		release := make(chan struct{})
		cfg := h.config()
		cfg.Queues = map[string]int{h.queue: 4}
		cfg.MaxRunningPerPrincipal = map[string]int{"*": 1}
		cfg.ReapInterval = 20 * time.Millisecond
		h.start(t, cfg, fairTools(h, log, release)...)
		first := h.submitAs(t, "p", "long", h.queue)
		waitFor(t, "the first long task running", func() bool { return log.count("long") == 1 })
		cancelled := h.submitAs(t, "p", "long", h.queue)
		expiring := h.submitTTL(t, "p", "long", 300)
		if err := h.store.RequestCancel(context.Background(), cancelled.ref); err != nil {
			t.Fatalf("RequestCancel: %v", err)
		}
		if rec := h.get(t, cancelled.ref); rec.Status != proto.StatusCancelled {
			t.Errorf("a waiting task after its cancel: %s, want cancelled at once", rec.Status)
		}
		// Past its TTL the task reads as not found, and the reaper deletes
		// its record (and would settle its reservation) while its job waits.
		waitFor(t, "the expired waiting task reaped", func() bool {
			_, err := h.store.Get(context.Background(), expiring.ref)
			n, xerr := b.Client.Exists(context.Background(), h.store.Keys().Task(expiring.ref)).Result()
			return errors.Is(err, taskstate.ErrNotFound) && xerr == nil && n == 0
		})
		release <- struct{}{}
		if rec := h.terminal(t, first); rec.Status != proto.StatusCompleted {
			t.Fatalf("the running task ended %s", rec.Status)
		}
		waitFor(t, "the queue drained", func() bool {
			d, err := h.jobs.Depth(h.queue)
			return err == nil && d.Pending == 0 && d.Active == 0
		})
		if n := log.count("long"); n != 1 {
			t.Errorf("the long tool ran %d times, want once (the cancelled and expired tasks never)", n)
		}
	})
}

// TestFairTakeoverUnderCap: a task taken back from a silent delivery,
// under a per-principal cap with another job of its principal waiting in
// line, is run again by a later attempt and both complete: nothing is
// lost, nothing runs twice at once. (Which of the two runs first depends
// on when the old run sees its fence: the takeover's job goes to the front
// of the queue, TestEnqueueFront in internal/queue, but a claim over the
// cap sends it back until the old run has stopped.)
func TestFairTakeoverUnderCap(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		h := newHarness(t, b)
		log := &fairLog{}
		cfg := h.lostConfig(3)
		cfg.Queues = map[string]int{h.queue: 4}
		cfg.MaxRunningPerPrincipal = map[string]int{"*": 1}
		hang := h.tool("hang", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			if c.Attempt == 1 {
				log.add("hang1")
				<-ctx.Done() // silent until the takeover stops it
				return worker.TextResult("stale"), nil
			}
			log.add("rerun")
			return worker.TextResult(fmt.Sprintf("attempt %d", c.Attempt)), nil
		})
		quick := h.tool("quick", func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
			log.add("quick")
			return worker.TextResult("quick done"), nil
		})
		// Both wait before the worker starts: the first runs, the second
		// waits under the cap.
		lost := h.submitAs(t, "p", "hang", h.queue)
		waiting := h.submitAs(t, "p", "quick", h.queue)
		h.start(t, cfg, hang, quick)
		if rec := h.terminal(t, lost); rec.Status != proto.StatusCompleted || strings.Contains(string(rec.Result), "stale") ||
			rec.Lost != 1 || rec.Resumes < 1 {
			t.Fatalf("the taken-over task: %s %s, lost %d, job %d; want completed by a later attempt, on a later job",
				rec.Status, rec.Result, rec.Lost, rec.Resumes)
		}
		if rec := h.terminal(t, waiting); rec.Status != proto.StatusCompleted {
			t.Fatalf("the waiting task ended %s", rec.Status)
		}
	})
}

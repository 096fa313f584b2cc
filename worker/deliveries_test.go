package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// TestCancelReachesNewerDelivery: a stale delivery of a task ending beside
// a newer one on the same worker does not unhook the newer one from cancel
// signals. Heartbeats are an hour apart, so only the signal can stop it.
func TestCancelReachesNewerDelivery(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		h := newHarness(t, b)
		started := make(chan int64, 2)
		release := make(chan struct{})
		cfg := h.config()
		cfg.HeartbeatInterval = time.Hour
		h.start(t, cfg, h.tool("block", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			started <- c.Attempt
			if c.Attempt == 1 {
				<-release // the stale delivery ends on its own
				return worker.TextResult("stale"), nil
			}
			<-ctx.Done() // the newer one runs until stopped
			return nil, ctx.Err()
		}))
		tk := h.submit(t, "block", `{}`)
		if a := <-started; a != 1 {
			t.Fatalf("first delivery is attempt %d", a)
		}
		// Job 0 delivered again (an id asynq takes twice) for a holder the
		// store cannot judge (no worker named, as an older mcpq claims); a
		// holder that names a worker keeps its task (taskstate/catalog/leases.go).
		if err := b.Client.HDel(context.Background(), h.store.Keys().Task(tk.ref), "worker").Err(); err != nil {
			t.Fatal(err)
		}
		h.enqueue(t, tk, "block", tk.ref.ID+"#0")
		if a := <-started; a != 2 {
			t.Fatalf("second delivery is attempt %d", a)
		}
		close(release)
		// The stale delivery is over once asynq no longer holds its job
		// (marked done after the handler, and mcpq's bookkeeping, returned).
		insp := asynq.NewInspectorFromRedisClient(b.Client)
		queue := h.jobs.Keys().Queue(h.queue)
		for deadline := time.Now().Add(bound); ; {
			if _, err := insp.GetTaskInfo(queue, tk.ref.ID); errors.Is(err, asynq.ErrTaskNotFound) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the stale delivery's job is still held")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := h.store.RequestCancel(context.Background(), tk.ref); err != nil {
			t.Fatalf("RequestCancel: %v", err)
		}
		if rec := h.terminal(t, tk); rec.Status != proto.StatusCancelled {
			t.Fatalf("ended %s, want cancelled", rec.Status)
		}
	})
}

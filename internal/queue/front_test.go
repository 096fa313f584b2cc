package queue_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate/events"
)

// TestEnqueueFront: a job enqueued at the front is delivered before the
// jobs that waited on its queue, which keep their order.
func TestEnqueueFront(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		c := queue.NewClient(b.Client, queue.Options{Prefix: b.Prefix})
		var backlog []string
		for range 3 {
			ref := newRef()
			backlog = append(backlog, ref.ID)
			if err := c.Enqueue(ctx(t), queue.Job{Ref: ref, Tool: "echo", Queue: "default"}); err != nil {
				t.Fatal(err)
			}
		}
		front := newRef()
		if err := c.EnqueueFront(ctx(t), queue.Job{Ref: front, Tool: "echo", Seq: 1, Queue: "default"}); err != nil {
			t.Fatal(err)
		}
		hub := events.NewHub(b.Client)
		t.Cleanup(func() { hub.Close() })
		ran := make(chan string, 4)
		srvs, err := queue.Serve(ctx(t), queue.ServeConfig{Redis: b.Client, Keys: queue.Keys{Prefix: b.Prefix}, Hub: hub,
			Groups: []queue.Group{{Queues: []string{"default"}, Concurrency: 1}}, TaskCheckInterval: 20 * time.Millisecond,
			ShutdownTimeout: time.Second, Logger: slog.New(slog.DiscardHandler)},
			func(_ context.Context, j queue.Job) error {
				ran <- j.Ref.ID
				return nil
			})
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
		t.Cleanup(srvs.Stop)
		want := append([]string{front.ID}, backlog...)
		for i, id := range want {
			if got := recv(t, ran, "delivery"); got != id {
				t.Fatalf("delivery %d: %s, want %s (order %v)", i, got, id, want)
			}
		}
	})
}

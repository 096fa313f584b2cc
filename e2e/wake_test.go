package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// TestWakeAfterWorkerSIGKILL: of two idle workers holding their dequeue
// for a wake-up (docs/reliability.md, "Job pickup"), one is killed; a new
// task's job goes to the other at once. Both poll once an hour, so within
// this test only a wake-up delivers a job (a hold lasts up to 20 s).
func TestWakeAfterWorkerSIGKILL(t *testing.T) {
	t.Parallel()
	b := redistest.Real(t)
	env := []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix, "MCPQ_TASK_CHECK_INTERVAL=1h"}
	doomed := start(t, "worker A", env, nil, "worker", "--fixtures", "conformance")
	start(t, "worker B", env, nil, "worker", "--fixtures", "conformance")
	url := startFrontend(t, env)
	waitCatalog(t, url, "slow_compute")
	ctx := within(t)
	wake := queue.Keys{Prefix: b.Prefix}.Wake(worker.DefaultQueue)
	subscribers := func() int64 {
		n, err := b.Client.PubSubNumSub(ctx, wake).Result()
		if err != nil {
			t.Fatalf("PUBSUB NUMSUB: %v", err)
		}
		return n[wake]
	}
	waitFor(t, ctx, "both workers subscribed to the wake-ups", func() bool { return subscribers() == 2 })
	doomed.kill(t)
	waitFor(t, ctx, "the killed worker's subscription gone", func() bool { return subscribers() == 1 })

	// Answered within the front end's sync budget, or handed out as a task.
	c := taskClient(url)
	a, err := c.CallTool(ctx, "slow_compute", map[string]any{"seconds": 0, "label": "woken"})
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	var result []byte
	if a.Task != nil {
		g := waitTask(t, ctx, c, a.Task.TaskID, "an end", func(g *proto.GetTaskResult) bool { return g.Status.Terminal() })
		if g.Status != proto.StatusCompleted {
			t.Fatalf("ended %s: %s", g.Status, g.StatusMessage)
		}
		result = g.Result
	} else if result, err = json.Marshal(a.Result); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(result), "woken") {
		t.Fatalf("result %s", result)
	}
}

// waitFor checks cond every 10 ms until it holds or ctx ends.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("no %s: %v", what, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

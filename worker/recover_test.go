package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
)

// TestRecoverStranded: a task whose job was never enqueued (the front end
// died between the two) or whose resumed job was lost is found and run.
func TestRecoverStranded(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		h := newHarness(t, b)
		runs := &counter{}
		cfg := h.config()
		cfg.RecoverAfter = 50 * time.Millisecond
		h.start(t, cfg, h.tool("echo", runs.wrap(func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
			return worker.TextResult("ran"), nil
		})), h.tool("ask", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			if _, err := c.Input(ctx, map[string]proto.InputRequest{"k": {Method: proto.MethodElicit}}); err != nil {
				return nil, err
			}
			return worker.TextResult("answered"), nil
		}))

		t.Run("never enqueued", func(t *testing.T) {
			tk := h.create(t, "echo", `{}`) // no job: as if the front end died here
			if rec := h.terminal(t, tk); rec.Status != proto.StatusCompleted || runs.n.Load() != 1 {
				t.Fatalf("ended %s after %d runs", rec.Status, runs.n.Load())
			}
		})
		t.Run("resumed but not enqueued", func(t *testing.T) {
			tk := h.submit(t, "ask", `{}`)
			h.wait(t, tk, "parked", func(r *taskstate.Record) bool { return r.Status == proto.StatusInputRequired })
			res, err := h.store.Answer(context.Background(), tk.ref, map[string]json.RawMessage{"k": json.RawMessage(`{"action":"accept"}`)})
			if err != nil || res.Resume != 1 {
				t.Fatalf("answer: %+v %v", res, err) // and no resume job: as if the front end died here
			}
			if rec := h.terminal(t, tk); rec.Status != proto.StatusCompleted {
				t.Fatalf("ended %s", rec.Status)
			}
		})
	})
}

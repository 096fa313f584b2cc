package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/billing"
	"github.com/mcpq/mcpq/worker"
)

// TestStoppedAtDeadline: a run is stopped at its task's deadline, not at
// the next reap pass (ReapInterval is an hour here): the handler's context
// ends within 0.5 s of the deadline (the bound), the task is ended
// expired by then, and what the handler metered after the deadline is not
// charged.
func TestStoppedAtDeadline(t *testing.T) {
	h := mini(t)
	var metered atomic.Int64 // units the store accepted
	ended := make(chan time.Time, 1)
	tl := h.tool("gpu", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
		for ctx.Err() == nil {
			if err := c.Meter(context.WithoutCancel(ctx), 1); err == nil {
				metered.Add(1)
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
		ended <- time.Now()
		for range 5 { // reports after the stop are refused
			if err := c.Meter(context.WithoutCancel(ctx), 1); err == nil {
				metered.Add(1)
			}
		}
		return nil, ctx.Err()
	})
	tl.Price = &proto.Price{Base: 10000}
	cfg := h.config()
	cfg.ReapInterval = time.Hour
	h.start(t, cfg, tl)
	ctx := context.Background()
	if _, err := h.store.Accounts().Credit(ctx, "alice", 20000); err != nil {
		t.Fatal(err)
	}
	ceiling, ttlMs := int64(10000), int64(800)
	rec, err := h.store.Create(ctx, taskstate.CreateParams{Principal: "alice", Tool: "gpu", Reserve: &ceiling, TTLMs: &ttlMs})
	if err != nil {
		t.Fatal(err)
	}
	h.enqueue(t, task{ref: rec.Ref}, "gpu", "")
	deadline := rec.Deadline()
	stopped := recv(t, ended, "the handler's end")
	if late := stopped.Sub(deadline); late > 500*time.Millisecond || late < 0 {
		t.Fatalf("handler stopped %v after the deadline, want within 0.5 s", late)
	}
	if _, err := h.store.Get(ctx, rec.Ref); !errors.Is(err, taskstate.ErrNotFound) && !errors.Is(err, taskstate.ErrExpired) {
		t.Fatalf("task after its run stopped: %v, want it ended expired", err)
	}
	if metered.Load() == 0 {
		t.Fatal("nothing metered before the deadline")
	}
	var a billing.Account
	for end := time.Now().Add(bound); ; time.Sleep(10 * time.Millisecond) { // the handler's late reports are done
		if a, err = h.store.Accounts().Get(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		if a.Reserved == 0 || time.Now().After(end) {
			break
		}
	}
	if a.Charged != metered.Load() || a.Reserved != 0 {
		t.Fatalf("account %+v: charged should be the %d units metered before the deadline", a, metered.Load())
	}
}

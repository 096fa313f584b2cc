package worker_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// TestRunOutlastsAStoreOutage: the task store refuses every command for
// 800 ms in the middle of a run (as a paused or restarting Redis does): the
// handler's progress write waits it out instead of ending the run, so the
// task completes from its first and only run (issue 25, item 1), where a
// retried job used to run it again from the start.
func TestRunOutlastsAStoreOutage(t *testing.T) {
	h := mini(t)
	var runs atomic.Int32
	tl := h.tool("steady", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
		runs.Add(1)
		for i := range 6 {
			if i == 3 && runs.Load() == 1 {
				h.b.Mini.SetError("LOADING Redis is loading the dataset in memory")
				time.AfterFunc(800*time.Millisecond, func() { h.b.Mini.SetError("") })
			}
			if err := c.Progress(ctx, fmt.Sprintf("step %d", i)); err != nil {
				return nil, err
			}
		}
		return worker.TextResult("done"), nil
	})
	h.start(t, h.config(), tl)
	tk := h.submit(t, "steady", `{}`)
	rec := h.terminal(t, tk)
	if rec.Status != proto.StatusCompleted || rec.Attempt != 1 || runs.Load() != 1 {
		t.Fatalf("ended %s by attempt %d after %d runs (%s); want completed by its one run", rec.Status, rec.Attempt, runs.Load(), rec.StatusMessage)
	}
}

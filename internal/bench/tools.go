package bench

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate/catalog"
	"github.com/mcpq/mcpq/worker"
)

// The tools the harness's worker serves.
const (
	// toolNoop is a task-policy tool that does nothing: the create path.
	toolNoop = "noop"
	// toolNoopSync is a sync-policy tool that does nothing: the sync path.
	toolNoopSync = "noop_sync"
	// toolSteps runs 10 ms steps that honour their context (cancel latency).
	toolSteps = "steps10"
	// toolStepsBlind runs 10 ms steps that ignore their context.
	toolStepsBlind = "steps10_blind"
)

// stepsMax bounds the step tools (10 s).
const stepsMax = 1000

// counter counts handled jobs and remembers when the first and the latest
// were handled.
type counter struct {
	n, first, last atomic.Int64
}

func (c *counter) hit() {
	now := time.Now().UnixNano()
	if c.n.Add(1) == 1 {
		c.first.Store(now)
	}
	c.last.Store(now)
}

// benchTools are the worker.Tools of the harness; noop calls count on c.
func benchTools(c *counter) []worker.Tool {
	noop := func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
		c.hit()
		return worker.TextResult("ok"), nil
	}
	steps := func(honour bool) worker.Handler {
		return func(ctx context.Context, call *worker.Call) (*proto.CallToolResult, error) {
			for range stepsMax {
				err := call.Step(ctx, func(ctx context.Context) error {
					if !honour {
						time.Sleep(10 * time.Millisecond)
						return nil
					}
					t := time.NewTimer(10 * time.Millisecond)
					defer t.Stop()
					select {
					case <-t.C:
						return nil
					case <-ctx.Done():
						return ctx.Err()
					}
				})
				if err != nil {
					return nil, err
				}
			}
			return worker.TextResult("done"), nil
		}
	}
	return []worker.Tool{
		{Name: toolNoop, Description: "does nothing (task policy)", Policy: worker.PolicyTask, Handler: noop},
		{Name: toolNoopSync, Description: "does nothing (sync policy)", Policy: worker.PolicySync, Handler: noop},
		{Name: toolSteps, Description: "10 ms steps that honour cancellation", Policy: worker.PolicyTask, Handler: steps(true)},
		{Name: toolStepsBlind, Description: "10 ms steps that ignore their context", Policy: worker.PolicyTask, Handler: steps(false)},
	}
}

// benchToolDefs are the catalog entries a worker serving benchTools
// publishes, for measurements that run a front end without a worker.
func benchToolDefs() []catalog.Entry {
	var defs []catalog.Entry
	for i, t := range benchTools(&counter{}) {
		defs = append(defs, catalog.Entry{
			Tool:   proto.Tool{Name: t.Name, Description: t.Description, InputSchema: json.RawMessage(`{"type":"object"}`)},
			Policy: t.Policy, Queue: worker.DefaultQueue, Order: i + 1,
		})
	}
	return defs
}

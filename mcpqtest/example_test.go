package mcpqtest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpq/mcpq/internal/exampletest"
	"github.com/mcpq/mcpq/mcpqtest"
	"github.com/mcpq/mcpq/worker"
)

// SumArgs are the arguments of the sum tool below.
type SumArgs struct {
	Numbers []float64 `json:"numbers" jsonschema:"the numbers to add" mcpq:"minItems=1"`
}

// Total is sum's structured result.
type Total struct {
	Sum float64 `json:"sum"`
}

func sumTool() worker.Tool {
	return worker.NewTool("sum", "Adds numbers.",
		func(ctx context.Context, c *worker.Call, in SumArgs) (Total, error) {
			var t Total
			for _, n := range in.Numbers {
				t.Sum += n
			}
			return t, nil
		})
}

// A test of a tool is three calls: New runs a worker serving it, Call
// creates a task as a front end does, and Result waits for its result.
func ExampleNew() {
	t := exampletest.New() // in a test: the test's t
	defer t.End()

	env := mcpqtest.New(t, sumTool())
	res := env.Call(t, "sum", SumArgs{Numbers: []float64{1, 2, 3.5}}).Result(t)
	fmt.Println(string(res.StructuredContent))
	// Output:
	// {"sum":6.5}
}

// Arguments the tool's inputSchema refuses make no task: the call is
// answered with a tool error naming the argument, as every front end answers
// it.
func ExampleEnv_Call_refused() {
	t := exampletest.New()
	defer t.End()

	env := mcpqtest.New(t, sumTool())
	run := env.Call(t, "sum", map[string]any{"numbers": []float64{}})
	res := run.Result(t)
	fmt.Printf("task %q, isError %v: %s\n", run.TaskID(), res.IsError, res.Content[0].Text)
	// Output:
	// task "", isError true: Invalid arguments for tool sum: argument "numbers": minItems: array length 0 is less than 1
}

// A cancel ends a running step's context at once, and the task ends
// cancelled.
func ExampleRun_Cancel() {
	wait := worker.NewTool("wait", "Waits a minute at a time, for an hour.",
		func(ctx context.Context, c *worker.Call, in struct{}) (string, error) {
			for i := range 60 {
				if err := c.Progress(ctx, fmt.Sprintf("minute %d of 60", i+1)); err != nil {
					return "", err
				}
				if err := c.Step(ctx, func(ctx context.Context) error { return worker.Sleep(ctx, time.Minute) }); err != nil {
					return "", err // worker.ErrCancelled: the task ends cancelled
				}
			}
			return "waited an hour", nil
		})
	t := exampletest.New()
	defer t.End()

	env := mcpqtest.New(t, wait)
	run := env.Call(t, "wait", nil)
	run.WaitMessage(t, "minute 1 of 60")
	run.Cancel(t)
	fmt.Println(run.End(t).Status)
	// Output:
	// cancelled
}

// Package conformance is the tool pack the official MCP conformance suite
// calls by name (scripts/conformance runs it): the Tasks fixtures, the core tool,
// prompt, resource and completion fixtures of the 2026-07-28 scenarios, and
// the input_required (MRTR) family. It is not registered by default:
// `mcpq dev --fixtures conformance` and `mcpq worker --fixtures conformance`
// turn it on (Register).
package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// Tools returns the Tasks fixtures that need no input (greet, slow_compute,
// failing_job, protocol_error_job); InputTools has the ones that do, and
// Register adds everything.
func Tools() []worker.Tool {
	return []worker.Tool{
		{
			Name:        "greet",
			Description: "Greets someone by name. Always answers synchronously.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
			Policy:      worker.PolicySync,
			Handler:     greet,
		},
		{
			Name:         "slow_compute",
			Description:  "Sleeps for `seconds` (0 finishes at once), reporting progress; cancellable.",
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"number","minimum":0,"maximum":3600},"label":{"type":"string"}},"required":["seconds"]}`),
			Policy:       worker.PolicyAuto,
			PollInterval: 500 * time.Millisecond,
			Handler:      slowCompute,
		},
		{
			Name:         "failing_job",
			Description:  "Always a task; after about a second it reports a tool error (isError).",
			InputSchema:  json.RawMessage(`{"type":"object"}`),
			Policy:       worker.PolicyTask,
			PollInterval: 500 * time.Millisecond,
			Handler:      failingJob,
		},
		{
			Name:         "protocol_error_job",
			Description:  "Ends with a JSON-RPC (protocol) error after about a second, so its task ends failed.",
			InputSchema:  json.RawMessage(`{"type":"object"}`),
			Policy:       worker.PolicyAuto,
			PollInterval: 500 * time.Millisecond,
			Handler:      protocolErrorJob,
		},
	}
}

func greet(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	var a struct {
		Name string `json:"name"`
	}
	if err := c.Bind(&a); err != nil {
		return nil, err
	}
	return worker.TextResult(fmt.Sprintf("Hello, %s!", a.Name)), nil
}

// tick is the length of one slow_compute step.
const tick = 100 * time.Millisecond

func slowCompute(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	var a struct {
		Seconds *float64 `json:"seconds"`
		Label   string   `json:"label"`
	}
	if err := c.Bind(&a); err != nil {
		return nil, err
	}
	if a.Seconds == nil || *a.Seconds < 0 || *a.Seconds > 3600 {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid arguments: seconds must be a number from 0 to 3600")
	}
	total := time.Duration(*a.Seconds * float64(time.Second))
	for done := time.Duration(0); done < total; done += tick {
		if done%time.Second == 0 && done > 0 {
			if err := c.Progress(ctx, progressMessage(a.Label, done, *a.Seconds)); err != nil {
				return nil, err
			}
		}
		err := c.Step(ctx, func(ctx context.Context) error { return worker.Sleep(ctx, min(tick, total-done)) })
		if err != nil {
			return nil, err
		}
	}
	return worker.TextResult(fmt.Sprintf("Computed %q in %gs", a.Label, *a.Seconds)), nil
}

// progressMessage is slow_compute's statusMessage after done of seconds:
// "1s of 3s", after "label: " when the call named one.
func progressMessage(label string, done time.Duration, seconds float64) string {
	msg := fmt.Sprintf("%ds of %gs", done/time.Second, seconds)
	if label == "" {
		return msg
	}
	return label + ": " + msg
}

func failingJob(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	if err := c.Step(ctx, func(ctx context.Context) error { return worker.Sleep(ctx, time.Second) }); err != nil {
		return nil, err
	}
	return worker.ErrorResult("failing_job failed as designed"), nil
}

func protocolErrorJob(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	if err := c.Step(ctx, func(ctx context.Context) error { return worker.Sleep(ctx, time.Second) }); err != nil {
		return nil, err
	}
	return nil, proto.NewError(proto.CodeInternalError, "Internal error: protocol_error_job failed as designed")
}

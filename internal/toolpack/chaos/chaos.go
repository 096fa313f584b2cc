// Package chaos is the tool pack scripts/chaos drives (mcpq worker
// --fixtures chaos): tools whose results are deterministic from their
// arguments, so the chaos driver can check every completed result, and
// whose every write names the delivery that made it, so the driver can see
// from Redis's own command log which attempt of a task wrote what.
//
//   - chaos_steps{steps, stepMs, seed}: runs steps one at a time, saving a
//     checkpoint after each (a re-delivered task resumes from it) and
//     reporting progress as Tag(attempt, step, steps, pid).
//   - chaos_instant{seed}: returns at once.
//   - chaos_fail{seed}: ends the task failed with a fixed error.
//
// All three are task tools (Policy task), so every call is a task.
package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// Limits of chaos_steps' arguments.
const (
	MaxSteps  = 1000
	MaxStepMs = 60000
)

// FailCode and FailMessage are chaos_fail's error.
const (
	FailCode    = -32000
	FailMessage = "chaos_fail failed on purpose"
)

// Tools returns the pack.
func Tools() []worker.Tool {
	return []worker.Tool{{
		Name:        "chaos_steps",
		Description: "Runs `steps` steps of `stepMs` each, checkpointing after every step; the result is a checksum of the steps and `seed`.",
		InputSchema: []byte(`{"type":"object","properties":{"steps":{"type":"integer","minimum":0,"maximum":1000},` +
			`"stepMs":{"type":"integer","minimum":0,"maximum":60000},"seed":{"type":"integer"}},"required":["steps"]}`),
		Policy:       worker.PolicyTask,
		PollInterval: 500 * time.Millisecond,
		Handler:      steps,
	}, {
		Name:         "chaos_instant",
		Description:  "Returns at once; the result names `seed`.",
		InputSchema:  []byte(`{"type":"object","properties":{"seed":{"type":"integer"}}}`),
		Policy:       worker.PolicyTask,
		PollInterval: 200 * time.Millisecond,
		Handler: func(_ context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			var a struct{ Seed int64 }
			if err := c.Bind(&a); err != nil {
				return nil, err
			}
			return worker.TextResult(InstantResult(a.Seed)), nil
		},
	}, {
		Name:         "chaos_fail",
		Description:  "Ends the task failed with a fixed error.",
		InputSchema:  []byte(`{"type":"object","properties":{"seed":{"type":"integer"}}}`),
		Policy:       worker.PolicyTask,
		PollInterval: 200 * time.Millisecond,
		Handler: func(_ context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			var a struct{ Seed int64 }
			if err := c.Bind(&a); err != nil {
				return nil, err
			}
			return nil, proto.NewError(FailCode, "%s", FailMessage)
		},
	}}
}

// stepsArgs are chaos_steps' arguments.
type stepsArgs struct {
	Steps  *int  `json:"steps"`
	StepMs int   `json:"stepMs"`
	Seed   int64 `json:"seed"`
}

// checkpoint is chaos_steps' checkpoint: steps done and the checksum so
// far. A is the attempt that saved it, so a checkpoint write in Redis's
// command log names its writer like a progress write does.
type checkpoint struct {
	A    int64 `json:"a"`
	Done int   `json:"done"`
	Sum  int64 `json:"sum"`
}

func steps(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	var a stepsArgs
	if err := c.Bind(&a); err != nil {
		return nil, err
	}
	switch {
	case a.Steps == nil:
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid arguments: steps is required")
	case *a.Steps < 0 || *a.Steps > MaxSteps:
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid arguments: steps must be from 0 to %d", MaxSteps)
	case a.StepMs < 0 || a.StepMs > MaxStepMs:
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid arguments: stepMs must be from 0 to %d", MaxStepMs)
	}
	n, pid := *a.Steps, os.Getpid()
	var cp checkpoint
	if _, err := c.LoadCheckpoint(&cp); err != nil {
		return nil, fmt.Errorf("chaos_steps: undecodable checkpoint: %w", err)
	}
	if cp.Done < 0 || cp.Done > n {
		return nil, fmt.Errorf("chaos_steps: checkpoint says %d of %d steps done", cp.Done, n)
	}
	// The first write of every attempt names it, before any step runs.
	if err := c.Progress(ctx, Tag(c.Attempt, cp.Done, n, pid)); err != nil {
		return nil, err
	}
	for i := cp.Done; i < n; i++ {
		err := c.Step(ctx, func(ctx context.Context) error {
			return worker.Sleep(ctx, time.Duration(a.StepMs)*time.Millisecond)
		})
		if err != nil {
			return nil, err
		}
		cp = checkpoint{A: c.Attempt, Done: i + 1, Sum: next(cp.Sum, a.Seed, i)}
		if err := c.SaveCheckpoint(ctx, cp); err != nil {
			return nil, err
		}
		if err := c.Progress(ctx, Tag(c.Attempt, i+1, n, pid)); err != nil {
			return nil, err
		}
	}
	return worker.TextResult(StepsResult(n, a.Seed)), nil
}

// next folds step i into the checksum.
func next(sum, seed int64, i int) int64 { return (sum*31 + seed + int64(i) + 1) % 1_000_000_007 }

// StepsResult is chaos_steps' result text for its arguments.
func StepsResult(steps int, seed int64) string {
	var sum int64
	for i := range steps {
		sum = next(sum, seed, i)
	}
	return fmt.Sprintf("chaos_steps done: %d steps, seed %d, checksum %d", steps, seed, sum)
}

// InstantResult is chaos_instant's result text for its seed.
func InstantResult(seed int64) string { return fmt.Sprintf("chaos_instant done: seed %d", seed) }

// Tag is chaos_steps' statusMessage: the attempt writing it, steps done of
// all, and the worker's process id.
func Tag(attempt int64, done, steps, pid int) string {
	return fmt.Sprintf("chaos a=%d s=%d/%d pid=%d", attempt, done, steps, pid)
}

var tagRE = regexp.MustCompile(`^chaos a=(\d+) s=(\d+)/(\d+) pid=(\d+)$`)

// ParseTag reads a Tag back; ok is false for any other text.
func ParseTag(s string) (attempt int64, pid int, ok bool) {
	m := tagRE.FindStringSubmatch(s)
	if m == nil {
		return 0, 0, false
	}
	attempt, err1 := strconv.ParseInt(m[1], 10, 64)
	pid, err2 := strconv.Atoi(m[4])
	return attempt, pid, err1 == nil && err2 == nil
}

// CheckpointAttempt reads the attempt out of a chaos_steps checkpoint
// (JSON as saved); ok is false for anything else.
func CheckpointAttempt(s string) (int64, bool) {
	var cp struct {
		A    *int64 `json:"a"`
		Done *int   `json:"done"`
	}
	if err := json.Unmarshal([]byte(s), &cp); err != nil || cp.A == nil || cp.Done == nil {
		return 0, false
	}
	return *cp.A, true
}

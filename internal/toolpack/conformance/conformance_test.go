package conformance_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/internal/toolpack/conformance"
	"github.com/mcpq/mcpq/internal/workertest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// env is a real worker serving the pack's Tasks fixtures on miniredis.
type env struct {
	*workertest.Env
	queues map[string]string
}

func start(t *testing.T) *env {
	t.Helper()
	tools := conformance.Tools()
	e := &env{queues: map[string]string{}}
	for _, tl := range tools {
		e.queues[tl.Name] = tl.Queue
	}
	e.Env = workertest.Start(t, redistest.Mini(t), func(_ context.Context, cfg worker.Config) (*worker.Worker, error) {
		return worker.New(cfg, tools...)
	})
	return e
}

type task = *workertest.Task

// call submits a task for tool as the front end does.
func (e *env) call(t *testing.T, tool, args string) task {
	t.Helper()
	return e.Submit(t, taskstate.CreateParams{Principal: "conformance", Tool: tool, Arguments: json.RawMessage(args)},
		e.queues[tool])
}

// wait reads the record now and after every event until ok accepts it.
func (e *env) wait(t *testing.T, tk task, what string, ok func(*taskstate.Record) bool) *taskstate.Record {
	t.Helper()
	return e.Wait(t, tk, what, ok, nil)
}

func (e *env) terminal(t *testing.T, tk task) *taskstate.Record {
	t.Helper()
	return e.Terminal(t, tk)
}

// TestTools: the pack's definitions are what the suite's scenarios rely on.
func TestTools(t *testing.T) {
	t.Parallel()
	want := map[string]struct {
		policy worker.Policy
		pollMs int64
	}{
		"greet":              {worker.PolicySync, 0},
		"slow_compute":       {worker.PolicyAuto, 500},
		"failing_job":        {worker.PolicyTask, 500},
		"protocol_error_job": {worker.PolicyAuto, 500},
	}
	e := start(t)
	// A finished job shows the catalog was published.
	if rec := e.terminal(t, e.call(t, "greet", `{"name":"x"}`)); rec.Status != proto.StatusCompleted {
		t.Fatalf("greet ended %s", rec.Status)
	}
	defs, err := e.Store.Catalog().Entries(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) != len(want) {
		t.Fatalf("catalog has %d tools, want %d", len(defs), len(want))
	}
	for _, d := range defs {
		w, ok := want[d.Tool.Name]
		if !ok {
			t.Errorf("unexpected tool %q", d.Tool.Name)
			continue
		}
		if d.Policy != w.policy || d.PollIntervalMs != w.pollMs || d.Queue != worker.DefaultQueue {
			t.Errorf("%s: policy %q poll %d queue %q, want %q %d %q", d.Tool.Name, d.Policy, d.PollIntervalMs,
				d.Queue, w.policy, w.pollMs, worker.DefaultQueue)
		}
		var schema map[string]any
		if err := json.Unmarshal(d.Tool.InputSchema, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: input schema %s is not an object schema (%v)", d.Tool.Name, d.Tool.InputSchema, err)
		}
		if d.Tool.Description == "" {
			t.Errorf("%s: no description", d.Tool.Name)
		}
	}
}

// TestCalls runs each tool through a real worker.
func TestCalls(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, tool, args string
		status           proto.TaskStatus
		text             string // completed: the single text block
		isError          bool
		code             int    // failed: error code
		errMsg           string // failed: error message prefix
	}{
		{name: "greet", tool: "greet", args: `{"name":"Ada"}`, status: proto.StatusCompleted, text: "Hello, Ada!"},
		{name: "greet unicode", tool: "greet", args: `{"name":"世界"}`, status: proto.StatusCompleted, text: "Hello, 世界!"},
		{name: "greet bad name", tool: "greet", args: `{"name":5}`, status: proto.StatusFailed,
			code: proto.CodeInvalidParams, errMsg: "Invalid arguments"},
		{name: "slow_compute 0 s", tool: "slow_compute", args: `{"seconds":0}`, status: proto.StatusCompleted,
			text: `Computed "" in 0s`},
		{name: "slow_compute 0 s labelled", tool: "slow_compute", args: `{"seconds":0,"label":"now"}`,
			status: proto.StatusCompleted, text: `Computed "now" in 0s`},
		{name: "slow_compute fraction", tool: "slow_compute", args: `{"seconds":0.25,"label":"quarter"}`,
			status: proto.StatusCompleted, text: `Computed "quarter" in 0.25s`},
		{name: "slow_compute negative", tool: "slow_compute", args: `{"seconds":-1}`, status: proto.StatusFailed,
			code: proto.CodeInvalidParams, errMsg: "Invalid arguments: seconds must be a number from 0 to 3600"},
		{name: "slow_compute too long", tool: "slow_compute", args: `{"seconds":3601}`, status: proto.StatusFailed,
			code: proto.CodeInvalidParams, errMsg: "Invalid arguments: seconds must be a number from 0 to 3600"},
		{name: "slow_compute missing seconds", tool: "slow_compute", args: `{}`, status: proto.StatusFailed,
			code: proto.CodeInvalidParams, errMsg: "Invalid arguments: seconds must be a number from 0 to 3600"},
		{name: "slow_compute seconds not a number", tool: "slow_compute", args: `{"seconds":"soon"}`,
			status: proto.StatusFailed, code: proto.CodeInvalidParams, errMsg: "Invalid arguments"},
		{name: "failing_job", tool: "failing_job", args: `{}`, status: proto.StatusCompleted,
			text: "failing_job failed as designed", isError: true},
		{name: "protocol_error_job", tool: "protocol_error_job", args: `{}`, status: proto.StatusFailed,
			code: proto.CodeInternalError, errMsg: "Internal error: protocol_error_job failed as designed"},
	}
	e := start(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := e.terminal(t, e.call(t, tc.tool, tc.args))
			if rec.Status != tc.status {
				t.Fatalf("status %s (error %+v, result %s), want %s", rec.Status, rec.Error, rec.Result, tc.status)
			}
			switch tc.status {
			case proto.StatusCompleted:
				var res proto.CallToolResult
				if err := json.Unmarshal(rec.Result, &res); err != nil {
					t.Fatalf("result %s: %v", rec.Result, err)
				}
				want := []proto.Content{proto.TextContent(tc.text)}
				if res.ResultType != proto.ResultComplete || res.IsError != tc.isError || !reflect.DeepEqual(res.Content, want) {
					t.Errorf("result %s, want text %q isError %v", rec.Result, tc.text, tc.isError)
				}
			case proto.StatusFailed:
				if rec.Error == nil || rec.Error.Code != tc.code || !strings.HasPrefix(rec.Error.Message, tc.errMsg) {
					t.Errorf("error %+v, want %d %q…", rec.Error, tc.code, tc.errMsg)
				}
			}
		})
	}
}

// TestSlowComputeProgressAndCancel: a long slow_compute reports progress in
// statusMessage and stops promptly when cancelled.
func TestSlowComputeProgressAndCancel(t *testing.T) {
	t.Parallel()
	e := start(t)
	tk := e.call(t, "slow_compute", `{"seconds":60,"label":"job"}`)
	rec := e.wait(t, tk, "progress", func(r *taskstate.Record) bool {
		return strings.HasPrefix(r.StatusMessage, "job: ") && strings.HasSuffix(r.StatusMessage, "s of 60s")
	})
	if rec.Status != proto.StatusWorking {
		t.Fatalf("status with progress %q = %s", rec.StatusMessage, rec.Status)
	}
	if err := e.Store.RequestCancel(context.Background(), tk.Ref); err != nil {
		t.Fatalf("RequestCancel: %v", err)
	}
	rec = e.terminal(t, tk)
	if rec.Status != proto.StatusCancelled || len(rec.Result) != 0 {
		t.Fatalf("got %s %q %s, want cancelled", rec.Status, rec.StatusMessage, rec.Result)
	}
}

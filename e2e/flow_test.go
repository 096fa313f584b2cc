package e2e

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

// TestSlice runs the end-to-end acceptance flow against mcpq dev and against
// separate front-end and worker processes on a real redis-server (and on a
// Redis Cluster when MCPQ_TEST_REDIS_CLUSTER_URL is set), with consecutive
// requests alternating between two front ends.
func TestSlice(t *testing.T) {
	t.Run("dev", func(t *testing.T) {
		t.Parallel()
		runFlow(t, []string{startDev(t)})
	})
	t.Run("processes", func(t *testing.T) {
		t.Parallel()
		runFlow(t, startCluster(t, redistest.Real(t), 2, 2))
	})
	t.Run("processes on a Redis Cluster", func(t *testing.T) {
		t.Parallel()
		runFlow(t, startCluster(t, redistest.Cluster(t), 2, 2))
	})
}

// clients alternates requests between front ends.
type clients struct {
	tasks, plain []*client.Client
	n            int
}

func newClients(urls []string) *clients {
	c := &clients{}
	for _, u := range urls {
		c.tasks = append(c.tasks, &client.Client{URL: u, Tasks: true})
		c.plain = append(c.plain, &client.Client{URL: u})
	}
	return c
}

func (c *clients) next(withTasks bool) *client.Client {
	c.n++
	if withTasks {
		return c.tasks[c.n%len(c.tasks)]
	}
	return c.plain[c.n%len(c.plain)]
}

func runFlow(t *testing.T, urls []string) {
	cs := newClients(urls)
	ctx := within(t)
	wait := func(t *testing.T, id string) *proto.GetTaskResult {
		t.Helper()
		for {
			g, err := cs.next(true).GetTask(ctx, id)
			if err != nil {
				t.Fatalf("tasks/get %s: %v", id, err)
			}
			if g.Status.Terminal() {
				return g
			}
			select {
			case <-ctx.Done():
				t.Fatalf("task %s not terminal: %v", id, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	createTask := func(t *testing.T, tool string, args any) *proto.CreateTaskResult {
		t.Helper()
		a, err := cs.next(true).CallTool(ctx, tool, args)
		if err != nil {
			t.Fatalf("tools/call %s: %v", tool, err)
		}
		if a.Task == nil {
			t.Fatalf("tools/call %s answered %+v, want a task", tool, a.Result)
		}
		if a.Task.ResultType != proto.ResultTask || a.Task.TaskID == "" || a.Task.Status != proto.StatusWorking || a.Task.TTLMs == nil {
			t.Fatalf("CreateTaskResult %+v", a.Task)
		}
		return a.Task
	}

	t.Run("discover advertises tasks", func(t *testing.T) {
		d, err := cs.next(false).Discover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := d.Capabilities.Extensions[proto.TasksExtension]; !ok {
			t.Fatalf("capabilities %+v lack %s", d.Capabilities, proto.TasksExtension)
		}
	})
	t.Run("greet answers synchronously without the extension", func(t *testing.T) {
		a, err := cs.next(false).CallTool(ctx, "greet", map[string]any{"name": "World"})
		if err != nil {
			t.Fatal(err)
		}
		if a.Result == nil || len(a.Result.Content) != 1 || a.Result.Content[0].Text != "Hello, World!" {
			t.Fatalf("answer %+v", a)
		}
	})
	t.Run("slow_compute becomes a task that completes", func(t *testing.T) {
		task := createTask(t, "slow_compute", map[string]any{"seconds": 3, "label": "e2e"})
		g, err := cs.next(true).GetTask(ctx, task.TaskID) // right after create, on another front end
		if err != nil {
			t.Fatalf("tasks/get right after create: %v", err)
		}
		if g.TaskID != task.TaskID || g.Status.Terminal() {
			t.Fatalf("tasks/get right after create: %+v", g)
		}
		g = wait(t, task.TaskID)
		if g.Status != proto.StatusCompleted || !strings.Contains(string(g.Result), `Computed \"e2e\" in 3s`) {
			t.Fatalf("final %s %s", g.Status, g.Result)
		}
	})
	t.Run("cancel stops a running task and is idempotent", func(t *testing.T) {
		task := createTask(t, "slow_compute", map[string]any{"seconds": 60, "label": "cancel-me"})
		for { // cancel once a worker runs it, so the step path is exercised
			g, err := cs.next(true).GetTask(ctx, task.TaskID)
			if err != nil {
				t.Fatal(err)
			}
			if g.StatusMessage != "Queued" {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		for range 2 {
			ack, err := cs.next(true).CancelTask(ctx, task.TaskID)
			if err != nil {
				t.Fatal(err)
			}
			if ack.ResultType != proto.ResultComplete {
				t.Fatalf("cancel ack %+v", ack)
			}
		}
		g := wait(t, task.TaskID)
		if g.Status != proto.StatusCancelled {
			t.Fatalf("status %s, want cancelled", g.Status)
		}
		ack, err := cs.next(true).CancelTask(ctx, task.TaskID)
		if err != nil || ack.ResultType != proto.ResultComplete {
			t.Fatalf("cancel of a cancelled task: %+v %v", ack, err)
		}
	})
	t.Run("failing_job completes with isError", func(t *testing.T) {
		g := wait(t, createTask(t, "failing_job", nil).TaskID)
		if g.Status != proto.StatusCompleted || !strings.Contains(string(g.Result), `"isError":true`) {
			t.Fatalf("final %s %s", g.Status, g.Result)
		}
	})
	t.Run("protocol_error_job fails with a JSON-RPC error", func(t *testing.T) {
		g := wait(t, createTask(t, "protocol_error_job", nil).TaskID)
		if g.Status != proto.StatusFailed || g.Error == nil || g.Error.Code != proto.CodeInternalError || g.Result != nil {
			t.Fatalf("final %+v", g)
		}
	})
	t.Run("task-only tool without the extension gets -32021", func(t *testing.T) {
		_, err := cs.next(false).CallTool(ctx, "failing_job", nil)
		var rpc *client.RPCError
		if !errors.As(err, &rpc) || rpc.RPC.Code != proto.CodeMissingRequiredClientCapability || rpc.HTTPStatus != http.StatusBadRequest {
			t.Fatalf("err %v", err)
		}
		if !strings.Contains(toJSON(t, rpc.RPC.Data), `"extensions":{"io.modelcontextprotocol/tasks":{}}`) {
			t.Fatalf("data %s", toJSON(t, rpc.RPC.Data))
		}
	})
	t.Run("render_gif returns a GIF", func(t *testing.T) {
		g := wait(t, createTask(t, "render_gif", map[string]any{"frames": 3, "size": 16, "frameMs": 200}).TaskID)
		var r proto.CallToolResult
		fromJSON(t, g.Result, &r)
		if g.Status != proto.StatusCompleted || len(r.Content) == 0 || r.Content[0].MimeType != "image/gif" {
			t.Fatalf("final %s %s", g.Status, g.Result)
		}
		gif, err := base64.StdEncoding.DecodeString(r.Content[0].Data)
		if err != nil || !strings.HasPrefix(string(gif), "GIF89a") {
			t.Fatalf("image data is not a GIF: %v", err)
		}
	})
	t.Run("unknown task id is -32602", func(t *testing.T) {
		_, err := cs.next(true).GetTask(ctx, "AAAAAAAAAAAAAAAAAAAAAA")
		var rpc *client.RPCError
		if !errors.As(err, &rpc) || rpc.RPC.Code != proto.CodeInvalidParams {
			t.Fatalf("err %v", err)
		}
	})
}

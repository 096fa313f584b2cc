package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

var (
	exampleOnce sync.Once
	exampleBin  string
	exampleErr  error
)

// buildExample builds examples/worker once per test binary.
func buildExample(t *testing.T) string {
	t.Helper()
	exampleOnce.Do(func() {
		exampleBin = filepath.Join(filepath.Dir(mcpqBin), "example-worker")
		out, err := exec.Command("go", "build", "-o", exampleBin, "github.com/mcpq/mcpq/examples/worker").CombinedOutput()
		if err != nil {
			exampleErr = fmt.Errorf("build examples/worker: %v\n%s", err, out)
		}
	})
	if exampleErr != nil {
		t.Fatal(exampleErr)
	}
	return exampleBin
}

// TestExampleWorker: the example's own worker binary serves its tools next
// to `mcpq frontend` on a real redis-server. tools/list shows the schemas
// inferred from its Go types; invalid arguments are refused before any
// task exists; a deploy is created, asks for approval through the task
// (tasks/update answers it), and completes with structured content; another
// is cancelled mid-rollout.
func TestExampleWorker(t *testing.T) {
	t.Parallel()
	bin := buildExample(t)
	b := redistest.Real(t)
	env := []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix}
	startBin(t, bin, "example worker", env, nil, "-stage", "300ms")
	url := startFrontend(t, env, "--sync-budget", "50ms")
	waitCatalog(t, url, "deploy")
	ctx := within(t)
	c := taskClient(url)

	t.Run("tools/list shows the inferred schemas", func(t *testing.T) {
		var r proto.ListToolsResult
		if err := c.Call(ctx, proto.MethodToolsList, "", nil, &r); err != nil {
			t.Fatal(err)
		}
		var deploy *proto.Tool
		for i := range r.Tools {
			if r.Tools[i].Name == "deploy" {
				deploy = &r.Tools[i]
			}
		}
		if deploy == nil {
			t.Fatalf("no deploy in %+v", r.Tools)
		}
		var in struct {
			Required   []string `json:"required"`
			Properties map[string]struct {
				Description string   `json:"description"`
				Maximum     *float64 `json:"maximum"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(deploy.InputSchema, &in); err != nil {
			t.Fatal(err)
		}
		if strings.Join(in.Required, ",") != "service,version" || in.Properties["stages"].Maximum == nil ||
			*in.Properties["stages"].Maximum != 10 || in.Properties["service"].Description != "the service to deploy" {
			t.Errorf("deploy inputSchema %s", deploy.InputSchema)
		}
		if !strings.Contains(string(deploy.OutputSchema), `"stages"`) {
			t.Errorf("deploy outputSchema %s", deploy.OutputSchema)
		}
	})

	t.Run("invalid arguments make no task", func(t *testing.T) {
		before := taskKeys(t, ctx, b)
		a, err := c.CallTool(ctx, "deploy", map[string]any{"service": "billing", "version": "1", "stages": 11})
		if err != nil {
			t.Fatal(err)
		}
		if a.Result == nil || !a.Result.IsError || !strings.Contains(a.Result.Content[0].Text, `argument "stages"`) {
			t.Fatalf("answer %+v, want the invalid-arguments tool error", a)
		}
		if after := taskKeys(t, ctx, b); after != before {
			t.Errorf("task records %d before, %d after", before, after)
		}
	})

	t.Run("create, input, completion", func(t *testing.T) {
		task := createTask(t, ctx, c, "deploy", map[string]any{"service": "billing", "version": "1.4.2", "stages": 2})
		g := waitTask(t, ctx, c, task.TaskID, "approval request", func(g *proto.GetTaskResult) bool {
			return g.Status == proto.StatusInputRequired
		})
		if !strings.Contains(string(g.InputRequests["approve"]), `"elicitation/create"`) {
			t.Fatalf("input requests %v", g.InputRequests)
		}
		if _, err := c.UpdateTask(ctx, task.TaskID, map[string]any{"approve": map[string]any{
			"action": "accept", "content": map[string]any{"approve": true, "note": "e2e"}}}); err != nil {
			t.Fatal(err)
		}
		waitTask(t, ctx, c, task.TaskID, "rollout", func(g *proto.GetTaskResult) bool {
			return strings.HasPrefix(g.StatusMessage, "Rolling out") || g.Status == proto.StatusCompleted
		})
		done, err := c.Wait(ctx, task.TaskID, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		var res proto.CallToolResult
		if err := json.Unmarshal(done.Result, &res); err != nil || done.Status != proto.StatusCompleted {
			t.Fatalf("task ended %s with %s: %v", done.Status, done.Result, err)
		}
		if string(res.StructuredContent) != `{"service":"billing","version":"1.4.2","stages":2,"note":"e2e"}` {
			t.Errorf("structuredContent %s", res.StructuredContent)
		}
	})

	t.Run("cancel mid-rollout", func(t *testing.T) {
		task := createTask(t, ctx, c, "deploy", map[string]any{"service": "search", "version": "9", "stages": 10})
		waitTask(t, ctx, c, task.TaskID, "approval request", func(g *proto.GetTaskResult) bool {
			return g.Status == proto.StatusInputRequired
		})
		if _, err := c.UpdateTask(ctx, task.TaskID, map[string]any{"approve": map[string]any{
			"action": "accept", "content": map[string]any{"approve": true}}}); err != nil {
			t.Fatal(err)
		}
		waitTask(t, ctx, c, task.TaskID, "rollout", func(g *proto.GetTaskResult) bool {
			return strings.HasPrefix(g.StatusMessage, "Rolling out")
		})
		if _, err := c.CancelTask(ctx, task.TaskID); err != nil {
			t.Fatal(err)
		}
		done, err := c.Wait(ctx, task.TaskID, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if done.Status != proto.StatusCancelled {
			t.Errorf("task ended %s (%s), want cancelled", done.Status, done.StatusMessage)
		}
	})
}

// taskKeys counts the task records under b's prefix.
func taskKeys(t *testing.T, ctx context.Context, b *redistest.Backend) int {
	t.Helper()
	keys, err := b.Client.Keys(ctx, b.Prefix+"*:task:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}

package frontend_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate/billing"
	"github.com/mcpq/mcpq/taskstate/catalog"
	"github.com/mcpq/mcpq/taskstate/timeline"
)

// consoleTask is what the console reads of a task in GET /v1/tasks and
// GET /v1/tasks/{id}.
type consoleTask struct {
	TaskID    string        `json:"taskId"`
	Status    string        `json:"status"`
	Tool      string        `json:"tool"`
	QueuedMs  *int64        `json:"queuedMs"`
	ElapsedMs *int64        `json:"elapsedMs"`
	Cost      *billing.Cost `json:"cost"`
	Progress  *struct {
		Done, Total float64
	} `json:"progress"`
	Attempts         []timeline.Attempt `json:"attempts"`
	Timeline         []json.RawMessage  `json:"timeline"`
	ArgumentsPreview string             `json:"argumentsPreview"`
}

// TestConsoleAPI: the console's task data: tool, cost from reservation to
// settlement, queued and elapsed time, progress read from the status
// message, the attempts and timeline on the task's page; filters by tool
// and creation time and a search by id that finds only the caller's task.
func TestConsoleAPI(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, func(c *frontend.Config) { c.Billing = true })
		e.publish(pricedTool())
		ctx := context.Background()
		if _, err := e.store.Accounts().Credit(ctx, frontend.AnonymousPrincipal, 100); err != nil {
			t.Fatal(err)
		}
		id := str(e.callTool(metaTasks, toolPriced, map[string]any{"frames": 4}).JSON, "result.taskId")
		j := e.enq.nextJob(t)
		e.clock.Advance(2 * time.Second)
		if err := e.store.Progress(ctx, j.Ref, j.Attempt, "frame 1 of 4"); err != nil {
			t.Fatal(err)
		}
		var list struct {
			Tasks []consoleTask `json:"tasks"`
		}
		if e.restGet("/v1/tasks", &list); len(list.Tasks) != 1 {
			t.Fatalf("listing: %+v", list)
		}
		got := list.Tasks[0]
		if got.Tool != toolPriced || got.Cost == nil || got.Cost.Reserved != 30 || got.Progress == nil ||
			got.Progress.Done != 1 || got.Progress.Total != 4 || got.QueuedMs == nil || got.ElapsedMs == nil || *got.ElapsedMs != 2000 {
			t.Fatalf("running task lists as %+v", got)
		}
		if _, _, err := e.store.Meter(ctx, ref(id), 1, 12); err != nil {
			t.Fatal(err)
		}
		e.finish(id, outcomeFor(toolGreet, json.RawMessage(`{"name":"Ada"}`)))
		var page consoleTask
		if code := e.restGet("/v1/tasks/"+id, &page); code != 200 {
			t.Fatalf("task page: HTTP %d", code)
		}
		if page.Cost == nil || *page.Cost != (billing.Cost{Reserved: 30, Charged: 12, Released: 18}) ||
			len(page.Attempts) != 1 || page.Attempts[0].Ended != "completed" || len(page.Timeline) != 2 {
			t.Fatalf("task page: %+v", page)
		}
		for q, n := range map[string]int{
			"/v1/tasks?tool=" + toolPriced: 1, "/v1/tasks?tool=other": 0, "/v1/tasks?id=" + id: 1,
			"/v1/tasks?id=nope": 0, "/v1/tasks?since=" + e.clock.Now().Add(time.Minute).Format(time.RFC3339): 0,
			"/v1/tasks?until=" + e.clock.Now().Add(time.Minute).Format(time.RFC3339): 1,
		} {
			list.Tasks = nil
			if code := e.restGet(q, &list); code != 200 || len(list.Tasks) != n {
				t.Errorf("GET %s: HTTP %d, %d tasks, want %d", q, code, len(list.Tasks), n)
			}
		}
		if code := e.restGet("/v1/tasks?since=yesterday", &list); code != http.StatusBadRequest {
			t.Errorf("bad since: HTTP %d, want 400", code)
		}
	})
}

// TestOperatorAPI: the operator view's data is for admin principals
// alone: anyone else gets 403 and no data; an admin sees the live
// workers and which catalog entries they cover.
func TestOperatorAPI(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		plain := newEnv(t, b, nil)
		for _, p := range []string{"/v1/ops/queues", "/v1/ops/workers", "/v1/ops/catalog"} {
			var v any
			if code := plain.restGet(p, &v); code != http.StatusForbidden || v != nil {
				t.Errorf("GET %s as a non-admin: HTTP %d, %v", p, code, v)
			}
		}
		e := newEnv(t, b, func(c *frontend.Config) { c.Admins = []string{frontend.AnonymousPrincipal} })
		now := e.clock.Now()
		if err := e.store.Catalog().Heartbeat(context.Background(), catalog.WorkerInfo{Name: "w1", Queues: []string{"mcpq"},
			Slots: 2, Tools: []string{toolGreet}, Heartbeat: now, Until: now.Add(15 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		var ws struct {
			Workers []catalog.WorkerInfo `json:"workers"`
		}
		if code := e.restGet("/v1/ops/workers", &ws); code != 200 || len(ws.Workers) != 1 || ws.Workers[0].Name != "w1" {
			t.Fatalf("workers: HTTP %d %+v", code, ws)
		}
		var cat struct {
			Catalog []struct {
				Key     string   `json:"key"`
				Workers []string `json:"workers"`
			} `json:"catalog"`
		}
		if code := e.restGet("/v1/ops/catalog", &cat); code != 200 || len(cat.Catalog) < 2 {
			t.Fatalf("catalog: HTTP %d %+v", code, cat)
		}
		if len(cat.Catalog[0].Workers) != 0 {
			t.Errorf("uncovered entries come first: %+v", cat.Catalog)
		}
		for _, c := range cat.Catalog {
			if (c.Key == toolGreet) != (len(c.Workers) == 1) {
				t.Errorf("%s served by %v", c.Key, c.Workers)
			}
		}
	})
}

package e2e

// The console's acceptance (issue 30): headless Chromium against two front
// ends, two workers and a real Redis with a mixed workload. Each task shows
// its tool, status, progress and cost; the task taken over after a worker's
// SIGKILL shows two attempts and why the first ended; the operator view
// shows both workers, then one, and its queue depth and charts move; a
// non-admin principal gets 403 from the operator API and no view.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/series"
	"github.com/mcpq/mcpq/taskstate/timeline"
)

// Principals of the console test: ops is an admin, alice is not.
const (
	opsKey   = "ops-key-0123456789"
	aliceKey = "alice-key-0123456789"
)

// apiGet GETs path from base's REST API with key and decodes a 200 body
// into out; it returns the HTTP status.
func apiGet(t *testing.T, base, key, path string, out any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	return resp.StatusCode
}

// until polls cond every 100 ms until it holds or ctx ends (a failure).
func until(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("no %s: %v", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// consoleCluster is the console test's deployment.
type consoleCluster struct {
	bases []string // front ends' base URLs
	env   []string
	tools string // the tools file (gpu_burn, priced)
}

func (k *consoleCluster) worker(t *testing.T, name string) *proc {
	return start(t, "worker "+name, k.env, nil, "worker", "--fixtures", "conformance", "--tools", k.tools,
		"--worker-name", name, "--concurrency", "3")
}

// workers is the live workers' names as an admin's API shows them.
func (k *consoleCluster) workers(t *testing.T) []string {
	var ws struct {
		Workers []struct{ Name string } `json:"workers"`
	}
	apiGet(t, k.bases[0], opsKey, "/v1/ops/workers", &ws)
	var names []string
	for _, w := range ws.Workers {
		names = append(names, w.Name)
	}
	return names
}

func startConsoleCluster(t *testing.T) *consoleCluster {
	b := redistest.Real(t)
	k := &consoleCluster{tools: filepath.Join(t.TempDir(), "tools.yaml"),
		env: []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix, "MCPQ_LOST_AFTER=2s", "MCPQ_CATALOG_INTERVAL=1s",
			"MCPQ_API_KEYS=ops:" + opsKey + ",alice:" + aliceKey, "MCPQ_ADMIN_PRINCIPALS=ops", "MCPQ_BILLING=true"}}
	if err := os.WriteFile(k.tools, []byte(billedTools), 0o600); err != nil {
		t.Fatal(err)
	}
	store := taskstate.New(b.Client, taskstate.Options{Prefix: b.Prefix})
	if _, err := store.Accounts().Credit(context.Background(), "ops", 1000); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		port, err := redistest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		start(t, fmt.Sprintf("frontend %d", i), k.env, nil, "frontend", "--addr", addr)
		waitHealthy(t, "http://"+addr)
		k.bases = append(k.bases, "http://"+addr)
	}
	return k
}

func TestConsoleAcceptance(t *testing.T) {
	t.Parallel()
	browser := chromium(t)
	k := startConsoleCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute) // a failure bound only
	defer cancel()
	doomed := k.worker(t, "worker-a")
	until(t, ctx, "worker-a serving", func() bool { return len(k.workers(t)) == 1 })
	// Tasks go through both front ends, as the ops principal.
	clients := []*client.Client{taskClient(k.bases[0] + "/mcp"), taskClient(k.bases[1] + "/mcp")}
	for _, c := range clients {
		c.Header = http.Header{"Authorization": {"Bearer " + opsKey}}
	}
	c := clients[0]
	running := func(g *proto.GetTaskResult) bool {
		return strings.HasPrefix(g.StatusMessage, "Running") || strings.Contains(g.StatusMessage, "s of ")
	}
	long := createTask(t, ctx, clients[0], "slow_compute", map[string]any{"seconds": 600, "label": "long"}).TaskID
	moved := createTask(t, ctx, clients[1], "slow_compute", map[string]any{"seconds": 15, "label": "moved"}).TaskID
	stopped := createTask(t, ctx, clients[0], "slow_compute", map[string]any{"seconds": 600, "label": "stopped"}).TaskID
	for _, id := range []string{long, moved, stopped} {
		waitTask(t, ctx, c, id, "running on worker-a", running)
	}
	// worker-a's 3 slots are full: these wait in the queue.
	priced := createTask(t, ctx, clients[1], "gpu_burn", map[string]any{}).TaskID
	asks := createTask(t, ctx, clients[0], "confirm_delete", map[string]any{"filename": "notes.txt"}).TaskID
	depth := func() int64 {
		var v series.View
		apiGet(t, k.bases[1], opsKey, "/v1/ops/series?minutes=5", &v)
		var n int64
		for _, d := range v.Depth {
			if p := d[len(d)-1]; p != nil {
				n += *p
			}
		}
		return n
	}
	until(t, ctx, "the queue depth sampled at 2", func() bool { return depth() == 2 })

	bctx, do := headless(t, ctx, browser)
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(css(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	attr := func(sel, name string) string {
		v, _ := chromedp.Run(bctx, chromedp.Evaluate[string](fmt.Sprintf(
			`(document.querySelector(%q) || {getAttribute: () => ""}).getAttribute(%q) || ""`, sel, name)))
		return v
	}
	useKey := func(key string) []chromedp.Action[chromedp.Void] {
		return []chromedp.Action[chromedp.Void]{chromedp.SetValue(css(`#key`), key), chromedp.Click(css(`#auth button`))}
	}
	do("open the console", chromedp.Navigate(k.bases[0]+"/dashboard/"))
	do("use the ops key", append(useKey(opsKey),
		chromedp.WaitVisible(css(row(long)+` td.status.working`)),
		chromedp.WaitVisible(css(`#ops`)),
		chromedp.WaitVisible(css(`#chart-depth path.line`)))...)
	tasksChart := attr(`#chart-tasks svg`, "aria-label")
	queued := text(`#ops-queues tbody`)

	k.worker(t, "worker-b")
	do("see both workers", chromedp.Poll[chromedp.Void](`document.querySelectorAll("#ops-workers tbody tr").length === 2`))
	waitTask(t, ctx, c, asks, "input_required", hasStatus(proto.StatusInputRequired))
	do("cancel a running task from its page", chromedp.Click(css(row(stopped))),
		chromedp.WaitVisible(css(`#d-cancel`)), chromedp.Click(css(`#d-cancel`)),
		chromedp.WaitVisible(css(row(stopped)+` td.status.cancelled`)))
	waitTask(t, ctx, c, priced, "completed", hasStatus(proto.StatusCompleted))
	until(t, ctx, "the queue drained", func() bool { return depth() == 0 })

	doomed.kill(t)
	waitTask(t, ctx, c, moved, "completed after the takeover", hasStatus(proto.StatusCompleted))
	do("see one worker after the kill", chromedp.Poll[chromedp.Void](`document.querySelectorAll("#ops-workers tbody tr").length === 1`),
		chromedp.WaitVisible(css(row(moved)+` td.status.completed`)),
		chromedp.WaitVisible(css(row(priced)+` td.status.completed`)),
		chromedp.WaitVisible(css(row(asks)+` td.status.input_required`)),
		chromedp.WaitVisible(css(row(long)+` td.progress progress`)))
	if ws := text(`#ops-workers tbody`); !strings.Contains(ws, "worker-b") || strings.Contains(ws, "worker-a") {
		t.Errorf("workers after the kill: %q", ws)
	}

	// Each task shows its tool, status, progress and cost.
	for id, want := range map[string][2]string{long: {"slow_compute", "working"}, moved: {"slow_compute", "completed"},
		stopped: {"slow_compute", "cancelled"}, priced: {"gpu_burn", "completed"}, asks: {"confirm_delete", "input_required"}} {
		if tool, status := text(row(id)+` td.tool`), text(row(id)+` td.status`); tool != want[0] || status != want[1] {
			t.Errorf("task %s shows tool %q status %q, want %v", id, tool, status, want)
		}
	}
	if cost := text(row(priced) + ` td.cost`); !strings.Contains(cost, "charged") {
		t.Errorf("the priced task's cost shows %q", cost)
	}
	if bar := attr(row(long)+` td.progress progress`, "max"); bar != "600" {
		t.Errorf("the long task's progress bar max %q, want 600", bar)
	}

	// The taken-over task: two attempts, the first lost with its worker.
	var page struct {
		Attempts []timeline.Attempt `json:"attempts"`
	}
	apiGet(t, k.bases[1], opsKey, "/v1/tasks/"+moved, &page)
	if len(page.Attempts) != 2 || page.Attempts[0].Ended != "lost" || !strings.HasPrefix(page.Attempts[0].Worker, "worker-a") ||
		!strings.HasPrefix(page.Attempts[1].Worker, "worker-b") || page.Attempts[1].Ended != "completed" {
		t.Errorf("attempts of the taken-over task: %+v", page.Attempts)
	}
	do("open the taken-over task's page", chromedp.Click(css(row(moved))),
		chromedp.WaitVisible(css(`#d-timeline li[data-kind="lost"]`)),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#d-timeline li[data-kind="started"]').length === 2`))
	if lost := text(`#d-timeline li[data-kind="lost"]`); !strings.Contains(lost, "taken over") {
		t.Errorf("the lost attempt reads %q", lost)
	}

	// The charts and the queue table moved with the workload.
	do("see the charts move", chromedp.Poll[chromedp.Void](fmt.Sprintf(
		`document.querySelector("#chart-tasks svg").getAttribute("aria-label") !== %q`, tasksChart)))
	if now := text(`#ops-queues tbody`); now == queued {
		t.Errorf("the queue table did not change: %q", now)
	}
	do("chart one tool's tasks", chromedp.Poll[chromedp.Void](`document.querySelector('#chart-tool option[value="gpu_burn"]') !== null`),
		chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector("#chart-tool"); s.value = "gpu_burn"; s.dispatchEvent(new Event("change")); })()`))
	if label := attr(`#chart-tasks svg`, "aria-label"); !strings.HasPrefix(label, "Tasks per minute of gpu_burn: created") {
		t.Errorf("the tasks chart of gpu_burn reads %q", label)
	}
	if b := text(`#ops-billing tbody`); !strings.Contains(b, "gpu_burn") {
		t.Errorf("billing by tool: %q", b)
	}
	shots := map[string][]byte{}
	shoot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		shots[name] = png
	}
	shoot("console.png")
	do("narrow to a phone's width", chromedp.EmulateViewport(390, 844))
	shoot("console-phone.png")
	if wide, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`)); err != nil || wide {
		t.Errorf("at phone width the console scrolls sideways (%v)", err)
	}

	// A non-admin: 403 from every operator endpoint, no operator view.
	for _, p := range []string{"/v1/ops/queues", "/v1/ops/workers", "/v1/ops/catalog", "/v1/ops/series"} {
		if code := apiGet(t, k.bases[0], aliceKey, p, nil); code != http.StatusForbidden {
			t.Errorf("GET %s as alice: HTTP %d, want 403", p, code)
		}
	}
	do("use alice's key", append(append([]chromedp.Action[chromedp.Void]{chromedp.EmulateViewport(1280, 800)}, useKey(aliceKey)...),
		chromedp.WaitVisible(css(`#empty`)), chromedp.WaitNotVisible(css(`#ops`)))...)
	shoot("console-user.png")
	do("narrow to a phone's width", chromedp.EmulateViewport(390, 844))
	shoot("console-user-phone.png")
	saveShots(t, shots)
}

package e2e

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

// queuesCatalogInterval is the workers' heartbeat in TestQueuesFleet: a
// killed worker's tools leave tools/list within 3 of them (worker.ServedIntervals).
const queuesCatalogInterval = 300 * time.Millisecond

// TestQueuesFleet: a "gpu" worker and a "cpu" worker (processes, real
// redis-server) with the same tools and --tool-queues render_gif=gpu,*=cpu:
// each tool runs only on its queue's worker. Killing the only gpu worker
// (SIGKILL) removes render_gif from tools/list within the stated bound and
// a listener gets tools/list_changed; a call meanwhile gets the clear
// answer (a task waiting for a worker of queue gpu, or an error for a
// client that cannot take a task); starting a gpu worker again lists the
// tool again, announces it, and runs the waiting task.
func TestQueuesFleet(t *testing.T) {
	b := redistest.Real(t)
	env := []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix, "MCPQ_LOG_LEVEL=debug",
		"MCPQ_TOOL_QUEUES=render_gif=gpu,*=cpu", "MCPQ_CATALOG_INTERVAL=" + queuesCatalogInterval.String()}
	gpu := start(t, "gpu worker", env, nil, "worker", "--fixtures", "conformance", "--queues", "gpu=1")
	cpu := start(t, "cpu worker", env, nil, "worker", "--fixtures", "conformance", "--queues", "cpu=4")
	url := startFrontend(t, env)
	waitCatalog(t, url, "render_gif")
	waitCatalog(t, url, "greet")
	ctx := within(t)
	tasks := &client.Client{URL: url, Tasks: true}
	plain := &client.Client{URL: url}

	renderArgs := map[string]any{"frames": 2, "size": 16, "frameMs": 0}
	render := func(t *testing.T) *proto.CallToolResult {
		t.Helper()
		a, err := tasks.CallTool(ctx, "render_gif", renderArgs)
		if err != nil {
			t.Fatalf("render_gif: %v", err)
		}
		if a.Task == nil {
			return a.Result
		}
		g, err := tasks.Wait(ctx, a.Task.TaskID, 100*time.Millisecond)
		if err != nil || g.Status != proto.StatusCompleted {
			t.Fatalf("render_gif task: %+v, %v", g, err)
		}
		return nil
	}
	for range 3 {
		render(t)
		var r proto.CallToolResult
		if err := plain.Call(ctx, proto.MethodToolsCall, "greet", map[string]any{"name": "greet",
			"arguments": map[string]any{"name": "Ada"}}, &r); err != nil || r.IsError {
			t.Fatalf("greet: %+v, %v", r, err)
		}
	}
	ran := func(p *proc, tool string) bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return strings.Contains(p.out.String(), "tool="+tool+" ")
	}
	if !ran(gpu, "render_gif") || ran(gpu, "greet") || !ran(cpu, "greet") || ran(cpu, "render_gif") {
		t.Fatalf("render_gif ran on gpu %v, cpu %v; greet ran on gpu %v, cpu %v: want each on its own queue's worker only",
			ran(gpu, "render_gif"), ran(cpu, "render_gif"), ran(gpu, "greet"), ran(cpu, "greet"))
	}

	lctx, stopListen := context.WithCancel(ctx)
	defer stopListen()
	l, err := plain.Listen(lctx, map[string]any{"toolsListChanged": true})
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	if m := <-l.C; m.Method != proto.NotifySubscribed {
		t.Fatalf("listen opened with %s", m.Method)
	}
	listChanged := func(what string) {
		t.Helper()
		for {
			select {
			case m, ok := <-l.C:
				if !ok {
					t.Fatalf("listen stream ended before %s", what)
				}
				if m.Method == proto.NotifyToolsListChanged {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no tools/list_changed %s", what)
			}
		}
	}
	listed := func() []string {
		var r proto.ListToolsResult
		if err := plain.Call(ctx, proto.MethodToolsList, "", nil, &r); err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		var names []string
		for _, tl := range r.Tools {
			names = append(names, tl.Name)
		}
		return names
	}

	// SIGKILL: the worker says nothing; only its heartbeats stop.
	if err := gpu.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = gpu.cmd.Wait()
	killed := time.Now()
	for slices.Contains(listed(), "render_gif") {
		if ctx.Err() != nil {
			t.Fatal("render_gif still listed long after its only worker died")
		}
		time.Sleep(20 * time.Millisecond)
	}
	gone := time.Since(killed)
	t.Logf("render_gif left tools/list %v after its worker was killed (bound: 3 × %v since its last heartbeat)",
		gone, queuesCatalogInterval)
	// The stated bound plus a generous allowance for a loaded machine: a
	// failure bound, not a speed check (a tool that never leaves fails here).
	if slack := 10 * time.Second; gone > 3*queuesCatalogInterval+slack {
		t.Errorf("render_gif left tools/list %v after its worker died: over the bound 3 × %v (+%v slack)",
			gone, queuesCatalogInterval, slack)
	}
	if names := listed(); !slices.Contains(names, "greet") {
		t.Fatalf("tools/list %v lost the cpu worker's tools", names)
	}
	listChanged("after the gpu worker died")

	// A call while no gpu worker lives: never a silent wait.
	a, err := tasks.CallTool(ctx, "render_gif", renderArgs)
	if err != nil || a.Task == nil {
		t.Fatalf("render_gif with no gpu worker: %+v, %v; want a task", a, err)
	}
	g, err := tasks.GetTask(ctx, a.Task.TaskID)
	if err != nil || g.Status != proto.StatusWorking ||
		g.StatusMessage != "Queued: waiting for a worker of queue gpu (none serves render_gif now)" {
		t.Fatalf("waiting task: %+v, %v", g, err)
	}
	_, err = plain.CallTool(ctx, "render_gif", renderArgs)
	var rpcErr *client.RPCError
	if !errors.As(err, &rpcErr) || !strings.Contains(rpcErr.RPC.Message, "No worker serves render_gif now (queue gpu)") {
		t.Fatalf("render_gif from a client without tasks: %v; want the no-worker error", err)
	}

	// A gpu worker again: listed, announced, and the waiting task runs.
	start(t, "gpu worker 2", env, nil, "worker", "--fixtures", "conformance", "--queues", "gpu=1")
	listChanged("after a gpu worker started again")
	waitCatalog(t, url, "render_gif")
	if g, err := tasks.Wait(ctx, a.Task.TaskID, 100*time.Millisecond); err != nil || g.Status != proto.StatusCompleted {
		t.Fatalf("the task that waited for a gpu worker: %+v, %v", g, err)
	}
}

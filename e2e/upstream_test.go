package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/everythingtest"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
	"github.com/mcpq/mcpq/worker/upstream"
)

// TestUpstreamThroughTheFrontEnd: a real front end and a worker fronting
// the everything server. The upstream's elicitation is answered with
// tasks/update (2026-07-28) and reaches the upstream; a resource linked
// from a result (get-resource-links) is read through the front end by the
// task's owner, and a URI no result linked is not served.
func TestUpstreamThroughTheFrontEnd(t *testing.T) {
	spec := upstream.Spec{Name: "everything", Command: everythingtest.Command(t)}
	spec.Tools = []string{"get-resource-links", "trigger-elicitation-request"}
	spec.Overrides = map[string]upstream.Override{"trigger-elicitation-request": {Policy: worker.PolicyTask}}
	e := newInprocSetup(t, nil, func(ctx context.Context, w *worker.Worker) error {
		_, err := upstream.Serve(ctx, w, []upstream.Spec{spec})
		return err
	})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()

	t.Run("elicitation answered with tasks/update", func(t *testing.T) {
		id, key, raw := askedTask(t, ctx, e, "trigger-elicitation-request", map[string]any{})
		if !strings.Contains(string(raw), "Your full, legal name") {
			t.Fatalf("input request %s: %s", key, raw)
		}
		e.update(t, ctx, id, map[string]any{key: accept(map[string]any{"name": "Grace Hopper"})})
		g, err := e.c.Wait(ctx, id, 50*time.Millisecond)
		if err != nil || g.Status != proto.StatusCompleted || !strings.Contains(string(g.Result), "Name: Grace Hopper") {
			t.Fatalf("ended %+v %v", g, err)
		}
	})

	t.Run("resources/read of a linked resource", func(t *testing.T) {
		res := callResult(t, ctx, e, "get-resource-links", map[string]any{"count": 2})
		var uri string
		for _, b := range res.Content {
			if b.Type == "resource_link" {
				uri = b.URI
				break
			}
		}
		if uri == "" {
			t.Fatalf("no resource_link in %+v", res)
		}
		// The worker publishes the resource as the call ends: the first
		// read may come before the front end sees it.
		var read *proto.ReadResourceResult
		var err error
		for deadline := time.Now().Add(bound); ; time.Sleep(20 * time.Millisecond) {
			read, err = e.c.ReadResource(ctx, uri)
			if err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil || len(read.Contents) != 1 || read.Contents[0].URI != uri {
			t.Fatalf("resources/read %s: %+v %v", uri, read, err)
		}
		other := strings.TrimSuffix(uri, uri[len(uri)-1:]) + "9"
		_, err = e.c.ReadResource(ctx, other)
		var rpc *client.RPCError
		if !errors.As(err, &rpc) || rpc.RPC.Code != proto.CodeInvalidParams {
			t.Errorf("resources/read of %s, which no result linked: %v, want -32602", other, err)
		}
	})
}

// callResult calls tool and waits for its result, task or not.
func callResult(t *testing.T, ctx context.Context, e *inproc, tool string, args any) *proto.CallToolResult {
	t.Helper()
	a, err := e.c.CallTool(ctx, tool, args)
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	if a.Result != nil {
		return a.Result
	}
	g, err := e.c.Wait(ctx, a.Task.TaskID, 50*time.Millisecond)
	if err != nil || g.Status != proto.StatusCompleted {
		t.Fatalf("%s ended %+v %v", tool, g, err)
	}
	var res proto.CallToolResult
	if err := json.Unmarshal(g.Result, &res); err != nil {
		t.Fatal(err)
	}
	return &res
}

// TestMcpqFrontedByMcpq: a 2026-07-28 upstream with tasks (an mcpq front
// end serving the conformance tools) fronted by another mcpq: the call
// becomes an upstream task that the fronting worker follows, its id in the
// fronting task's checkpoint; the upstream task's elicitation is relayed,
// answered with tasks/update on the fronting mcpq and passed upstream.
func TestMcpqFrontedByMcpq(t *testing.T) {
	up := newInproc(t)
	spec := upstream.Spec{Name: "mcpq", URL: up.url, ProtocolVersion: upstream.VersionStateless, Prefix: "up.",
		Tools: []string{"slow_compute", "confirm_delete", "test_tool_with_logging"},
		// Handed out as a task at once: with the default policy an input
		// asked within the sync budget is answered inline (an
		// input_required result), which askedTask does not expect.
		Overrides: map[string]upstream.Override{"confirm_delete": {Policy: worker.PolicyTask}}}
	e := newInprocSetup(t, nil, func(ctx context.Context, w *worker.Worker) error {
		_, err := upstream.Serve(ctx, w, []upstream.Spec{spec})
		return err
	})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()

	t.Run("an upstream task followed", func(t *testing.T) {
		a, err := e.c.CallTool(ctx, "up.slow_compute", map[string]any{"seconds": 1.5})
		if err != nil || a.Task == nil {
			t.Fatalf("call: %+v %v", a, err)
		}
		id := a.Task.TaskID
		var upID string
		for upID == "" {
			rec := e.record(t, id)
			var m struct {
				Task string `json:"upstreamTask"`
			}
			_ = json.Unmarshal(rec.Checkpoint, &m)
			if rec.Status.Terminal() {
				t.Fatalf("ended %s before its checkpoint named the upstream task", rec.Status)
			}
			upID = m.Task
			time.Sleep(10 * time.Millisecond)
		}
		if got, err := up.c.GetTask(ctx, upID); err != nil || got.TaskID != upID {
			t.Fatalf("the upstream has no task %s: %+v %v", upID, got, err)
		}
		g, err := e.c.Wait(ctx, id, 50*time.Millisecond)
		if err != nil || g.Status != proto.StatusCompleted {
			t.Fatalf("ended %+v %v", g, err)
		}
		ug, err := up.c.Wait(ctx, upID, 50*time.Millisecond)
		if err != nil || string(normalizeResult(t, ug.Result)) != string(normalizeResult(t, g.Result)) {
			t.Errorf("result through mcpq %s, the upstream task's %s (%v)", g.Result, ug.Result, err)
		}
	})

	t.Run("the upstream's log messages relayed to the last", func(t *testing.T) {
		// The tool logs three messages, the last just before its result:
		// a client holding the call at a logLevel gets all three, in
		// order, before the result (the relays of worker/upstream/logs.go).
		for range 10 {
			msgs, result := sseToolCall(t, ctx, e.url, "up.test_tool_with_logging", "info")
			if got := strings.Join(msgs, " | "); got != "Tool execution started | Tool processing data | Tool execution completed" {
				t.Fatalf("log messages %q", got)
			}
			if !strings.Contains(result, "Tool with logging executed successfully") {
				t.Fatalf("result %s", result)
			}
		}
	})

	t.Run("the upstream task's input relayed", func(t *testing.T) {
		id, key, _ := askedTask(t, ctx, e, "up.confirm_delete", map[string]any{"filename": "notes.txt"})
		if !strings.HasPrefix(key, "upstream-task-") {
			t.Errorf("input key %q", key)
		}
		e.update(t, ctx, id, map[string]any{key: accept(map[string]any{"confirm": true})})
		g, err := e.c.Wait(ctx, id, 50*time.Millisecond)
		if err != nil || g.Status != proto.StatusCompleted || !strings.Contains(string(g.Result), "notes.txt") {
			t.Fatalf("ended %+v %v", g, err)
		}
	})
}

// sseToolCall sends a 2026-07-28 tools/call of tool at logLevel to url
// and reads the event stream: the data of each notifications/message in
// order, and the response's result.
func sseToolCall(t *testing.T, ctx context.Context, url, tool, level string) (msgs []string, result string) {
	t.Helper()
	body := toJSON(t, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": tool, "arguments": map[string]any{}, "_meta": map[string]any{
			proto.MetaProtocolVersion: proto.ProtocolVersion, proto.MetaLogLevel: level,
			proto.MetaClientInfo: map[string]any{"name": "e2e", "version": "1"}, proto.MetaClientCapabilities: map[string]any{}}}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", proto.ProtocolVersion)
	req.Header.Set("Mcp-Method", proto.MethodToolsCall)
	req.Header.Set("Mcp-Name", tool)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m struct {
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
			Params struct {
				Data string `json:"data"`
			} `json:"params"`
		}
		fromJSON(t, []byte(data), &m)
		switch {
		case m.Method == proto.NotifyMessage:
			msgs = append(msgs, m.Params.Data)
		case m.Result != nil || m.Error != nil:
			return msgs, string(m.Result) + string(m.Error)
		}
	}
	t.Fatalf("the stream ended without a response (status %s, %v)", resp.Status, sc.Err())
	return nil, ""
}

// normalizeResult drops a result's _meta (each mcpq adds its own).
func normalizeResult(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "_meta")
	b, _ := json.Marshal(m)
	return b
}

// TestUpstreamTaskSurvivesSIGKILL: real processes. A front end and a worker
// on a real redis-server front another mcpq (`mcpq dev --fixtures
// conformance`, a 2026-07-28 upstream with tasks). The fronting worker is
// SIGKILLed while it follows the upstream task; another worker takes the
// task over and follows the same upstream task id (the checkpoint's), and
// the task completes once, with the upstream task's result.
func TestUpstreamTaskSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	upURL := startDev(t)
	tools := filepath.Join(t.TempDir(), "tools.yaml")
	file := "servers:\n  - name: up\n    url: " + upURL + "\n    protocolVersion: \"2026-07-28\"\n    prefix: up.\n    tools: [slow_compute]\n"
	if err := os.WriteFile(tools, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	b := redistest.Real(t)
	env := []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix, "MCPQ_LOST_AFTER=2s"}
	doomed := start(t, "worker A", env, nil, "worker", "--tools", tools)
	url := startFrontend(t, env)
	waitCatalog(t, url, "up.slow_compute")
	ctx := within(t)
	c := taskClient(url)
	task := createTask(t, ctx, c, "up.slow_compute", map[string]any{"seconds": 8, "label": "followed"})
	ref := taskstate.Ref{Owner: taskstate.OwnerTag(frontend.AnonymousPrincipal), ID: task.TaskID}
	key := taskstate.Keys{Prefix: b.Prefix}.Task(ref)
	upstreamTask := func() string {
		cp, _ := b.Client.HGet(ctx, key, "checkpoint").Result()
		var m struct {
			Task string `json:"upstreamTask"`
		}
		_ = json.Unmarshal([]byte(cp), &m)
		return m.Task
	}
	var first string
	for first == "" {
		if first = upstreamTask(); first == "" {
			if ctx.Err() != nil {
				t.Fatal("the checkpoint never named the upstream task")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	start(t, "worker B", env, nil, "worker", "--tools", tools)
	doomed.kill(t)
	waitTask(t, ctx, c, task.TaskID, "taken over and followed again", func(g *proto.GetTaskResult) bool {
		lost, _ := b.Client.HGet(ctx, key, "lost").Result()
		return lost == "1" && strings.Contains(g.StatusMessage, "followed:") // the upstream's own progress again
	})
	if again := upstreamTask(); again != first {
		t.Fatalf("after the takeover the checkpoint names upstream task %q, want the same %q", again, first)
	}
	g := waitTask(t, ctx, c, task.TaskID, "completed", func(g *proto.GetTaskResult) bool { return g.Status.Terminal() })
	if g.Status != proto.StatusCompleted || !strings.Contains(string(g.Result), "followed") {
		t.Fatalf("ended %s: %s %+v", g.Status, g.Result, g.Error)
	}
	up := taskClient(upURL)
	if ug, err := up.GetTask(ctx, first); err != nil || ug.Status != proto.StatusCompleted {
		t.Errorf("the upstream task %s: %+v %v", first, ug, err)
	}
}

// askedTask calls tool, which must become a task, and waits until the task
// asks for input: its id and the (first) input request's key and JSON.
func askedTask(t *testing.T, ctx context.Context, e *inproc, tool string, args any) (id, key string, req json.RawMessage) {
	t.Helper()
	a, err := e.c.CallTool(ctx, tool, args)
	if err != nil || a.Task == nil {
		t.Fatalf("call %s: %+v %v", tool, a, err)
	}
	for {
		g, err := e.c.GetTask(ctx, a.Task.TaskID)
		if err != nil || g.Status.Terminal() {
			t.Fatalf("tasks/get: %+v %v", g, err)
		}
		for k, raw := range g.InputRequests {
			return a.Task.TaskID, k, raw
		}
		time.Sleep(10 * time.Millisecond)
	}
}

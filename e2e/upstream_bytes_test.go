package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/everythingtest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
	"github.com/mcpq/mcpq/worker/upstream"
)

// bytesCases are the everything server's calls whose results must come
// through mcpq as the server wrote them.
var bytesCases = []struct {
	tool string
	args map[string]any
}{
	{"trigger-long-running-operation", map[string]any{"duration": 1, "steps": 2}},
	{"get-structured-content", map[string]any{"location": "New York"}},
	{"get-tiny-image", map[string]any{}},
	{"get-resource-links", map[string]any{"count": 3}},
	{"echo", map[string]any{"message": "byte for byte"}},
}

// TestUpstreamResultsByteForByte: each call made directly on the everything
// server (stdio, then Streamable HTTP) and through mcpq (front end, worker
// fronting that server; as a task read back with tasks/get, and as a sync
// call's tools/call result) returns the same result once what mcpq adds by
// contract is removed (mcpqAdded): canonical JSON of the rest compared.
func TestUpstreamResultsByteForByte(t *testing.T) {
	argv := everythingtest.Command(t)
	httpURL := everythingtest.StartHTTP(t, argv)
	for _, tr := range []struct {
		name   string
		spec   upstream.Spec
		direct func(t *testing.T, tool string, args any) json.RawMessage
	}{
		{"stdio", upstream.Spec{Name: "everything", Command: argv}, stdioDirect(t, argv)},
		{"streamable-http", upstream.Spec{Name: "everything-http", URL: httpURL}, httpDirect(t, httpURL)},
	} {
		for _, policy := range []worker.Policy{worker.PolicyTask, worker.PolicySync} {
			t.Run(tr.name+"/"+string(policy), func(t *testing.T) {
				e := newInprocSetup(t, nil, func(ctx context.Context, w *worker.Worker) error {
					_, err := upstream.Serve(ctx, w, []upstream.Spec{bytesSpec(tr.spec, policy)})
					return err
				})
				for _, c := range bytesCases {
					t.Run(c.tool, func(t *testing.T) {
						ctx, cancel := context.WithTimeout(context.Background(), bound)
						defer cancel()
						waitListed(t, ctx, e, c.tool)
						got := canonical(t, throughMcpq(t, ctx, e, c.tool, c.args), true)
						if want := canonical(t, tr.direct(t, c.tool, c.args), false); !bytes.Equal(got, want) {
							t.Errorf("through mcpq:\n%s\ndirect:\n%s", got, want)
						}
					})
				}
			})
		}
	}
}

// bytesSpec is spec serving bytesCases' tools with policy.
func bytesSpec(spec upstream.Spec, policy worker.Policy) upstream.Spec {
	spec.Overrides = map[string]upstream.Override{}
	for _, c := range bytesCases {
		spec.Tools = append(spec.Tools, c.tool)
		spec.Overrides[c.tool] = upstream.Override{Policy: policy}
	}
	return spec
}

// throughMcpq is the raw result of tool through the front end: the
// tools/call result itself, or a task's result as tasks/get returns it.
func throughMcpq(t *testing.T, ctx context.Context, e *inproc, tool string, args any) json.RawMessage {
	t.Helper()
	var raw json.RawMessage
	if err := e.c.Call(ctx, proto.MethodToolsCall, tool, map[string]any{"name": tool, "arguments": args}, &raw); err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	var task proto.CreateTaskResult
	if json.Unmarshal(raw, &task) != nil || task.ResultType != proto.ResultTask {
		return raw
	}
	g, err := e.c.Wait(ctx, task.TaskID, 50*time.Millisecond)
	if err != nil || g.Status != proto.StatusCompleted {
		t.Fatalf("%s ended %+v %v", tool, g, err)
	}
	return g.Result
}

// mcpqAdded are the _meta keys mcpq puts on a result (docs/tools.md,
// "Front an MCP server"): the front end's serverInfo and the Tasks
// extension's related-task. resultType is the 2026-07-28 wire's, required
// on every result mcpq sends.
var mcpqAdded = []string{proto.MetaServerInfo, "io.modelcontextprotocol/related-task"}

// canonical is raw re-marshalled with sorted keys, without resultType and,
// for a result through mcpq, without the _meta keys mcpq adds.
func canonical(t *testing.T, raw json.RawMessage, throughMcpq bool) []byte {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	delete(m, "resultType")
	if meta, ok := m["_meta"].(map[string]any); ok && throughMcpq {
		for _, k := range mcpqAdded {
			delete(meta, k)
		}
		if len(meta) == 0 {
			delete(m, "_meta")
		}
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// waitListed waits until the front end lists tool (the worker publishes
// the upstream's tools once it has listed them).
func waitListed(t *testing.T, ctx context.Context, e *inproc, tool string) {
	t.Helper()
	for {
		tls, err := e.c.ListTools(ctx)
		for _, tl := range tls {
			if tl.Name == tool {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never listed: %v", tool, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// initParams are a plain 2025-11-25 client's initialize params.
var initParams = map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
	"clientInfo": map[string]any{"name": "direct", "version": "1"}}

// stdioDirect starts the everything server over stdio once, initializes a
// session and returns a tools/call that answers the raw result.
func stdioDirect(t *testing.T, argv []string) func(t *testing.T, tool string, args any) json.RawMessage {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	id := 0
	call := func(t *testing.T, method string, params any) json.RawMessage {
		t.Helper()
		id++
		if err := json.NewEncoder(in).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
			t.Fatal(err)
		}
		for sc.Scan() {
			if raw, ok := responseTo(t, sc.Bytes(), id); ok {
				return raw
			}
		}
		t.Fatalf("the everything server closed stdout: %v", sc.Err())
		return nil
	}
	call(t, "initialize", initParams)
	if err := json.NewEncoder(in).Encode(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		t.Fatal(err)
	}
	return func(t *testing.T, tool string, args any) json.RawMessage {
		return call(t, proto.MethodToolsCall, map[string]any{"name": tool, "arguments": args})
	}
}

// responseTo is the result of the JSON-RPC response to id in msg, if msg
// is that response (notifications and server requests are passed over).
func responseTo(t *testing.T, msg []byte, id int) (json.RawMessage, bool) {
	t.Helper()
	var r struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(msg, &r) != nil || r.Method != "" || string(r.ID) != fmt.Sprint(id) {
		return nil, false
	}
	if r.Error != nil {
		t.Fatalf("the everything server answered an error: %s", r.Error)
	}
	return r.Result, true
}

// httpDirect initializes a Streamable HTTP session with the everything
// server and returns a tools/call that answers the raw result.
func httpDirect(t *testing.T, url string) func(t *testing.T, tool string, args any) json.RawMessage {
	t.Helper()
	session, id := "", 0
	post := func(t *testing.T, msg map[string]any) []byte {
		t.Helper()
		body, _ := json.Marshal(msg)
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
			session = s
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode >= 300 {
			t.Fatalf("POST %s: HTTP %d %s %v", msg["method"], resp.StatusCode, b, err)
		}
		return b
	}
	call := func(t *testing.T, method string, params any) json.RawMessage {
		t.Helper()
		id++
		b := post(t, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		for _, line := range strings.Split(string(b), "\n") { // an SSE stream or one JSON body
			line = strings.TrimPrefix(strings.TrimSpace(line), "data:")
			if raw, ok := responseTo(t, []byte(line), id); ok {
				return raw
			}
		}
		t.Fatalf("no response to %s in %s", method, b)
		return nil
	}
	call(t, "initialize", initParams)
	post(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return func(t *testing.T, tool string, args any) json.RawMessage {
		return call(t, proto.MethodToolsCall, map[string]any{"name": tool, "arguments": args})
	}
}

package frontend_test

// Robustness: garbage never panics and always gets a JSON-RPC error; the
// real HTTP wire; Redis going away; and reproducers of known bugs.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

// garbage is a table of bodies that must each get a JSON-RPC error.
func garbage() []string {
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":`
	call := func(params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`
	}
	return []string{
		"", " ", "\n\t", "{", "}", "[", "]", "[]", "[{}]", "[1,2]", "null", "true", "false", "0", "-1",
		`"x"`, "{}", "\x00", "\xff\xfe\xfd", "\xef\xbb\xbf{}", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}\x00",
		strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
		`{"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":2,"id":1,"method":"server/discover"}`,
		`{"jsonrpc":"2.0","id":1,"method":""}`,
		`{"jsonrpc":"2.0","id":1,"method":null}`,
		`{"jsonrpc":"2.0","id":1,"method":{"a":1}}`,
		`{"jsonrpc":"2.0","id":1,"id":{},"method":"server/discover"}`,
		`{"jsonrpc":"2.0","id":1e999999,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"_meta":5}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"_meta":{}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"_meta":[]}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"_meta":` + meta + `"none"}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"_meta":` + meta + `{"extensions":7}}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"_meta":` + meta + `{"extensions":null},"io.modelcontextprotocol/clientInfo":7}}}`,
		call(`{"_meta":` + meta + `{}},"name":{"x":1}}`),
		call(`{"_meta":` + meta + `{}},"name":["greet"]}`),
		call(`{"_meta":` + meta + `{}},"name":"greet","arguments":7}`),
		call(`{"_meta":` + meta + `{}},"name":"greet","arguments":"{}"}`),
		call(`{"_meta":` + meta + `{}},"name":"` + strings.Repeat("n", 5000) + `"}`),
		call(`{"_meta":` + meta + `{}},"name":"\u0000"}`),
		call(`{"_meta":` + meta + `{"extensions":{"io.modelcontextprotocol/tasks":{}}}},"name":"nope"}`),
		call(`{"_meta":` + meta + `{}},"name":"task_job"}`),
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"_meta":` + meta + `{"extensions":{"io.modelcontextprotocol/tasks":{}}}},"taskId":"AAAAAAAAAAAAAAAAAAAAAA"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"_meta":` + meta + `{"extensions":{"io.modelcontextprotocol/tasks":{}}}},"taskId":"x\u0000y"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"_meta":` + meta + `{"extensions":{"io.modelcontextprotocol/tasks":{}}}},"taskId":{"$gt":""}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"_meta":` + meta + `{"extensions":{"io.modelcontextprotocol/tasks":1}}},"taskId":"*"}}`,
	}
}

// checkRPCError holds one answer to the shape of a JSON-RPC error response.
func checkRPCError(t testing.TB, body string, rep reply) {
	t.Helper()
	if rep.Status == http.StatusInternalServerError || rep.Status < 200 || rep.Status == http.StatusAccepted {
		t.Errorf("body %.80q: HTTP %d", body, rep.Status)
	}
	if rep.JSON == nil {
		t.Fatalf("body %.80q: HTTP %d with no JSON body: %q", body, rep.Status, rep.Body)
	}
	code, _ := lookup(rep.JSON, "error.code")
	msg := str(rep.JSON, "error.message")
	_, hasID := rep.JSON["id"]
	_, hasResult := rep.JSON["result"]
	if rep.JSON["jsonrpc"] != "2.0" || !hasID || hasResult || msg == "" {
		t.Errorf("body %.80q: not a JSON-RPC error: %s", body, rep.Body)
	}
	if n, ok := code.(json.Number); !ok || strings.ContainsAny(n.String(), ".eE") {
		t.Errorf("body %.80q: error code %v is not an integer", body, code)
	}
}

func TestGarbageBodies(t *testing.T) {
	e := newEnv(t, redistest.Mini(t), nil)
	for _, body := range garbage() {
		rep := e.serve(context.Background(), http.MethodPost, []byte(body), deriveHeaders([]byte(body)))
		checkRPCError(t, body, rep)
	}
}

// FuzzServeMCP: whatever the body, the answer is 202 with no body or one
// JSON-RPC response with exactly one of result and error, never a panic.
func FuzzServeMCP(f *testing.F) {
	for _, b := range garbage() {
		f.Add([]byte(b))
	}
	f.Add([]byte(rpc(1, proto.MethodDiscover, metaPlain, nil)))
	f.Add([]byte(rpc(1, proto.MethodToolsCall, metaTasks, map[string]any{"name": toolTaskJob})))
	f.Add([]byte(rpc(nil, "notifications/initialized", metaPlain, nil)))
	f.Add([]byte(rpc(1, proto.MethodListen, metaTasks, map[string]any{"notifications": map[string]any{"toolsListChanged": true}})))
	base := newEnv(f, redistest.Mini(f), func(c *frontend.Config) { c.SyncWaitLimit = 100 * time.Millisecond })
	f.Fuzz(func(t *testing.T, body []byte) {
		e := base.with(t)
		// subscriptions/listen streams until the client leaves: leave soon.
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		rep := e.serve(ctx, http.MethodPost, body, deriveHeaders(body))
		if rep.Status == http.StatusAccepted {
			if len(rep.Body) != 0 {
				t.Errorf("202 with a body: %q", rep.Body)
			}
			return
		}
		_, hasResult := rep.JSON["result"]
		_, hasErr := rep.JSON["error"]
		if rep.JSON["jsonrpc"] != "2.0" || hasResult == hasErr {
			t.Errorf("HTTP %d: not one JSON-RPC response: %q", rep.Status, rep.Body)
		}
	})
}

// TestWire goes through a real HTTP server and client once.
func TestWire(t *testing.T) {
	e := newEnv(t, redistest.Mini(t), nil)
	ts := httptest.NewServer(e.h)
	defer ts.Close()
	body := rpc("w", proto.MethodDiscover, metaPlain, nil)
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
	req.Header = deriveHeaders([]byte(body))
	req.Header.Set("MCP-Protocol-Version", " 2026-07-28 ")
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" || !bytes.Contains(b, []byte(`"id":"w"`)) {
		t.Errorf("discover over the wire: %d %s %s", res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	if res.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("a session id was minted")
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(m, ts.URL+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		res, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != http.MethodPost {
			t.Errorf("%s /mcp: %d Allow=%q", m, res.StatusCode, res.Header.Get("Allow"))
		}
	}
	res, err = ts.Client().Get(ts.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Contains(b, []byte(`"ok"`)) {
		t.Errorf("healthz: %d %s", res.StatusCode, b)
	}
}

// TestRedisDown: with Redis gone, every call that needs it answers HTTP
// 503 with Retry-After and a JSON-RPC error that keeps the id, on /mcp and
// on the REST routes; server/discover still answers; /healthz (liveness)
// stays 200 while /readyz says 503 with a reason.
func TestRedisDown(t *testing.T) {
	mini := redistest.Mini(t)
	// A client that does not retry, so each refused call fails at once.
	b := *mini
	b.Client = redis.NewClient(&redis.Options{Addr: mini.Mini.Addr(), MaxRetries: -1})
	t.Cleanup(func() { b.Client.Close() })
	e := newEnv(t, &b, nil)
	id := e.createTask(toolTaskJob)
	get := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://localhost"+path, nil))
		return w
	}
	if w := get("/readyz"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"ready"`) {
		t.Errorf("readyz with Redis up: %d %s", w.Code, w.Body)
	}
	b.Mini.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	send := func(body string) reply {
		return e.serve(ctx, http.MethodPost, []byte(body), deriveHeaders([]byte(body)))
	}
	mustMatch(t, send(rpc(1, proto.MethodDiscover, metaPlain, nil)), 200, `{"id":1,"result":{"resultType":"complete"}}`)
	for _, body := range []string{
		rpc("g", proto.MethodTasksGet, metaTasks, map[string]any{"taskId": id}),
		rpc("c", proto.MethodTasksCncl, metaTasks, map[string]any{"taskId": id}),
		rpc("t", proto.MethodToolsCall, metaTasks, map[string]any{"name": toolTaskJob}),
		rpc("u", proto.MethodTasksUpd, metaTasks, map[string]any{"taskId": id, "inputResponses": map[string]any{"k": map[string]any{}}}),
		rpc(7, proto.MethodListen, metaTasks, map[string]any{"notifications": map[string]any{"taskIds": []string{id}}}),
	} {
		rep := send(body)
		checkRPCError(t, body, rep)
		var req struct{ ID json.RawMessage }
		_ = json.Unmarshal([]byte(body), &req)
		if got, _ := json.Marshal(rep.JSON["id"]); string(got) != string(req.ID) {
			t.Errorf("id %s, want %s", got, req.ID)
		}
		if rep.Status != http.StatusServiceUnavailable || rep.Header.Get("Retry-After") != "2" {
			t.Errorf("Redis down: HTTP %d Retry-After %q: %s", rep.Status, rep.Header.Get("Retry-After"), rep.Body)
		}
		if code, _ := lookup(rep.JSON, "error.code"); code != json.Number("-32603") {
			t.Errorf("Redis down answered %s", rep.Body)
		}
		if strings.Contains(string(rep.Body), "connect") || strings.Contains(string(rep.Body), "127.0.0.1") {
			t.Errorf("internal detail leaked: %s", rep.Body)
		}
	}
	for _, path := range []string{"/v1/tasks", "/v1/tasks/" + id} {
		w := get(path)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "2" || !strings.Contains(w.Body.String(), `"error"`) {
			t.Errorf("GET %s with Redis down: %d Retry-After %q %s", path, w.Code, w.Header().Get("Retry-After"), w.Body)
		}
	}
	if w := get("/healthz"); w.Code != http.StatusOK {
		t.Errorf("healthz (liveness) with Redis down: %d", w.Code)
	}
	w := get("/readyz")
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" ||
		!strings.Contains(w.Body.String(), `"reason":"redis unreachable"`) {
		t.Errorf("readyz with Redis down: %d %s", w.Code, w.Body)
	}
}

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

// blockingUpstream is a Streamable HTTP MCP server (2025-11-25, one
// session, JSON answers) whose tools "idem" (idempotentHint) and "plain"
// block each call until the test releases it or the caller goes away. It
// counts the calls of each tool and says when one started.
type blockingUpstream struct {
	mu      sync.Mutex
	calls   map[string]int
	started chan string   // the tool of each call, as it starts
	release chan struct{} // closed: calls answer
}

// newBlockingUpstream serves a blockingUpstream until the test ends and
// returns it with its MCP URL.
func newBlockingUpstream(t *testing.T) (*blockingUpstream, string) {
	u := &blockingUpstream{calls: map[string]int{}, started: make(chan string, 16), release: make(chan struct{})}
	srv := httptest.NewServer(u)
	t.Cleanup(srv.Close)
	t.Cleanup(u.unblock) // runs first: a blocked handler would hold srv.Close
	return u, srv.URL + "/mcp"
}

// block makes calls block again after unblock.
func (u *blockingUpstream) block() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.release = make(chan struct{})
}

func (u *blockingUpstream) unblock() {
	u.mu.Lock()
	defer u.mu.Unlock()
	select {
	case <-u.release:
	default:
		close(u.release)
	}
}

func (u *blockingUpstream) count(tool string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls[tool]
}

func (u *blockingUpstream) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		rw.WriteHeader(http.StatusMethodNotAllowed) // no standalone stream; DELETE ends nothing
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(rw, "bad body", http.StatusBadRequest)
		return
	}
	if len(m.ID) == 0 {
		rw.WriteHeader(http.StatusAccepted)
		return
	}
	var result string
	switch m.Method {
	case "initialize":
		rw.Header().Set("Mcp-Session-Id", "s1")
		result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"blocking","version":"1"}}`
	case "tools/list":
		result = `{"tools":[{"name":"idem","inputSchema":{"type":"object"},"annotations":{"idempotentHint":true}},` +
			`{"name":"plain","inputSchema":{"type":"object"}}]}`
	case "tools/call":
		u.mu.Lock()
		u.calls[m.Params.Name]++
		n, release := u.calls[m.Params.Name], u.release
		u.mu.Unlock()
		u.started <- m.Params.Name
		select {
		case <-release:
		case <-r.Context().Done(): // the calling worker died
			return
		}
		result = fmt.Sprintf(`{"content":[{"type":"text","text":"%s call %d"}]}`, m.Params.Name, n)
	default:
		result = `{}`
	}
	rw.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(rw, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
}

// TestUpstreamPlainCallLostWorker: real processes (two front ends, workers
// on a real redis-server) fronting a test upstream whose calls block until
// released, so no timing decides the test. The worker running a plain
// upstream call (no upstream task) is SIGKILLed while the call is open:
// for "idem", which the upstream declares idempotentHint, another worker
// calls it again and the task completes with that second call's result;
// for "plain" the task ends failed with the message that says why, and the
// upstream saw one call only (docs/tools.md, "A lost worker").
func TestUpstreamPlainCallLostWorker(t *testing.T) {
	t.Parallel()
	u, upURL := newBlockingUpstream(t)
	tools := filepath.Join(t.TempDir(), "tools.yaml")
	file := "servers:\n  - name: blocking\n    url: " + upURL + "\n    protocolVersion: \"2025-11-25\"\n    prefix: up.\n" +
		"    overrides:\n      idem: {policy: task}\n      plain: {policy: task}\n"
	if err := os.WriteFile(tools, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	b := redistest.Real(t)
	env := []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix, "MCPQ_LOST_AFTER=2s"}
	first := start(t, "worker A", env, nil, "worker", "--tools", tools)
	urls := []string{startFrontend(t, env), startFrontend(t, env)}
	waitCatalog(t, urls[0], "up.idem")
	waitCatalog(t, urls[1], "up.plain")
	ctx := within(t)
	create, poll := taskClient(urls[0]), taskClient(urls[1])
	running := func(want string) {
		t.Helper()
		select {
		case got := <-u.started:
			if got != want {
				t.Fatalf("the upstream saw a call of %s, want %s", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("no call of %s reached the upstream", want)
		}
	}

	// idem: A calls it and dies; B calls it again; released, it completes.
	idem := createTask(t, ctx, create, "up.idem", map[string]any{})
	running("idem")
	second := start(t, "worker B", env, nil, "worker", "--tools", tools)
	first.kill(t)
	running("idem") // called again by B
	u.unblock()
	g := waitTask(t, ctx, poll, idem.TaskID, "completed", func(g *proto.GetTaskResult) bool { return g.Status.Terminal() })
	if g.Status != proto.StatusCompleted || !strings.Contains(string(g.Result), "idem call 2") {
		t.Fatalf("idem ended %s: %s %+v", g.Status, g.Result, g.Error)
	}

	// plain: B calls it (the only worker) and dies while it blocks; C
	// takes the task over and must not call again.
	u.block()
	plain := createTask(t, ctx, create, "up.plain", map[string]any{})
	running("plain")
	start(t, "worker C", env, nil, "worker", "--tools", tools)
	second.kill(t)
	g = waitTask(t, ctx, poll, plain.TaskID, "failed", func(g *proto.GetTaskResult) bool { return g.Status.Terminal() })
	msg := ""
	if g.Error != nil {
		msg = g.Error.Message
	}
	if g.Status != proto.StatusFailed || !strings.Contains(msg, "not run again") || !strings.Contains(msg, "idempotentHint") {
		t.Fatalf("plain ended %s: %s %+v", g.Status, g.Result, g.Error)
	}
	if n := u.count("plain"); n != 1 {
		t.Errorf("the upstream saw %d calls of plain, want 1 (it must not run again)", n)
	}
}

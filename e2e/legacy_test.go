package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

// legacyPost sends one 2025-11-25 JSON-RPC request (with the session id,
// when given) and returns the answer's status, session header and body.
func legacyPost(t *testing.T, url, session, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(within(t), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", proto.LegacyVersion)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Mcp-Session-Id"), string(bytes.TrimSpace(b))
}

// TestLegacySessionSurvivesRestart: a 2025-11-25 session opened on a front
// end process is served after that process is stopped and another is
// started in its place, and by a second front end all along.
func TestLegacySessionSurvivesRestart(t *testing.T) {
	b := redistest.Real(t)
	urls := startCluster(t, b, 1, 1)
	env := []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix}
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	first := start(t, "frontend (first life)", env, nil, "frontend", "--allow-anonymous", "--addr", addr)
	waitHealthy(t, "http://"+addr)
	url := "http://" + addr + "/mcp"

	status, session, body := legacyPost(t, url, "",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	if status != 200 || session == "" || !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize: HTTP %d session %q %s", status, session, body)
	}
	first.stop(t)
	start(t, "frontend (restarted)", env, nil, "frontend", "--allow-anonymous", "--addr", addr)
	waitHealthy(t, "http://"+addr)

	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ida"}}}`
	for _, u := range []string{url, urls[0]} {
		status, _, body = legacyPost(t, u, session, call)
		var res struct {
			Result proto.CallToolResult `json:"result"`
		}
		if status != 200 || json.Unmarshal([]byte(body), &res) != nil || len(res.Result.Content) != 1 ||
			res.Result.Content[0].Text != "Hello, Ida!" {
			t.Fatalf("tools/call at %s after the restart: HTTP %d %s", u, status, body)
		}
	}
}

// sseMessages reads an SSE body: each event's id and data, until the body
// ends or stop returns true.
func sseMessages(t *testing.T, body io.Reader, stop func(id, data string) bool) {
	t.Helper()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var id, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if (id != "" || data != "") && stop(id, data) {
				return
			}
			id, data = "", ""
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data:"):
			data = strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		}
	}
}

// TestLegacyResumeAcrossFrontEnds: a held 2025-11-25 tools/call whose
// stream breaks keeps running; the client resumes it with GET and
// Last-Event-ID on the other front end process and gets its result.
func TestLegacyResumeAcrossFrontEnds(t *testing.T) {
	b := redistest.Real(t)
	urls := startCluster(t, b, 2, 1)
	_, session, body := legacyPost(t, urls[0], "",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	if session == "" {
		t.Fatalf("initialize: %s", body)
	}
	ctx, breakStream := context.WithCancel(within(t))
	call := `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"slow_compute","arguments":{"seconds":3,"label":"r"},"_meta":{"progressToken":"p"}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, urls[0], strings.NewReader(call))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("MCP-Protocol-Version", proto.LegacyVersion)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	sseMessages(t, res.Body, func(id, data string) bool { // up to the first progress the tool reported
		last = id
		return strings.Contains(data, "1s of 3s")
	})
	breakStream()
	res.Body.Close()
	if last == "" {
		t.Fatal("the held call's stream ended without an event id")
	}

	get, _ := http.NewRequestWithContext(within(t), http.MethodGet, urls[1], nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", session)
	get.Header.Set("Last-Event-ID", last)
	res, err = http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("resume: HTTP %d", res.StatusCode)
	}
	var final string
	sseMessages(t, res.Body, func(_, data string) bool {
		if strings.Contains(data, `"id":"c1"`) {
			final = data
			return true
		}
		return false
	})
	var out struct {
		Result proto.CallToolResult `json:"result"`
	}
	if json.Unmarshal([]byte(final), &out) != nil || len(out.Result.Content) != 1 || out.Result.Content[0].Text != `Computed "r" in 3s` {
		t.Fatalf("resumed call answered %q, want its result", final)
	}
}

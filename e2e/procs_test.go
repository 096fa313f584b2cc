package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

// mcpqBin is the binary built once for the whole package.
var mcpqBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpq-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mcpqBin = filepath.Join(dir, "mcpq")
	build := exec.Command("go", "build", "-o", mcpqBin, "github.com/mcpq/mcpq/cmd/mcpq")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build mcpq:", err)
		os.Exit(1)
	}
	code := m.Run()
	redistest.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running mcpq process whose output goes to the test log on failure.
type proc struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder
	done chan struct{}
}

// startFrontend runs an anonymous front end (`mcpq frontend` with env and
// the extra flags args) on a port of its own, waits until it is healthy
// and returns its MCP URL.
func startFrontend(t *testing.T, env []string, args ...string) string {
	t.Helper()
	return startListening(t, "frontend", env, "frontend listening", append([]string{"frontend", "--allow-anonymous"}, args...)...)
}

// startListening runs mcpq with args and env on 127.0.0.1:0 (--addr) and
// returns the MCP URL from the first line of its output that says marker
// (`mcpq dev`'s "MCP URL: ", the front end's "frontend listening" log line)
// once the server is healthy. The kernel picks the port as the server
// binds it: a port picked free beforehand can be taken, as any
// connection's local port, before the server binds it.
func startListening(t *testing.T, name string, env []string, marker string, args ...string) string {
	t.Helper()
	urls := make(chan string, 1)
	start(t, name, env, func(line string) {
		if !strings.Contains(line, marker) {
			return
		}
		if i := strings.Index(line, "http://"); i >= 0 {
			u, _, _ := strings.Cut(line[i:], " ")
			select {
			case urls <- u:
			default:
			}
		}
	}, append(args, "--addr", "127.0.0.1:0")...)
	select {
	case u := <-urls:
		waitHealthy(t, strings.TrimSuffix(u, "/mcp"))
		return u
	case <-time.After(60 * time.Second):
		t.Fatalf("%s printed no MCP URL within 60s", name)
		return ""
	}
}

// start runs mcpq with args and env; lines of output go to onLine too.
func start(t *testing.T, name string, env []string, onLine func(string), args ...string) *proc {
	t.Helper()
	return startBin(t, mcpqBin, name, env, onLine, args...)
}

// startBin runs the binary bin as start runs mcpq.
func startBin(t *testing.T, bin, name string, env []string, onLine func(string), args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if onLine != nil {
				onLine(sc.Text())
			}
		}
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop sends SIGTERM and requires a clean exit: mcpq shuts down in order.
func (p *proc) stop(t *testing.T) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	errc := make(chan error, 1)
	go func() { errc <- p.cmd.Wait() }()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("%s did not exit cleanly on SIGTERM: %v", p.name, err)
		}
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Errorf("%s did not stop within 30s of SIGTERM", p.name)
	}
	<-p.done
	if t.Failed() {
		p.mu.Lock()
		t.Logf("--- %s output ---\n%s", p.name, p.out.String())
		p.mu.Unlock()
	}
}

// waitHealthy waits for GET /readyz to answer 200: the front end reaches
// Redis and can read the catalog (/healthz only says the process is up).
func waitHealthy(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/readyz not ready within 30s: %v", base, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startDev runs `mcpq dev --fixtures conformance` and returns its MCP URL,
// read from the line it prints.
func startDev(t *testing.T) string {
	t.Helper()
	return startListening(t, "mcpq dev", nil, "MCP URL: ", "dev", "--fixtures", "conformance")
}

// startCluster runs frontends and workers as separate processes on a real
// redis-server and returns the front ends' MCP URLs.
func startCluster(t *testing.T, b *redistest.Backend, frontends, workers int) []string {
	t.Helper()
	env := []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix}
	for i := range workers {
		start(t, fmt.Sprintf("worker %d", i), env, nil, "worker", "--fixtures", "conformance")
	}
	var urls []string
	for i := range frontends {
		urls = append(urls, startListening(t, fmt.Sprintf("frontend %d", i), env, "frontend listening",
			"frontend", "--allow-anonymous"))
	}
	waitCatalog(t, urls[0], "greet")
	return urls
}

// waitCatalog waits until the workers' catalog lists tool: workers publish
// it when they start, independently of the front ends.
func waitCatalog(t *testing.T, url, tool string) {
	t.Helper()
	c := &client.Client{URL: url}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var r proto.ListToolsResult
		if err := c.Call(context.Background(), proto.MethodToolsList, "", nil, &r); err == nil {
			for _, tl := range r.Tools {
				if tl.Name == tool {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("tool %s not in the catalog within 30s", tool)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// within is a failure bound for waits in these tests, not a speed check.
func within(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

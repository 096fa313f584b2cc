package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Private is a redis-server of one test's own, which the test may kill and
// start again on the same port, as in a Redis crash and restart. Its append
// only file is synced on every write, so the data survives a kill.
type Private struct {
	// Backend is connected to the server (the client reconnects by itself
	// after a restart).
	*Backend
	bin  string
	dir  string
	port int
	cmd  *exec.Cmd
}

// StartPrivate starts a private redis-server, or skips the test (fails
// under MCPQ_REQUIRE_REAL_REDIS=1) when there is none to start. It is
// killed when the test ends.
func StartPrivate(t testing.TB) *Private {
	t.Helper()
	bin := os.Getenv("MCPQ_REDIS_SERVER")
	if bin == "" {
		p, err := exec.LookPath("redis-server")
		if err != nil {
			if os.Getenv("MCPQ_REQUIRE_REAL_REDIS") == "1" {
				t.Fatalf("real redis-server required: %v", err)
			}
			t.Skipf("no redis-server to start: %v", err)
		}
		bin = p
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p := &Private{bin: bin, dir: t.TempDir(), port: port}
	p.Start(t)
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	p.Backend = &Backend{Name: "redis-server", Client: c, Prefix: prefix(), URL: url}
	t.Cleanup(func() {
		c.Close()
		p.Kill(t)
	})
	return p
}

// Start starts the server (again) on its port and waits until it answers
// PING with its data loaded.
func (p *Private) Start(t testing.TB) {
	t.Helper()
	cmd := exec.Command(p.bin, "--port", strconv.Itoa(p.port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "yes", "--appendfsync", "always", "--dir", p.dir, "--daemonize", "no")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the tests
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	p.cmd = cmd
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", p.port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := ping(url) // LOADING fails it too
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on port %d did not answer: %v", p.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill kills the server at once (SIGKILL, no shutdown) and waits for it to
// exit; the port is then free for Start.
func (p *Private) Kill(t testing.TB) {
	t.Helper()
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_, _ = p.cmd.Process.Wait()
	p.cmd = nil
}

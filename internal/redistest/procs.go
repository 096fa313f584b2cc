package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Binary finds a Redis program (redis-server, redis-sentinel) on PATH, or
// skips the test, or fails it under MCPQ_REQUIRE_REAL_REDIS=1.
func Binary(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("MCPQ_REQUIRE_REAL_REDIS") == "1" {
			t.Fatalf("%s required (MCPQ_REQUIRE_REAL_REDIS=1): %v", name, err)
		}
		t.Skipf("no %s on PATH: %v", name, err)
	}
	return p
}

// Server is a redis-server (or sentinel) process a test started.
type Server struct {
	// Addr is its loopback host:port.
	Addr string
	// Dir holds its files and log.
	Dir string
	cmd *exec.Cmd
}

// StartServer starts a redis-server on a free loopback port with the
// extra arguments (e.g. "--replicaof", "127.0.0.1", "6379"; "--sentinel"
// with a config file made by the caller as the first argument via
// StartSentinel), waits until it answers PING and stops it when the test
// ends.
func StartServer(t testing.TB, extra ...string) *Server {
	t.Helper()
	bin := Binary(t, "redis-server")
	dir := t.TempDir()
	return startProc(t, dir, func(port int) []string {
		return append([]string{bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
			"--appendonly", "no", "--dir", dir, "--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log")}, extra...)
	})
}

// StartSentinel starts a Redis Sentinel monitoring the primary at
// primaryAddr under master, with quorum 2 and short failure timeouts, and
// stops it when the test ends. It runs redis-sentinel, or where only
// redis-server is installed (Debian ships redis-sentinel apart),
// redis-server --sentinel, the same program.
func StartSentinel(t testing.TB, master, primaryAddr string) *Server {
	t.Helper()
	var argv0 []string
	if p, err := exec.LookPath("redis-sentinel"); err == nil {
		argv0 = []string{p}
	} else {
		argv0 = []string{Binary(t, "redis-server")}
	}
	dir := t.TempDir()
	host, port, _ := strings.Cut(primaryAddr, ":")
	return startProc(t, dir, func(p int) []string {
		conf := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\n"+
			"sentinel monitor %s %s %s 2\nsentinel down-after-milliseconds %s 1000\n"+
			"sentinel failover-timeout %s 10000\nsentinel parallel-syncs %s 1\n",
			p, dir, filepath.Join(dir, "sentinel.log"), master, host, port, master, master, master)
		path := filepath.Join(dir, "sentinel.conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		if len(argv0) == 1 && filepath.Base(argv0[0]) == "redis-server" {
			return []string{argv0[0], path, "--sentinel"}
		}
		return append(argv0, path)
	})
}

// startProc runs the command args(port) on a free port (retrying a port
// another process took meanwhile) until it answers PING.
func startProc(t testing.TB, dir string, args func(port int) []string) *Server {
	t.Helper()
	var lastErr error
	name := ""
	for range 5 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		argv := args(port)
		name = filepath.Base(argv[0])
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the tests
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), Dir: dir, cmd: cmd}
		if lastErr = waitPing(s.Addr, exited); lastErr == nil {
			t.Cleanup(func() { s.Kill(); <-exited })
			return s
		}
		s.Kill()
		<-exited
	}
	t.Fatalf("%s did not start: %v", name, lastErr)
	return nil
}

func waitPing(addr string, exited <-chan struct{}) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		switch {
		case err == nil:
			return nil
		case time.Now().After(deadline):
			return err
		}
		select {
		case <-exited:
			return fmt.Errorf("exited: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Kill stops the process at once (SIGKILL), as a crash would.
func (s *Server) Kill() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
	}
}

// Client is a client of this one server; closed when the test ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// StartReplicated starts a primary and n replicas of it and returns them
// once every replica reports its link to the primary up.
func StartReplicated(t testing.TB, n int) (primary *Server, replicas []*Server) {
	t.Helper()
	// Redis waits 5s by default before a full sync, for more replicas to
	// join it.
	primary = StartServer(t, "--repl-diskless-sync-delay", "0")
	host, port, _ := strings.Cut(primary.Addr, ":")
	for range n {
		r := StartServer(t, "--replicaof", host, port, "--repl-diskless-sync-delay", "0")
		replicas = append(replicas, r)
		c := r.Client(t)
		deadline := time.Now().Add(20 * time.Second)
		for {
			info, err := c.Info(context.Background(), "replication").Result()
			if err == nil && strings.Contains(info, "master_link_status:up") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %s never linked to %s: %v %s", r.Addr, primary.Addr, err, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return primary, replicas
}

// Package redistest gives tests the two Redis backends mcpq runs on: an
// in-process miniredis and a real redis-server. Suites that hold the Lua
// scripts to account run against both (miniredis has its own Lua).
//
// The real backend is MCPQ_TEST_REDIS_URL when set; otherwise a
// redis-server from PATH (or MCPQ_REDIS_SERVER) is started once per test
// binary on a free loopback port. When neither is possible the real
// backend is skipped, unless MCPQ_REQUIRE_REAL_REDIS=1 (scripts/test sets
// it), which makes that a failure.
//
// A third backend, a Redis Cluster, joins Each when
// MCPQ_TEST_REDIS_CLUSTER_URL is set (a redis+cluster:// URL, see
// docs/redis.md; scripts/test starts a 3-primary cluster for it). Tests
// that cannot run on a cluster by nature (SELECT, FLUSHDB, miniredis's
// FastForward) skip there with SkipOnCluster.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/redisconn"
)

// Backend is one Redis to test against.
type Backend struct {
	// Name is "miniredis", "redis-server" or "redis-cluster".
	Name string
	// Client is connected to the backend; closed when the test ends. On
	// the cluster backend it is a *redis.ClusterClient.
	Client redis.UniversalClient
	// Prefix is a key prefix unique to the test, so tests can share a server.
	Prefix string
	// Mini is the miniredis (nil for redis-server), for FastForward.
	Mini *miniredis.Miniredis
	// URL is a URL other processes can use as REDIS_URL (redis:// or,
	// on the cluster backend, redis+cluster://).
	URL string
	// Cluster is set on the Redis Cluster backend.
	Cluster bool
}

// Each runs fn as a subtest against miniredis and against a real redis-server.
func Each(t *testing.T, fn func(t *testing.T, b *Backend)) {
	t.Helper()
	t.Run("miniredis", func(t *testing.T) { fn(t, Mini(t)) })
	t.Run("redis-server", func(t *testing.T) { fn(t, Real(t)) })
	if os.Getenv(clusterEnv) != "" {
		t.Run("redis-cluster", func(t *testing.T) { fn(t, Cluster(t)) })
	}
}

const clusterEnv = "MCPQ_TEST_REDIS_CLUSTER_URL"

// Cluster returns the Redis Cluster backend at MCPQ_TEST_REDIS_CLUSTER_URL,
// or skips when it is not set. A set URL that does not answer fails.
func Cluster(t testing.TB) *Backend {
	t.Helper()
	url := os.Getenv(clusterEnv)
	if url == "" {
		t.Skipf("no Redis Cluster: set %s (scripts/test does)", clusterEnv)
	}
	c, err := redisconn.Connect(url)
	if err != nil {
		t.Fatalf("%s: %v", clusterEnv, err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("Redis Cluster at %s: %v", url, err)
	}
	return &Backend{Name: "redis-cluster", Client: c, Prefix: prefix(), URL: url, Cluster: true}
}

// SkipOnCluster skips a test on the cluster backend, saying why.
func (b *Backend) SkipOnCluster(t testing.TB, why string) {
	t.Helper()
	if b.Cluster {
		t.Skip("not on a Redis Cluster: " + why)
	}
}

// Mini returns a fresh miniredis backend.
func Mini(t testing.TB) *Backend {
	t.Helper()
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { c.Close() })
	return &Backend{Name: "miniredis", Client: c, Prefix: prefix(), Mini: mr, URL: "redis://" + mr.Addr() + "/0"}
}

// Real returns a real redis-server backend, or skips (fails when required).
func Real(t testing.TB) *Backend {
	t.Helper()
	url, err := realURL()
	if err != nil {
		if os.Getenv("MCPQ_REQUIRE_REAL_REDIS") == "1" {
			t.Fatalf("real redis-server required: %v", err)
		}
		t.Skipf("no real redis-server: %v (set MCPQ_TEST_REDIS_URL or install redis-server)", err)
	}
	c, err := redisconn.Connect(url) // the client mcpq's processes use
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &Backend{Name: "redis-server", Client: c, Prefix: prefix(), URL: url}
}

func prefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:]) + ":"
}

var (
	once    sync.Once
	onceURL string
	onceErr error
)

// realURL finds or starts the real server once per test binary; a started
// server is killed by Stop (Main calls it after the tests).
func realURL() (string, error) {
	once.Do(func() {
		if u := os.Getenv("MCPQ_TEST_REDIS_URL"); u != "" {
			onceURL, onceErr = u, ping(u)
			return
		}
		onceURL, onceErr = startServer()
	})
	return onceURL, onceErr
}

func ping(url string) error {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}

var started *exec.Cmd

func startServer() (string, error) {
	bin := os.Getenv("MCPQ_REDIS_SERVER")
	if bin == "" {
		p, err := exec.LookPath("redis-server")
		if err != nil {
			return "", err
		}
		bin = p
	}
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "mcpq-redis-")
	if err != nil {
		return "", err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", dir, "--daemonize", "no")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the tests
	if err := cmd.Start(); err != nil {
		return "", err
	}
	started = cmd
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ping(url); err == nil {
			return url, nil
		} else if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return "", fmt.Errorf("redis-server did not answer: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills a redis-server this package started. Call it from TestMain
// after m.Run.
func Stop() {
	if started != nil && started.Process != nil {
		_ = started.Process.Kill()
		_, _ = started.Process.Wait()
	}
}

// Main is a TestMain body: run the tests, stop a started server, exit.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// FreePort returns a free loopback TCP port.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Publish publishes payload on channel. On a cluster it goes through the
// primary owning the channel's hash slot: mcpq's channels carry the
// owner's hash tag, so that is the node whose scripts publish on them, and
// a cluster keeps the order of messages only from one node.
func (b *Backend) Publish(ctx context.Context, channel, payload string) error {
	if cc, ok := b.Client.(*redis.ClusterClient); ok {
		node, err := cc.MasterForKey(ctx, channel)
		if err != nil {
			return err
		}
		return node.Publish(ctx, channel, payload).Err()
	}
	return b.Client.Publish(ctx, channel, payload).Err()
}

// NumSub is how many connections are subscribed to channel; on a cluster,
// summed over the primaries (each counts only its own clients).
func (b *Backend) NumSub(ctx context.Context, channel string) (int64, error) {
	cc, ok := b.Client.(*redis.ClusterClient)
	if !ok {
		m, err := b.Client.PubSubNumSub(ctx, channel).Result()
		return m[channel], err
	}
	var mu sync.Mutex
	var n int64
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		m, err := c.PubSubNumSub(ctx, channel).Result()
		mu.Lock()
		n += m[channel]
		mu.Unlock()
		return err
	})
	return n, err
}

// EachReal runs fn as a subtest against the real backends: a redis-server,
// and the Redis Cluster when MCPQ_TEST_REDIS_CLUSTER_URL is set. For
// tests that run mcpq as processes, which miniredis cannot serve across.
func EachReal(t *testing.T, fn func(t *testing.T, b *Backend)) {
	t.Helper()
	t.Run("redis-server", func(t *testing.T) { fn(t, Real(t)) })
	if os.Getenv(clusterEnv) != "" {
		t.Run("redis-cluster", func(t *testing.T) { fn(t, Cluster(t)) })
	}
}

// Keys lists the keys matching pattern; on a cluster, from every primary.
func (b *Backend) Keys(ctx context.Context, pattern string) ([]string, error) {
	cc, ok := b.Client.(*redis.ClusterClient)
	if !ok {
		return b.Client.Keys(ctx, pattern).Result()
	}
	var mu sync.Mutex
	var all []string
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		keys, err := c.Keys(ctx, pattern).Result()
		mu.Lock()
		all = append(all, keys...)
		mu.Unlock()
		return err
	})
	return all, err
}

// RoundTrips is a go-redis hook that counts what a client sends: single
// commands and pipelines, each one round trip.
type RoundTrips struct{ Single, Pipelines atomic.Int64 }

func (r *RoundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *RoundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.Single.Add(1); return next(ctx, cmd) }
}
func (r *RoundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.Pipelines.Add(1); return next(ctx, cmds) }
}

package redisconn_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redisconn"
	"github.com/mcpq/mcpq/internal/redistest"
)

// TestConnectBounded: against a frozen redis-server a bounded client's
// command and pipeline fail with ErrNoAnswer (unavailable) near the
// bound, not after go-redis's retries; the caller's own cancellation
// stays its own; after SIGCONT the client works again.
func TestConnectBounded(t *testing.T) {
	srv := redistest.StartServer(t)
	const bound = 300 * time.Millisecond
	rdb, err := redisconn.ConnectBounded("redis://"+srv.Addr+"/0", bound)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	srv.Freeze()
	defer srv.Thaw()
	start := time.Now()
	err = rdb.Get(ctx, "k").Err()
	if !errors.Is(err, redisconn.ErrNoAnswer) || !redisconn.IsUnavailable(err) {
		t.Errorf("GET on a frozen server: %v, want ErrNoAnswer", err)
	}
	if took := time.Since(start); took > 10*bound {
		t.Errorf("GET on a frozen server took %s with a bound of %s", took, bound)
	}
	pipe := rdb.Pipeline()
	pipe.Get(ctx, "k")
	pipe.Incr(ctx, "n")
	if _, err := pipe.Exec(ctx); !errors.Is(err, redisconn.ErrNoAnswer) {
		t.Errorf("pipeline on a frozen server: %v, want ErrNoAnswer", err)
	}
	cctx, cancel := context.WithTimeout(ctx, bound/3)
	defer cancel()
	if err := rdb.Get(cctx, "k").Err(); err == nil || errors.Is(err, redisconn.ErrNoAnswer) {
		t.Errorf("caller's own deadline reported as %v", err)
	}
	srv.Thaw()
	if v, err := rdb.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Errorf("after SIGCONT: %q %v", v, err)
	}
	if _, err := redisconn.ConnectBounded("redis://"+srv.Addr+"/0", 0); err == nil {
		t.Error("a bound of 0 was accepted")
	}
}

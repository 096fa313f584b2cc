package redisconn_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/redisconn"
	"github.com/mcpq/mcpq/taskstate"
)

// replyError is an error reply as a Redis server (or a proxy) words it.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

func TestIsUnavailable(t *testing.T) {
	// A port nothing listens on: the dial is refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	refused := rdb.Ping(context.Background()).Err()
	closed := redis.NewClient(&redis.Options{Addr: addr})
	closed.Close()

	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connection refused", refused, true},
		{"wrapped refusal", fmt.Errorf("enqueue task x: %w", refused), true},
		{"closed client", closed.Ping(context.Background()).Err(), true},
		{"pool timeout", redis.ErrPoolTimeout, true},
		{"LOADING", replyError("LOADING Redis is loading the dataset in memory"), true},
		{"READONLY", replyError("READONLY You can't write against a read only replica."), true},
		{"MASTERDOWN", replyError("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), true},
		{"CLUSTERDOWN", replyError("CLUSTERDOWN The cluster is down"), true},
		{"TRYAGAIN", replyError("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{"ERR-prefixed LOADING", replyError("ERR LOADING"), true},
		{"NOSCRIPT", replyError("NOSCRIPT No matching script"), false},
		{"WRONGTYPE", replyError("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{"redis.Nil", redis.Nil, false},
		{"not found", taskstate.ErrNotFound, false},
		{"caller cancelled", context.Canceled, false},
		{"caller deadline", fmt.Errorf("get: %w", context.DeadlineExceeded), false},
		{"plain error", errors.New("boom"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "connection refused" && c.err == nil {
				t.Fatal("PING to a closed port succeeded")
			}
			if got := redisconn.IsUnavailable(c.err); got != c.want {
				t.Errorf("IsUnavailable(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}

func TestIsAtCapacity(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"OOM", replyError("OOM command not allowed when used memory > 'maxmemory'."), true},
		{"OOM in a script", fmt.Errorf("create: %w", replyError("ERR Error running script (call to f_x): @user_script:3: OOM command not allowed when used memory > 'maxmemory'.")), true},
		{"LOADING", replyError("LOADING Redis is loading the dataset in memory"), false},
		{"plain error naming OOM", errors.New("OOM command not allowed"), false},
	} {
		if got := redisconn.IsAtCapacity(c.err); got != c.want {
			t.Errorf("%s: IsAtCapacity(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

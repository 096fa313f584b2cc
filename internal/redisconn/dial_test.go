package redisconn_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redisconn"
	"github.com/mcpq/mcpq/internal/redistest"
)

// TestKilledConnectionRetried: a pooled connection the server closed
// while idle (CLIENT KILL, as a restart or a timeout does) is not looked
// at before use (dial.go), and what is sent on it fails on its read and
// is sent again on a new one: a pipeline and a script each answer and
// run once.
func TestKilledConnectionRetried(t *testing.T) {
	b := redistest.Real(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redisconn.Connect(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	kill := func() {
		t.Helper()
		id, err := c.ClientID(ctx).Result() // on the pooled connection the next command takes
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Client.Do(ctx, "CLIENT", "KILL", "ID", strconv.FormatInt(id, 10)).Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // the close reaches this side
	}
	a, z := b.Prefix+"a", b.Prefix+"z"
	kill()
	pipe := c.Pipeline()
	ia, iz := pipe.Incr(ctx, a), pipe.Incr(ctx, z)
	if _, err := pipe.Exec(ctx); err != nil || ia.Val() != 1 || iz.Val() != 1 {
		t.Fatalf("pipeline on a killed connection: %v (%d, %d)", err, ia.Val(), iz.Val())
	}
	kill()
	n, err := c.Eval(ctx, "return redis.call('INCR', KEYS[1])", []string{a}).Int()
	if err != nil || n != 2 {
		t.Fatalf("script on a killed connection: %d, %v", n, err)
	}
	if v, _ := b.Client.Get(ctx, z).Int(); v != 1 {
		t.Fatalf("%s = %d: the pipeline ran more than once", z, v)
	}
}

package frontend_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestRedisAtCapacity: a real redis-server at its maxmemory under
// noeviction refuses writes with OOM; creates and cancels then answer 503
// with Retry-After saying "at capacity", the warning is logged once for
// many requests, and once memory is freed creates succeed again.
func TestRedisAtCapacity(t *testing.T) {
	srv := redistest.StartServer(t, "--maxmemory", "4mb", "--maxmemory-policy", "noeviction")
	b := &redistest.Backend{Name: "redis-server", Client: srv.Client(t), Prefix: "cap:", URL: "redis://" + srv.Addr + "/0"}
	logs := &lockedBuffer{}
	e := newEnv(t, b, func(c *frontend.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	id := e.createTask(toolTaskJob)

	ctx := context.Background()
	chunk := strings.Repeat("x", 1<<10)
	filled := false
	for i := 0; i < 10_000 && !filled; i++ {
		err := b.Client.Set(ctx, "junk:"+strconv.Itoa(i), chunk, 0).Err()
		filled = err != nil && strings.HasPrefix(err.Error(), "OOM")
	}
	if !filled {
		t.Fatal("redis-server never reached its maxmemory")
	}
	// At the limit, used memory moves around it with client buffers; a
	// limit just under what is used keeps every write refused.
	if err := b.Client.ConfigSet(ctx, "maxmemory", "1mb").Err(); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		rpc("t", proto.MethodToolsCall, metaTasks, map[string]any{"name": toolTaskJob, "arguments": map[string]any{"name": "Ada"}}),
		rpc("c", proto.MethodTasksCncl, metaTasks, map[string]any{"taskId": id}),
		rpc("t2", proto.MethodToolsCall, metaTasks, map[string]any{"name": toolTaskJob, "arguments": map[string]any{"name": "Bo"}}),
		rpc("t3", proto.MethodToolsCall, metaTasks, map[string]any{"name": toolTaskJob, "arguments": map[string]any{"name": "Cy"}}),
	} {
		rep := e.post(body)
		if rep.Status != http.StatusServiceUnavailable || rep.Header.Get("Retry-After") == "" {
			t.Fatalf("at maxmemory: HTTP %d Retry-After %q: %s", rep.Status, rep.Header.Get("Retry-After"), rep.Body)
		}
		if msg := str(rep.JSON, "error.message"); !strings.Contains(msg, "at capacity") || !strings.Contains(msg, "retry later") {
			t.Errorf("at maxmemory answered %s", rep.Body)
		}
	}
	if n := strings.Count(logs.String(), "redis at capacity"); n != 1 {
		t.Errorf("4 refused requests logged %d warnings, want 1:\n%s", n, logs)
	}
	if err := b.Client.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil { // the operator raises it
		t.Fatal(err)
	}
	e.publish(fixtureTools("mcpq")...)
	e.createTask(toolTaskJob) // memory freed: served again
}

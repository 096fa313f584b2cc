package frontend_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redisconn"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

// frozenBound is the stated bound (issue 25): while Redis does not
// answer, a request fails within it.
const frozenBound = 3 * time.Second

// TestRedisFrozen: with a real redis-server stopped by SIGSTOP (its
// connections open, nothing answering), requests with a static key and
// with a managed key answer 503 with Retry-After within 3 s, on a client
// made by redisconn.ConnectBounded as mcpq frontend makes it; after
// SIGCONT they are served again.
func TestRedisFrozen(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb, err := redisconn.ConnectBounded("redis://"+srv.Addr+"/0", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	b := &redistest.Backend{Name: "redis-server", Client: rdb, Prefix: "frozen:", URL: "redis://" + srv.Addr + "/0"}
	e := newKeyEnv(t, b, nil)
	managedKey, _, err := e.access.CreateKey(context.Background(), "carol")
	if err != nil {
		t.Fatal(err)
	}
	var id string
	for _, key := range []string{keyAlice, managedKey} {
		rep := e.send(key, rpc(1, proto.MethodToolsCall, metaTasks, map[string]any{"name": toolTaskJob}), nil)
		mustMatch(t, rep, 200, `{"result":{"resultType":"task"}}`)
		id = str(rep.JSON, "result.taskId")
	}

	srv.Freeze()
	defer srv.Thaw()
	for _, key := range []string{keyAlice, managedKey} {
		for _, body := range []string{
			rpc("g", proto.MethodTasksGet, metaTasks, map[string]any{"taskId": id}),
			rpc("t", proto.MethodToolsCall, metaTasks, map[string]any{"name": toolTaskJob}),
			rpc("c", proto.MethodTasksCncl, metaTasks, map[string]any{"taskId": id}),
			rpc("l", proto.MethodToolsList, metaPlain, nil),
		} {
			start := time.Now()
			rep := e.send(key, body, nil)
			took := time.Since(start)
			if rep.Status != http.StatusServiceUnavailable || rep.Header.Get("Retry-After") == "" {
				t.Errorf("frozen Redis: HTTP %d Retry-After %q: %s", rep.Status, rep.Header.Get("Retry-After"), rep.Body)
			}
			if took > frozenBound {
				t.Errorf("frozen Redis: %s answered after %s, more than %s", body[:60], took.Round(time.Millisecond), frozenBound)
			}
		}
	}
	srv.Thaw()
	rep := e.send(managedKey, rpc("g", proto.MethodTasksGet, metaTasks, map[string]any{"taskId": id}), nil)
	mustMatch(t, rep, 200, `{"result":{"taskId":"`+id+`"}}`)
}

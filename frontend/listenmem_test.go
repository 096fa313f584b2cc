package frontend_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// TestListenHoldsNoResults: a listen stream over 20 tasks that end with
// 0.9 MiB results each writes every result and keeps none: while the
// stream is still open the front end's live heap is within 8 MiB of what
// it was before the results (it grew by 18 MiB and more when the stream
// kept each task's last state with its result). On a real redis-server,
// so the results Redis holds are not in this process's heap.
func TestListenHoldsNoResults(t *testing.T) {
	e := newEnv(t, redistest.Real(t), nil)
	e.enq.setHold(true)
	ts := httptest.NewServer(e.h)
	defer ts.Close()
	const tasks = 20
	ids := make([]string, tasks)
	for i := range ids {
		ids[i] = e.createTask(toolTaskJob)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	s := openTaskStream(t, ctx, ts.URL, ids)
	big, _ := json.Marshal(proto.CallToolResult{ResultBase: proto.ResultBase{ResultType: proto.ResultComplete},
		Content: []proto.Content{proto.TextContent(strings.Repeat("r", 900<<10))}})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, id := range ids {
		c, err := e.store.Claim(ctx, ref(id), 0, taskstate.Share{})
		if err != nil {
			t.Fatalf("claim %s: %v", id, err)
		}
		o := taskstate.Outcome{Status: proto.StatusCompleted, StatusMessage: "Completed", Result: big}
		if err := e.store.Finish(ctx, ref(id), c.Attempt, o); err != nil {
			t.Fatalf("finish %s: %v", id, err)
		}
	}
	ended := 0
	s.until(t, ctx, func(_, state string) bool {
		if strings.HasPrefix(state, "completed/") {
			ended++
		}
		return ended == tasks
	})
	s.seen = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 8<<20 {
		t.Errorf("the open stream's front end holds %d MiB more after %d results of 0.9 MiB, more than 8", grew>>20, tasks)
	}
}

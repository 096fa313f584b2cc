package frontend_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate/series"
)

// TestOperatorSeries: GET /v1/ops/series shows, within a flush, what the
// front end counted this minute: tasks created by tool, a cancel request
// and the cancelled end of a task no worker held, a create refused for
// funds, and billing by tool (reserved, and released by the cancel). A
// non-admin gets 403; a window out of range is 400.
func TestOperatorSeries(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		plain := newEnv(t, b, nil)
		var none any
		if code := plain.restGet("/v1/ops/series", &none); code != http.StatusForbidden || none != nil {
			t.Errorf("series as a non-admin: HTTP %d, %v", code, none)
		}
		e := newEnv(t, b, func(c *frontend.Config) {
			c.Billing = true
			c.Admins = []string{frontend.AnonymousPrincipal}
		})
		e.publish(pricedTool())
		e.enq.setHold(true) // queued: no worker holds the tasks, so the cancel ends one here
		if _, err := e.store.Accounts().Credit(context.Background(), frontend.AnonymousPrincipal, 40); err != nil {
			t.Fatal(err)
		}
		queued := str(e.callTool(metaTasks, toolPriced, map[string]any{"frames": 4}).JSON, "result.taskId") // reserves 30
		e.callTool(metaTasks, toolPriced, map[string]any{"frames": 4})                                      // 10 left: refused
		e.callTool(metaTasks, toolPriced, map[string]any{"frames": 0})                                      // reserves the last 10
		mustMatch(t, e.taskRPC(proto.MethodTasksCncl, metaTasks, queued), 200, `{"result":{}}`)

		var v series.View
		deadline := time.Now().Add(10 * time.Second) // a failure bound: the flush runs each second
		for {
			if code := e.restGet("/v1/ops/series?minutes=5", &v); code != 200 {
				t.Fatalf("series: HTTP %d", code)
			}
			if last(v.Series["cancelled"]) == 1 || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if len(v.Series["created"]) != 5 || v.StepMs != 60_000 {
			t.Fatalf("window: %d minutes, step %d", len(v.Series["created"]), v.StepMs)
		}
		for name, want := range map[string]int64{"created": 2, "cancelled": 1, "cancelRequests": 1, "refusals": 1} {
			if got := last(v.Series[name]); got != want {
				t.Errorf("%s this minute = %d, want %d", name, got, want)
			}
		}
		if got := last(v.ByTool[toolPriced]["created"]); got != 2 {
			t.Errorf("%s created %d", toolPriced, got)
		}
		if len(v.Billing) != 1 || v.Billing[0] != (series.ToolBilling{Tool: toolPriced, Reserved: 40, Released: 30, Refused: 1}) {
			t.Errorf("billing by tool %+v", v.Billing)
		}
		for _, q := range []string{"?minutes=0", "?minutes=121", "?minutes=ten"} {
			var bad any
			if code := e.restGet("/v1/ops/series"+q, &bad); code != http.StatusBadRequest {
				t.Errorf("series%s: HTTP %d, want 400", q, code)
			}
		}
	})
}

func last(s []int64) int64 {
	if len(s) == 0 {
		return -1
	}
	return s[len(s)-1]
}

package frontend_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate/events"
)

// TestHeldCallOfExpiredTask: a held call whose task is reaped at its
// deadline (the "expired" event reap.lua publishes) is answered within
// 1 s of it (the bound), not when SyncWaitLimit runs out.
func TestHeldCallOfExpiredTask(t *testing.T) {
	e := newEnv(t, redistest.Mini(t), func(c *frontend.Config) { c.SyncWaitLimit = time.Hour })
	e.enq.setHold(true) // never claimed: only the expiry can end the wait
	body := rpc(3, proto.MethodToolsCall, metaPlain, map[string]any{"name": toolGreet})
	res := make(chan reply, 1)
	go func() {
		res <- e.serve(context.Background(), http.MethodPost, []byte(body), deriveHeaders([]byte(body)))
	}()
	j := e.enq.nextJob(t)
	// Published until the held call answers: it may not have subscribed yet.
	for start := time.Now(); ; {
		if err := e.b.Client.Publish(context.Background(), e.store.Keys().Events(j.Ref), events.Expired).Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case rep := <-res:
			mustMatch(t, rep, 200, `{"id":3,"result":"<absent>","error":{"code":-32603,"message":"~expired"}}`)
			return
		case <-time.After(50 * time.Millisecond):
		}
		if time.Since(start) > time.Second {
			t.Fatal("a held call of an expired task not answered within 1 s")
		}
	}
}

package frontend_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

// TestWaitReplicasNotAcknowledged: a front end asked to wait for more Redis
// replicas than confirm its write answers -32603 "Not replicated" instead
// of the acknowledgement, while the write itself stands (and a created or
// resumed task still gets its job), on every path that acknowledges.
func TestWaitReplicasNotAcknowledged(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		const want = 3 // no backend here has a replica
		e := newEnv(t, b, func(c *frontend.Config) {
			c.WaitReplicas, c.WaitTimeout = want, 10*time.Millisecond
		})
		plain := newEnv(t, b, nil) // a front end that does not wait, on the same Redis and prefix
		notReplicated := func(t *testing.T, rep reply) {
			t.Helper()
			mustMatch(t, rep, 200, `{"error":{"code":-32603}}`)
			msg := str(rep.JSON, "error.message")
			if !strings.HasPrefix(msg, "Not replicated: the change was made") || !strings.Contains(msg, "of 3 Redis replicas") {
				t.Fatalf("error message %q", msg)
			}
			if got, _ := lookup(rep.JSON, "error.data.replicasWanted"); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("error data %v", rep.JSON)
			}
		}

		t.Run("tools/call", func(t *testing.T) {
			rep := e.callTool(metaTasks, toolTaskJob, map[string]any{"n": 1})
			notReplicated(t, rep)
			j := e.enq.nextJob(t) // the task was written, and its job enqueued
			rec, err := e.store.Get(context.Background(), j.Ref)
			if err != nil || rec.Status != proto.StatusWorking || rec.Tool != toolTaskJob {
				t.Fatalf("the task behind the refused acknowledgement: %+v %v", rec, err)
			}
		})
		t.Run("tasks/cancel", func(t *testing.T) {
			id := plain.createTask(toolTaskJob)
			plain.enq.nextJob(t) // claimed: a worker holds it
			notReplicated(t, e.taskRPC(proto.MethodTasksCncl, metaTasks, id))
			rec, err := e.store.Get(context.Background(), ref(id))
			if err != nil || rec.StatusMessage != "Cancelling" {
				t.Fatalf("the cancel request was not written: %+v %v", rec, err)
			}
		})
		t.Run("tasks/update", func(t *testing.T) {
			id := plain.createTask(toolTaskJob)
			plain.park(ref(id), plain.enq.nextJob(t).Attempt, "q")
			notReplicated(t, e.post(rpc("u", proto.MethodTasksUpd, metaTasks, map[string]any{"taskId": id,
				"inputResponses": map[string]any{"q": map[string]any{"action": "accept", "content": map[string]any{"v": 1}}}})))
			if j := e.enq.nextJob(t); j.Ref.ID != id {
				t.Fatalf("resumed job for %s, want %s", j.Ref.ID, id)
			}
			rec, err := e.store.Get(context.Background(), ref(id))
			if err != nil || rec.Status != proto.StatusWorking || len(rec.Answers) != 1 {
				t.Fatalf("the answer was not written: %+v %v", rec, err)
			}
		})
		t.Run("MRTR retry", func(t *testing.T) {
			args := map[string]any{"n": 2}
			state, r := plain.mrtr("", toolSlow, args)
			notReplicated(t, e.send("", retryBody(toolSlow, args, state), nil))
			if j := e.enq.nextJob(t); j.Ref.ID != r.ID {
				t.Fatalf("resumed job for %s, want %s", j.Ref.ID, r.ID)
			}
			rec, err := e.store.Get(context.Background(), r)
			if err != nil || rec.Status != proto.StatusWorking || len(rec.Answers) != 1 {
				t.Fatalf("the answer was not written: %+v %v", rec, err)
			}
		})
	})
}

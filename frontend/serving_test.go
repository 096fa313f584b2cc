package frontend_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate/catalog"
	"github.com/mcpq/mcpq/taskstate/events"
)

// TestNoLiveWorker: tools/list shows only entries a live worker serves; a
// call to a tool no live worker serves is never a silent wait (a sync call,
// or an auto call that cannot become a task, gets an error naming the
// queue; a task is created with a statusMessage naming it); a worker's
// heartbeat brings the tool back, and when its time runs out the tool
// leaves the list, however fresh the cache, and the front end's sweep
// announces it.
func TestNoLiveWorker(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, func(c *frontend.Config) { c.CatalogTTL = time.Hour }) // cached: only the clock hides
		e.enq.setHold(true)
		ctx := context.Background()
		gpu := func(name string, policy proto.Policy) catalog.Entry {
			return catalog.Entry{Tool: proto.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
				Policy: policy, Queue: "gpu"}
		}
		defs := []catalog.Entry{gpu("gpu_sync", proto.PolicySync), gpu("gpu_auto", proto.PolicyAuto),
			gpu("gpu_task", proto.PolicyTask)}
		if err := e.store.Catalog().Publish(ctx, defs); err != nil { // published, no live worker
			t.Fatal(err)
		}
		listed := func() []string {
			rep := e.post(rpc(1, proto.MethodToolsList, metaPlain, nil))
			var names []string
			tools, _ := lookup(rep.JSON, "result.tools")
			for _, tl := range tools.([]any) {
				names = append(names, tl.(map[string]any)["name"].(string))
			}
			return names
		}
		if got := listed(); slices.Contains(got, "gpu_task") || !slices.Contains(got, toolGreet) {
			t.Fatalf("tools/list %v: want the fixtures and no gpu tool", got)
		}
		for _, tc := range []struct{ meta, tool string }{{metaTasks, "gpu_sync"}, {metaPlain, "gpu_auto"}} {
			rep := e.callTool(tc.meta, tc.tool, nil)
			mustMatch(t, rep, 200, `{"error":{"code":-32603,"message":"No worker serves `+tc.tool+
				` now (queue gpu): try again when one is running"}}`)
		}
		id := e.createTask("gpu_task")
		mustMatch(t, e.taskRPC(proto.MethodTasksGet, metaTasks, id), 200, `{"result":{"status":"working",`+
			`"statusMessage":"Queued: waiting for a worker of queue gpu (none serves gpu_task now)"}}`)
		if j := e.enq.nextJob(t); j.Ref.ID != id {
			t.Fatalf("job %+v, want task %s enqueued", j, id)
		}
		rep := e.callTool(metaTasks, "gpu_auto", nil) // a declaring client: a task
		mustMatch(t, rep, 200, `{"result":{"resultType":"task","taskId":"<taskid>"}}`)

		// A worker comes: a call looks the catalog up again at once.
		keys := []string{"gpu_sync", "gpu_auto", "gpu_task"}
		if _, err := e.store.Catalog().Serve(ctx, keys, e.clock.Now().Add(15*time.Second)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond) // past the catalog's minimum reload interval (not a pass/fail timing)
		id = e.createTask("gpu_task")
		mustMatch(t, e.taskRPC(proto.MethodTasksGet, metaTasks, id), 200, `{"result":{"statusMessage":"Queued"}}`)
		if got := listed(); !slices.Contains(got, "gpu_task") || !slices.Contains(got, "gpu_sync") {
			t.Fatalf("tools/list %v: want the gpu tools back", got)
		}

		lists, err := events.NewHub(b.Client).Subscribe(ctx, e.store.Catalog().Keys().Lists())
		if err != nil {
			t.Fatal(err)
		}
		defer lists.Close()
		e.clock.Advance(16 * time.Second)                      // the worker's time runs out
		if got := listed(); slices.Contains(got, "gpu_task") { // from the cache; sweeps
			t.Fatalf("tools/list %v after the worker's time ran out", got)
		}
		rep = e.callTool(metaTasks, "gpu_sync", nil)
		mustMatch(t, rep, 200, `{"error":{"code":-32603}}`)
		select {
		case got := <-lists.C:
			if got != catalog.ListTools {
				t.Fatalf("Lists got %q", got)
			}
		case <-time.After(waitBound):
			t.Fatal("no tools list change announced")
		}
	})
}

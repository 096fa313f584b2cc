package frontend_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate/billing"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

// toolPriced is a held task tool that reserves 10 + 5 per frame.
const toolPriced = "render_priced"

func pricedTool() catalog.Entry {
	return catalog.Entry{Tool: proto.Tool{Name: toolPriced, InputSchema: json.RawMessage(
		`{"type":"object","properties":{"frames":{"type":"integer"}}}`)},
		Policy: proto.PolicyTask, Queue: "mcpq", Price: &proto.Price{Base: 10, PerArgument: map[string]int64{"frames": 5}}}
}

// rest GETs path from the REST API as the anonymous caller and decodes it.
func (e *env) restGet(path string, out any) int {
	e.t.Helper()
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, httptest.NewRequestWithContext(context.Background(), http.MethodGet, "http://localhost"+path, nil))
	if w.Code == http.StatusOK {
		if err := json.Unmarshal(w.Body.Bytes(), out); err != nil {
			e.t.Fatalf("GET %s: %v\n%s", path, err, w.Body)
		}
	}
	return w.Code
}

// TestBillingCalls: with billing on, a priced call reserves its computed
// ceiling with its task, a call the balance does not cover is a tool error
// that says what it needed and leaves no task and no job, the finished task
// carries its receipt (result _meta and REST view), and the account and
// ledger are served to their owner. With billing off nothing is reserved.
func TestBillingCalls(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, func(c *frontend.Config) { c.Billing = true })
		e.publish(pricedTool())
		ctx := context.Background()

		rep := e.callTool(metaTasks, toolPriced, map[string]any{"frames": 4})
		mustMatch(t, rep, 200, `{"result":{"resultType":"complete","isError":true,
			"_meta":{"io.mcpq/funds":{"needed":30,"available":0}}}}`)
		select {
		case j := <-e.enq.jobs:
			t.Fatalf("a refused call enqueued a job: %+v", j)
		default:
		}
		var tasks struct {
			Tasks []proto.Task `json:"tasks"`
		}
		if e.restGet("/v1/tasks", &tasks); len(tasks.Tasks) != 0 {
			t.Fatalf("a refused call left tasks: %+v", tasks)
		}

		if _, err := e.store.Accounts().Credit(ctx, frontend.AnonymousPrincipal, 100); err != nil {
			t.Fatal(err)
		}
		id := str(e.callTool(metaTasks, toolPriced, map[string]any{"frames": 4}).JSON, "result.taskId")
		if id == "" {
			t.Fatal("no task")
		}
		var acct billing.Account
		if e.restGet("/v1/account", &acct); acct.Balance != 70 || acct.Reserved != 30 || acct.Available != 70 {
			t.Fatalf("account after the call: %+v", acct)
		}
		if e.enq.nextJob(t).Ref.ID != id {
			t.Fatal("the job is not the task's")
		}
		if _, _, err := e.store.Meter(ctx, ref(id), 1, 12); err != nil {
			t.Fatal(err)
		}
		e.finish(id, outcomeFor(toolGreet, json.RawMessage(`{"name":"Ada"}`)))
		rep = e.taskRPC(proto.MethodTasksGet, metaTasks, id)
		mustMatch(t, rep, 200, `{"result":{"status":"completed","result":{"content":[{"type":"text","text":"Hello, Ada!"}],
			"_meta":{"io.mcpq/receipt":{"reserved":30,"charged":12,"released":18,"usage":12}}}}}`)
		var view struct {
			Receipt billing.Receipt `json:"receipt"`
		}
		if e.restGet("/v1/tasks/"+id, &view); view.Receipt.Charged != 12 || len(view.Receipt.Entries) != 2 {
			t.Fatalf("REST view receipt: %+v", view.Receipt)
		}
		var page struct {
			Entries    []proto.LedgerEntry `json:"entries"`
			NextCursor string              `json:"nextCursor"`
		}
		if e.restGet("/v1/ledger?limit=2", &page); len(page.Entries) != 2 || page.Entries[0].Kind != "credit" ||
			page.Entries[1].Kind != "reserve" || page.NextCursor != page.Entries[1].ID {
			t.Fatalf("ledger page 1: %+v", page)
		}
		cursor := page.NextCursor
		page.Entries, page.NextCursor = nil, ""
		if e.restGet("/v1/ledger?cursor="+cursor, &page); len(page.Entries) != 1 || page.Entries[0].Kind != "settle" ||
			page.Entries[0].ID != view.Receipt.Entries[1] || page.NextCursor != "" {
			t.Fatalf("ledger page 2: %+v", page)
		}
		for _, q := range []string{"/v1/ledger?limit=0", "/v1/ledger?limit=x", "/v1/ledger?limit=501", "/v1/tasks?limit=0", "/v1/tasks?limit=501"} {
			if code := e.restGet(q, &page); code != http.StatusBadRequest {
				t.Errorf("GET %s: HTTP %d, want 400", q, code)
			}
		}
		if code := e.restGet("/v1/ledger?cursor=nope", &page); code != http.StatusBadRequest {
			t.Fatalf("bad cursor: HTTP %d", code)
		}

		off := newEnv(t, b, nil)
		id = str(off.callTool(metaTasks, toolPriced, map[string]any{"frames": 4}).JSON, "result.taskId")
		if id == "" {
			t.Fatal("billing off: no task")
		}
		if e.restGet("/v1/account", &acct); acct.Reserved != 0 || acct.Balance != 88 {
			t.Fatalf("billing off reserved: %+v", acct)
		}
	})
}

// TestIdempotencyKey: a retried tools/call with the same key (header or
// _meta) answers the first call's task and reserves nothing again; the
// same key with other arguments is another call; header and _meta must
// agree.
func TestIdempotencyKey(t *testing.T) {
	e := newEnv(t, redistest.Mini(t), func(c *frontend.Config) { c.Billing = true })
	e.publish(pricedTool())
	if _, err := e.store.Accounts().Credit(context.Background(), frontend.AnonymousPrincipal, 60); err != nil {
		t.Fatal(err)
	}
	call := func(key string, frames int, metaKey string) reply {
		body := rpc(1, proto.MethodToolsCall, metaTasks, map[string]any{"name": toolPriced, "arguments": map[string]any{"frames": frames}})
		if metaKey != "" {
			var m map[string]any
			_ = json.Unmarshal([]byte(body), &m)
			meta := m["params"].(map[string]any)["_meta"].(map[string]any)
			meta[proto.MetaIdempotencyKey] = metaKey
			b, _ := json.Marshal(m)
			body = string(b)
		}
		h := deriveHeaders([]byte(body))
		if key != "" {
			h.Set("Idempotency-Key", key)
		}
		return e.serve(context.Background(), http.MethodPost, []byte(body), h)
	}
	first := str(call("k1", 4, "").JSON, "result.taskId")
	again := str(call("k1", 4, "").JSON, "result.taskId")
	viaMeta := str(call("", 4, "k1").JSON, "result.taskId")
	if first == "" || again != first || viaMeta != first {
		t.Fatalf("tasks %q %q %q: a retry made another", first, again, viaMeta)
	}
	var acct billing.Account
	if e.restGet("/v1/account", &acct); acct.Reserved != 30 {
		t.Fatalf("reserved %d after retries, want 30", acct.Reserved)
	}
	if other := str(call("k1", 2, "").JSON, "result.taskId"); other == "" || other == first {
		t.Fatalf("other arguments, same key: %q", other)
	}
	mustMatch(t, call("k1", 4, "k2"), 200, `{"error":{"code":-32602}}`)
}

// TestBillingRefusalLeavesNoJob: with the default enqueuer the job goes
// to Redis with the record in one round trip; when the record is refused
// for funds (or an idempotency key answers another task) that job is
// deleted, so no job is left without its record and reservation.
func TestBillingRefusalLeavesNoJob(t *testing.T) {
	b := redistest.Mini(t)
	e := newEnv(t, b, func(c *frontend.Config) { c.Billing, c.Enqueuer = true, nil })
	e.publish(pricedTool())
	jobs := queue.NewClient(b.Client, queue.Options{Prefix: b.Prefix})
	pending := func() []string {
		t.Helper()
		ids, err := jobs.Pending(context.Background(), "mcpq") // asynq's list and the principals' (fair queues)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	mustMatch(t, e.callTool(metaTasks, toolPriced, map[string]any{"frames": 4}), 200, `{"result":{"isError":true}}`)
	if ids := pending(); len(ids) != 0 {
		t.Fatalf("jobs left by a refused call: %v", ids)
	}
	if _, err := e.store.Accounts().Credit(context.Background(), frontend.AnonymousPrincipal, 100); err != nil {
		t.Fatal(err)
	}
	id := str(e.callTool(metaTasks, toolPriced, map[string]any{"frames": 4}).JSON, "result.taskId")
	if ids := pending(); len(ids) != 1 || !strings.HasPrefix(ids[0], id) {
		t.Fatalf("pending jobs %v, want the one of task %s", ids, id)
	}
}

// TestIdempotencyKeyCanonical: the same key with the same arguments
// serialised another way (member order, whitespace, 30.0 or 3e1 for 30,
// \u0041 for A) answers the first call's task; other arguments, and
// integers that differ only beyond a double's precision, are other calls.
func TestIdempotencyKeyCanonical(t *testing.T) {
	e := newEnv(t, redistest.Mini(t), nil)
	call := func(args string) string {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + toolTaskJob +
			`","arguments":` + args + `,"_meta":` + metaTasks + `}}`
		h := deriveHeaders([]byte(body))
		h.Set("Idempotency-Key", "canon-1")
		rep := e.serve(context.Background(), http.MethodPost, []byte(body), h)
		id := str(rep.JSON, "result.taskId")
		if id == "" {
			t.Fatalf("%s: no task: %s", args, rep.Body)
		}
		return id
	}
	first := call(`{"name":"A","n":30,"o":{"x":1,"y":[1,2]}}`)
	for _, args := range []string{
		`{ "o" : { "y" : [ 1 , 2 ] , "x" : 1 } , "n" : 30 , "name" : "A" }`,
		`{"name":"\u0041","n":30.0,"o":{"x":1,"y":[1,2]}}`,
		`{"n":3e1,"name":"A","o":{"y":[1E0,2.00],"x":10e-1}}`,
	} {
		if got := call(args); got != first {
			t.Errorf("%s answered task %s, want the first call's %s", args, got, first)
		}
	}
	for _, args := range []string{
		`{"name":"A","n":31,"o":{"x":1,"y":[1,2]}}`,
		`{"name":"a","n":30,"o":{"x":1,"y":[1,2]}}`,
		`{"name":"A","n":30,"o":{"x":1,"y":[2,1]}}`,
	} {
		if got := call(args); got == first {
			t.Errorf("%s answered the first call's task", args)
		}
	}
	if a, b := call(`{"name":"A","n":9007199254740993}`), call(`{"name":"A","n":9007199254740992}`); a == b {
		t.Errorf("2^53+1 and 2^53 answered one task %s", a)
	}
}

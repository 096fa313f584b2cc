package frontend_test

// Flows a single recorded exchange cannot express: waits held open across
// a worker's progress, a client that goes away, an injected clock, the
// enqueue path, principals, and a real asynq server as the worker.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
)

const taskNotFound = `{"error":{"<exact>":true,"code":-32602,"message":"Failed to retrieve task: Task not found"}}`

// await receives one reply, failing after waitBound.
func await(t *testing.T, c <-chan reply) reply {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(waitBound):
		t.Fatal("no reply")
		return reply{}
	}
}

// TestCreateThenGet: a task tool answers a CreateTaskResult only once the
// record is durable, so tasks/get at once agrees with it; the job goes to
// asynq under the task's id, on the tool's queue, bounded by the TTL.
func TestCreateThenGet(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, nil)
		e.enq.setHold(true) // nothing claims it: the record is exactly as created
		rep := e.callTool(metaTasks, toolTaskJob, map[string]any{"n": 1})
		created := e.clock.Now().UTC().Format("2006-01-02T15:04:05.000Z")
		mustMatch(t, rep, 200, `{"id":1,"result":{"<exact>":true,"resultType":"task","taskId":"<taskid>",
			"status":"working","statusMessage":"Queued","createdAt":"`+created+`","lastUpdatedAt":"`+created+`",
			"ttlMs":3600000,"pollIntervalMs":1000,"_meta":"<object>"}}`)
		id := str(rep.JSON, "result.taskId")

		got := e.taskRPC(proto.MethodTasksGet, metaTasks, id)
		mustMatch(t, got, 200, `{"id":"t-1","result":{"<exact>":true,"resultType":"complete","taskId":"`+id+`",
			"status":"working","statusMessage":"Queued","createdAt":"`+created+`","lastUpdatedAt":"`+created+`",
			"ttlMs":3600000,"pollIntervalMs":1000,"_meta":"<object>"}}`)

		// The job's asynq options (id, queue, timeout, retries) are
		// internal/queue's, and tested there.
		if j := e.enq.nextJob(t); j.Job != (frontend.Job{Task: ref(id), Tool: toolTaskJob, Seq: 0, Queue: "mcpq"}) {
			t.Errorf("job %+v, want the first job of task %s of %s on queue mcpq", j.Job, id, toolTaskJob)
		}
		rec, err := e.store.Get(context.Background(), ref(id))
		if err != nil {
			t.Fatal(err)
		}
		if rec.Tool != toolTaskJob || string(rec.Arguments) != `{"n":1}` || rec.Principal != frontend.AnonymousPrincipal {
			t.Errorf("record %s %s %s", rec.Tool, rec.Arguments, rec.Principal)
		}
	})
}

// TestTaskExpiry: a task is served until createdAt+ttlMs and then answers
// exactly like an id that never existed, for tasks/get and tasks/cancel,
// whatever its status.
func TestTaskExpiry(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, nil)
		working := e.createTask(toolTTLShort) // ttlMs 60000
		done := e.createTask(toolTTLShort)
		e.finish(done, outcomeFor(toolGreet, json.RawMessage(`{"name":"Ada"}`)))

		e.clock.Advance(60*time.Second - time.Millisecond)
		mustMatch(t, e.taskRPC(proto.MethodTasksGet, metaTasks, working), 200, `{"result":{"status":"working","ttlMs":60000}}`)
		mustMatch(t, e.taskRPC(proto.MethodTasksGet, metaTasks, done), 200,
			`{"result":{"status":"completed","result":{"content":[{"text":"Hello, Ada!"}]}}}`)

		e.clock.Advance(time.Millisecond)
		for _, id := range []string{working, done} {
			mustMatch(t, e.taskRPC(proto.MethodTasksGet, metaTasks, id), 200, taskNotFound)
			mustMatch(t, e.taskRPC(proto.MethodTasksCncl, metaTasks, id), 200, taskNotFound)
		}
		// The expired record was not touched by the refused cancel.
		old := taskstate.New(b.Client, taskstate.Options{Prefix: b.Prefix,
			Clock: func() time.Time { return e.clock.Now().Add(-time.Second) }})
		if rec, err := old.Get(context.Background(), ref(working)); err != nil || rec.CancelRequested {
			t.Errorf("expired record after cancel: %+v, %v", rec, err)
		}
		if b.Mini != nil { // past the grace, Redis itself drops the record
			b.Mini.FastForward(3 * time.Minute)
			e.clock.Advance(3 * time.Minute)
			if n := b.Client.Exists(context.Background(), e.store.Keys().Task(ref(working))).Val(); n != 0 {
				t.Errorf("record still in Redis after TTL+grace")
			}
			mustMatch(t, e.taskRPC(proto.MethodTasksGet, metaTasks, working), 200, taskNotFound)
		}
	})
}

// TestAutoWaitsForNonDeclaringClient: an auto tool past its budget is
// still answered with the plain result to a client without the extension.
func TestAutoWaitsForNonDeclaringClient(t *testing.T) {
	e := newEnv(t, redistest.Mini(t), nil)
	res := make(chan reply, 1)
	go func() { res <- e.callTool(metaPlain, toolSlow, map[string]any{"name": "Ada"}) }()
	j := e.enq.nextJob(t) // claimed: the call now waits on the task's events
	e.finish(j.Ref.ID, outcomeFor(toolGreet, json.RawMessage(`{"name":"Ada"}`)))
	mustMatch(t, await(t, res), 200, `{"id":1,"result":{"resultType":"complete","taskId":"<absent>",
		"content":[{"type":"text","text":"Hello, Ada!"}]}}`)
}

// TestAutoFailureWithinBudget: a task that fails before the budget ends
// answers the call with its JSON-RPC error.
func TestAutoFailureWithinBudget(t *testing.T) {
	e := newEnv(t, redistest.Mini(t), nil)
	res := make(chan reply, 1)
	go func() { res <- e.callTool(metaPlain, toolSlow, nil) }()
	j := e.enq.nextJob(t)
	e.finish(j.Ref.ID, outcomeFor(toolProtocolError, nil))
	mustMatch(t, await(t, res), 200, `{"id":1,"error":{"code":-32602,"message":"Invalid arguments: boom"}}`)
}

// TestSyncWaitLimit: a call that cannot become a task and outlives
// SyncWaitLimit fails, and its work is cancelled too.
func TestSyncWaitLimit(t *testing.T) {
	tests := []struct {
		name, meta, tool string
		hold             bool // the job is never claimed
		status, message  string
	}{
		{"auto tool, client without the extension", metaPlain, toolSlow, false, "working", "Cancelling"},
		{"sync tool, never claimed", metaPlain, toolGreet, true, "cancelled", "Cancelled"},
		{"sync tool, declaring client", metaTasks, toolGreet, true, "cancelled", "Cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, redistest.Mini(t), func(c *frontend.Config) { c.SyncWaitLimit = 30 * time.Millisecond })
			e.enq.setHold(tt.hold)
			mustMatch(t, e.callTool(tt.meta, tt.tool, nil), 200,
				`{"id":1,"result":"<absent>","error":{"code":-32603,"message":"~(?i)timed out"}}`)
			j := e.enq.nextJob(t)
			rec, err := e.store.Get(context.Background(), j.Ref)
			if err != nil {
				t.Fatal(err)
			}
			if !rec.CancelRequested || string(rec.Status) != tt.status || rec.StatusMessage != tt.message {
				t.Errorf("task after the limit: cancel=%v %s %q, want cancel=true %s %q",
					rec.CancelRequested, rec.Status, rec.StatusMessage, tt.status, tt.message)
			}
		})
	}
}

// TestClientGoneCancelsWork: when the client of a held-open call goes
// away, nobody can receive the result, so the task is cancelled.
func TestClientGoneCancelsWork(t *testing.T) {
	e := newEnv(t, redistest.Mini(t), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := rpc(9, proto.MethodToolsCall, metaPlain, map[string]any{"name": toolSlow})
	res := make(chan reply, 1)
	go func() { res <- e.serve(ctx, http.MethodPost, []byte(body), deriveHeaders([]byte(body))) }()
	j := e.enq.nextJob(t)
	cancel()
	rep := await(t, res)
	if rep.JSON != nil && str(rep.JSON, "result.resultType") != "" {
		t.Errorf("a gone client got a result: %s", rep.Body)
	}
	rec, err := e.store.Get(context.Background(), j.Ref)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.CancelRequested {
		t.Errorf("task not cancelled after the client left: %+v", rec)
	}
}

// TestEnqueueFailure: a job that cannot be enqueued fails the call and
// ends its record failed rather than leaving it working forever; an id
// conflict means the job is already queued and is no failure.
func TestEnqueueFailure(t *testing.T) {
	e := newEnv(t, redistest.Mini(t), nil)
	e.enq.setErr(errors.New("broker down"))
	rep := e.callTool(metaTasks, toolTaskJob, nil)
	if rep.Status >= 400 && rep.Status < 500 {
		t.Errorf("a server-side failure answered HTTP %d", rep.Status)
	}
	mustMatch(t, rep, rep.Status, `{"id":1,"result":"<absent>","error":{"code":-32603,"message":"<string>"}}`)
	if strings.Contains(string(rep.Body), "broker down") {
		t.Errorf("internal error detail leaked to the client: %s", rep.Body)
	}
	j := e.enq.nextJob(t)
	mustMatch(t, e.taskRPC(proto.MethodTasksGet, metaTasks, j.Ref.ID), 200,
		`{"result":{"status":"failed","statusMessage":"Could not be scheduled","result":"<absent>","error":{"code":-32603}}}`)
}

// headerAuth authenticates by the X-Principal header.
type headerAuth struct{}

func (headerAuth) Authenticate(r *http.Request) (string, error) {
	if p := r.Header.Get("X-Principal"); p != "" {
		return p, nil
	}
	return "", errors.New("no principal")
}

// TestPrincipalIsolation: another principal's task answers exactly like
// an unknown id, and its cancel changes nothing; no credentials is 401.
func TestPrincipalIsolation(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, func(c *frontend.Config) { c.Auth = headerAuth{} })
		e.enq.setHold(true)
		as := func(principal, body string) reply {
			h := deriveHeaders([]byte(body))
			if principal != "" {
				h.Set("X-Principal", principal)
			}
			return e.serve(context.Background(), http.MethodPost, []byte(body), h)
		}
		task := func(method, id string) string {
			return rpc("t", method, metaTasks, map[string]any{"taskId": id})
		}
		rep := as("alice", rpc(1, proto.MethodToolsCall, metaTasks, map[string]any{"name": toolTaskJob}))
		mustMatch(t, rep, 200, `{"result":{"resultType":"task"}}`)
		id := str(rep.JSON, "result.taskId")

		mustMatch(t, as("bob", task(proto.MethodTasksGet, id)), 200, taskNotFound)
		mustMatch(t, as("bob", task(proto.MethodTasksCncl, id)), 200, taskNotFound)
		mustMatch(t, as("alice", task(proto.MethodTasksGet, id)), 200, `{"result":{"status":"working","statusMessage":"Queued"}}`)

		rep = as("", task(proto.MethodTasksGet, id))
		mustMatch(t, rep, 401, `{"id":null,"error":{"code":"<int>"}}`)
		if rep.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("401 without WWW-Authenticate")
		}
	})
}

// TestNotificationRunsNothing: a notification is acknowledged and not
// executed, even when it names a tool.
func TestNotificationRunsNothing(t *testing.T) {
	e := newEnv(t, redistest.Mini(t), nil)
	body := rpc(nil, proto.MethodToolsCall, metaTasks, map[string]any{"name": toolTaskJob})
	rep := e.post(body)
	if rep.Status != http.StatusAccepted || len(rep.Body) != 0 {
		t.Fatalf("notification: HTTP %d %q, want 202 and no body", rep.Status, rep.Body)
	}
	if n := len(e.enq.jobs); n != 0 {
		t.Errorf("a notification enqueued %d jobs", n)
	}
}

// TestRepeatedHeader: a routing header given twice is a mismatch.
func TestRepeatedHeader(t *testing.T) {
	e := newEnv(t, redistest.Mini(t), nil)
	body := rpc(5, proto.MethodToolsCall, metaPlain, map[string]any{"name": toolGreet})
	for _, name := range []string{"Mcp-Method", "Mcp-Name", "MCP-Protocol-Version"} {
		h := deriveHeaders([]byte(body))
		h.Add(name, h.Get(name))
		mustMatch(t, e.serve(context.Background(), http.MethodPost, []byte(body), h), 400,
			`{"id":5,"error":{"code":-32020}}`)
	}
}

// TestConcurrentCalls runs calls and task reads side by side (for -race).
func TestConcurrentCalls(t *testing.T) {
	e := newEnv(t, redistest.Mini(t), nil)
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("n%d", i)
			rep := e.post(rpc(i, proto.MethodToolsCall, metaTasks,
				map[string]any{"name": toolGreet, "arguments": map[string]any{"name": name}}))
			if rep.Status != 200 || !strings.Contains(string(rep.Body), `"text":"Hello, `+name+`!"`) {
				t.Errorf("call %d: HTTP %d %s", i, rep.Status, rep.Body)
			}
			rep = e.post(rpc(i, proto.MethodToolsCall, metaTasks, map[string]any{"name": toolTaskJob}))
			id := str(rep.JSON, "result.taskId")
			rep = e.post(rpc(i, proto.MethodTasksGet, metaTasks, map[string]any{"taskId": id}))
			if str(rep.JSON, "result.taskId") != id || id == "" {
				t.Errorf("get %d: %s", i, rep.Body)
			}
		}()
	}
	wg.Wait()
}

// TestQueueWorker plays the worker with mcpq's queue servers on the same
// Redis (internal/queue), with the front end's default Enqueuer.
func TestQueueWorker(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, func(c *frontend.Config) { c.Enqueuer = nil })
		finished := make(chan string, 16)
		hub := events.NewHub(b.Client)
		t.Cleanup(func() { _ = hub.Close() })
		// The fixture queue under the test's prefix: no other test's
		// server can take its jobs.
		srvs, err := queue.Serve(context.Background(), queue.ServeConfig{Redis: b.Client,
			Keys: queue.Keys{Prefix: b.Prefix}, Hub: hub, Groups: []queue.Group{{Queues: []string{"mcpq"}, Concurrency: 4}},
			TaskCheckInterval: 10 * time.Millisecond, ShutdownTimeout: time.Second, Logger: slog.New(slog.DiscardHandler)},
			func(ctx context.Context, j queue.Job) error {
				c, err := e.store.Claim(ctx, j.Ref, j.Seq, taskstate.Share{})
				if err != nil {
					return nil // ended, cancelled or not ours: a no-op
				}
				if err := e.store.Finish(ctx, j.Ref, c.Attempt, outcomeFor(c.Record.Tool, c.Record.Arguments)); err != nil {
					return err
				}
				finished <- j.Ref.ID
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srvs.Stop)

		mustMatch(t, e.callTool(metaPlain, toolGreet, map[string]any{"name": "Ada"}), 200,
			`{"id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"Hello, Ada!"}]}}`)
		<-finished

		id := e.createTask(toolTaskJob)
		select {
		case got := <-finished:
			if got != id {
				t.Fatalf("worker finished %s, want %s", got, id)
			}
		case <-time.After(waitBound):
			t.Fatal("the asynq worker never ran the task")
		}
		mustMatch(t, e.taskRPC(proto.MethodTasksGet, metaTasks, id), 200, `{"result":{"resultType":"complete",
			"status":"completed","result":{"resultType":"complete","content":[{"text":"Hello, Ada!"}]},"error":"<absent>"}}`)
		mustMatch(t, e.taskRPC(proto.MethodTasksCncl, metaTasks, id), 200,
			`{"result":{"<exact>":true,"resultType":"complete","_meta":"<object>"}}`)
	})
}

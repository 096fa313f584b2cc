package e2e

// Process-level acceptance tests of the Tasks extension: `mcpq frontend`
// and `mcpq worker --fixtures conformance` processes on a real
// redis-server, driven through client.Client as a user would.
//
// The conformance fixtures ask for input only from a client that declared
// the elicitation capability, so the clients here declare it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
)

// taskClient is a client of url that declares the Tasks extension and elicitation.
func taskClient(url string) *client.Client {
	return &client.Client{URL: url, Tasks: true,
		Capabilities: proto.ClientCapabilities{Elicitation: json.RawMessage(`{}`)}}
}

// note is one notifications/tasks of a listen stream.
type note struct {
	proto.DetailedTask
	// norm is the params without _meta, for comparing with tasks/get.
	norm map[string]any
}

// listener reads one subscriptions/listen stream of task notifications.
type listener struct {
	ch <-chan client.Message
	id json.RawMessage // the listen request's JSON-RPC id
}

// listenTasks opens subscriptions/listen for ids on url and checks the
// acknowledgement: it comes first, echoes the taskIds and carries the
// listen request's id as subscriptionId.
func listenTasks(t *testing.T, ctx context.Context, url string, ids ...string) *listener {
	t.Helper()
	c := taskClient(url)
	lctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	sub, err := c.Listen(lctx, map[string]any{"taskIds": ids})
	if err != nil {
		t.Fatalf("subscriptions/listen: %v", err)
	}
	l := &listener{ch: sub.C, id: sub.ID}
	if len(l.id) == 0 {
		t.Fatal("the listen request's id was not recorded")
	}
	m := l.read(t, ctx)
	if m.Method != proto.NotifySubscribed {
		t.Fatalf("first message of the listen stream is %s %s, want %s", m.Method, m.Params, proto.NotifySubscribed)
	}
	var ack struct {
		Notifications struct {
			TaskIDs []string `json:"taskIds"`
		} `json:"notifications"`
	}
	fromJSON(t, m.Params, &ack)
	if !reflect.DeepEqual(ack.Notifications.TaskIDs, ids) {
		t.Fatalf("acknowledgement %s: taskIds %v, want %v", m.Params, ack.Notifications.TaskIDs, ids)
	}
	l.checkSubscriptionID(t, m)
	return l
}

func (l *listener) read(t *testing.T, ctx context.Context) client.Message {
	t.Helper()
	select {
	case m, ok := <-l.ch:
		if !ok {
			t.Fatal("the listen stream ended")
		}
		if len(m.ID) > 0 {
			t.Fatalf("the listen stream answered %s %s %v", m.ID, m.Result, m.Error)
		}
		return m
	case <-ctx.Done():
		t.Fatalf("no message on the listen stream: %v", ctx.Err())
	}
	return client.Message{}
}

func (l *listener) checkSubscriptionID(t *testing.T, m client.Message) {
	t.Helper()
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	fromJSON(t, m.Params, &p)
	if got := p.Meta[proto.MetaSubscriptionID]; !bytes.Equal(got, l.id) {
		t.Fatalf("%s carries subscriptionId %s, want the listen request's id %s", m.Method, got, l.id)
	}
}

// next returns the next notifications/tasks, skipping repeats of prev (a
// listener re-reads the record on each event, so two events may show the
// same state).
func (l *listener) next(t *testing.T, ctx context.Context, prev *note) *note {
	t.Helper()
	for {
		m := l.read(t, ctx)
		if m.Method != proto.NotifyTasks {
			t.Fatalf("listen stream sent %s %s, want only %s", m.Method, m.Params, proto.NotifyTasks)
		}
		l.checkSubscriptionID(t, m)
		n := &note{norm: normalize(t, m.Params)}
		fromJSON(t, m.Params, &n.DetailedTask)
		if prev == nil || !reflect.DeepEqual(prev.norm, n.norm) {
			return n
		}
	}
}

// until reads notifications until one has status want; the ones before it
// must have one of the statuses in between.
func (l *listener) until(t *testing.T, ctx context.Context, prev *note, want proto.TaskStatus, between ...proto.TaskStatus) *note {
	t.Helper()
	for {
		n := l.next(t, ctx, prev)
		if n.Status == want {
			return n
		}
		ok := false
		for _, s := range between {
			ok = ok || n.Status == s
		}
		if !ok {
			t.Fatalf("notification with status %s (%s) before %s", n.Status, n.StatusMessage, want)
		}
		prev = n
	}
}

// normalize decodes a task's JSON without _meta and resultType, so a
// notification and a tasks/get answer compare as values.
func normalize(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	fromJSON(t, raw, &m)
	delete(m, "_meta")
	delete(m, "resultType")
	return m
}

// sameAsGet checks that n equals what tasks/get answers now.
func sameAsGet(t *testing.T, ctx context.Context, c *client.Client, n *note) {
	t.Helper()
	var raw json.RawMessage
	if err := c.Call(ctx, proto.MethodTasksGet, n.TaskID, map[string]any{"taskId": n.TaskID}, &raw); err != nil {
		t.Fatalf("tasks/get %s: %v", n.TaskID, err)
	}
	if got := normalize(t, raw); !reflect.DeepEqual(got, n.norm) {
		t.Fatalf("notification %s differs from tasks/get %s", toJSON(t, n.norm), toJSON(t, got))
	}
}

// createTask calls tool and requires a CreateTaskResult.
func createTask(t *testing.T, ctx context.Context, c *client.Client, tool string, args any) *proto.CreateTaskResult {
	t.Helper()
	a, err := c.CallTool(ctx, tool, args)
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	if a.Task == nil || a.Task.ResultType != proto.ResultTask || a.Task.TaskID == "" {
		t.Fatalf("tools/call %s answered %+v, want a task", tool, a)
	}
	return a.Task
}

// waitTask polls tasks/get until ok holds (or the task ended, which must
// satisfy ok too).
func waitTask(t *testing.T, ctx context.Context, c *client.Client, id string, what string, ok func(*proto.GetTaskResult) bool) *proto.GetTaskResult {
	t.Helper()
	for {
		g, err := c.GetTask(ctx, id)
		if err != nil {
			t.Fatalf("tasks/get %s (waiting for %s): %v", id, what, err)
		}
		if ok(g) {
			return g
		}
		if g.Status.Terminal() {
			t.Fatalf("task %s ended %s (%s, %s) while waiting for %s", id, g.Status, g.StatusMessage, g.Result, what)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s: no %s: %v (last %s %q)", id, what, ctx.Err(), g.Status, g.StatusMessage)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func hasStatus(s proto.TaskStatus) func(*proto.GetTaskResult) bool {
	return func(g *proto.GetTaskResult) bool { return g.Status == s }
}

// occupySlot starts a long slow_compute and waits until a worker runs it,
// so a worker with --concurrency 1 takes no other job until it is cancelled.
func occupySlot(t *testing.T, ctx context.Context, c *client.Client) string {
	t.Helper()
	id := createTask(t, ctx, c, "slow_compute", map[string]any{"seconds": 600, "label": "blocker"}).TaskID
	waitTask(t, ctx, c, id, "a worker running it", func(g *proto.GetTaskResult) bool {
		return g.Status == proto.StatusWorking && g.StatusMessage != "Queued"
	})
	return id
}

func cancelTask(t *testing.T, ctx context.Context, c *client.Client, id string) {
	t.Helper()
	ack, err := c.CancelTask(ctx, id)
	if err != nil || ack.ResultType != proto.ResultComplete {
		t.Fatalf("tasks/cancel %s: %+v %v", id, ack, err)
	}
}

// accept is an ElicitResult accepting a form with content.
func accept(content map[string]any) map[string]any {
	return map[string]any{"action": "accept", "content": content}
}

// startTaskCluster runs front ends and one worker process per entry of
// workerArgs (flags added to `worker --fixtures conformance`) on a real
// redis-server; it returns the front ends' MCP URLs and the backend.
func startTaskCluster(t *testing.T, b *redistest.Backend, frontends int, workerArgs ...[]string) ([]string, *redistest.Backend) {
	t.Helper()
	env := []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix}
	for i, extra := range workerArgs {
		start(t, fmt.Sprintf("worker %d", i), env, nil, append([]string{"worker", "--fixtures", "conformance"}, extra...)...)
	}
	var urls []string
	for i := range frontends {
		port, err := redistest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		start(t, fmt.Sprintf("frontend %d", i), env, nil, "frontend", "--allow-anonymous", "--addr", addr)
		waitHealthy(t, "http://"+addr)
		urls = append(urls, "http://"+addr+"/mcp")
	}
	waitCatalog(t, urls[0], "confirm_delete")
	return urls, b
}

// TestTasksAcrossProcesses runs two front ends and one worker process that
// takes one job at a time (--concurrency 1).
func TestTasksAcrossProcesses(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, testTasksAcrossProcesses)
}

func testTasksAcrossProcesses(t *testing.T, b *redistest.Backend) {
	t.Parallel()
	urls, _ := startTaskCluster(t, b, 2, []string{"--concurrency", "1"})

	t.Run("a listener on one front end follows a task created through the other", func(t *testing.T) {
		ctx := within(t)
		ca := taskClient(urls[0])
		cb := taskClient(urls[1])
		// The single worker slot is held while the test looks at a state,
		// so every state it compares with tasks/get holds still.
		blocker := occupySlot(t, ctx, cb)
		task := createTask(t, ctx, cb, "confirm_delete", map[string]any{"filename": "notes.txt"})
		l := listenTasks(t, ctx, urls[0], task.TaskID)

		n := l.next(t, ctx, nil) // the state as of the acknowledgement
		if n.TaskID != task.TaskID || n.Status != proto.StatusWorking || n.CreatedAt != task.CreatedAt {
			t.Fatalf("state at acknowledgement %s, created %s", toJSON(t, n.norm), toJSON(t, task))
		}
		sameAsGet(t, ctx, cb, n)

		cancelTask(t, ctx, cb, blocker)
		n = l.until(t, ctx, n, proto.StatusInputRequired, proto.StatusWorking)
		var req proto.InputRequest
		fromJSON(t, n.InputRequests["confirm"], &req)
		if len(n.InputRequests) != 1 || req.Method != proto.MethodElicit {
			t.Fatalf("inputRequests %s, want one elicitation under confirm", toJSON(t, n.InputRequests))
		}
		sameAsGet(t, ctx, cb, n)

		blocker = occupySlot(t, ctx, cb)
		if _, err := cb.UpdateTask(ctx, task.TaskID, map[string]any{"confirm": accept(map[string]any{"confirm": true})}); err != nil {
			t.Fatalf("tasks/update: %v", err)
		}
		n = l.next(t, ctx, n)
		if n.Status != proto.StatusWorking || n.InputRequests != nil {
			t.Fatalf("after tasks/update: %s, want working without inputRequests", toJSON(t, n.norm))
		}
		sameAsGet(t, ctx, cb, n)

		cancelTask(t, ctx, cb, blocker)
		n = l.until(t, ctx, n, proto.StatusCompleted, proto.StatusWorking)
		if !strings.Contains(string(n.Result), "Deleted notes.txt") {
			t.Fatalf("completed with %s", n.Result)
		}
		sameAsGet(t, ctx, cb, n)
		sameAsGet(t, ctx, ca, n)
	})

	t.Run("a task waiting for input holds no worker slot", func(t *testing.T) {
		ctx := within(t)
		c := taskClient(urls[0])
		insp := asynq.NewInspectorFromRedisClient(b.Client)
		aq := queue.Keys{Prefix: b.Prefix}.Queue(worker.DefaultQueue)
		noJobFor := func(id string) {
			t.Helper()
			active, err := insp.ListActiveTasks(aq)
			if err != nil {
				t.Fatalf("inspector: active jobs of %s: %v", aq, err)
			}
			pending, err := insp.ListPendingTasks(aq)
			if err != nil {
				t.Fatalf("inspector: pending jobs of %s: %v", aq, err)
			}
			for _, info := range append(active, pending...) {
				if ref, _, err := queue.Decode(info.Payload); err == nil && ref.ID == id {
					t.Fatalf("job %s (%s) is %s for the parked task", info.ID, ref.ID, info.State)
				}
			}
			// Jobs waiting by principal (internal/queue/fair.go) are not in asynq's pending list.
			waiting, err := queue.NewClient(b.Client, queue.Options{Prefix: b.Prefix}).Pending(ctx, worker.DefaultQueue)
			if err != nil {
				t.Fatalf("waiting jobs of %s: %v", aq, err)
			}
			for _, jid := range waiting {
				if _, ok := queue.Seq(taskstate.Ref{ID: id}, jid); ok {
					t.Fatalf("job %s waits for the parked task", jid)
				}
			}
		}

		parked := createTask(t, ctx, c, "confirm_delete", map[string]any{"filename": "parked.txt"})
		waitTask(t, ctx, c, parked.TaskID, "input_required", hasStatus(proto.StatusInputRequired))
		noJobFor(parked.TaskID)

		a, err := c.CallTool(ctx, "slow_compute", map[string]any{"seconds": 1, "label": "beside-parked"})
		if err != nil {
			t.Fatalf("tools/call slow_compute: %v", err)
		}
		result := a.Result
		if a.Task != nil {
			g := waitTask(t, ctx, c, a.Task.TaskID, "its end", func(g *proto.GetTaskResult) bool {
				noJobFor(parked.TaskID)
				return g.Status.Terminal()
			})
			if g.Status != proto.StatusCompleted {
				t.Fatalf("slow_compute ended %s %q", g.Status, g.StatusMessage)
			}
			result = &proto.CallToolResult{}
			fromJSON(t, g.Result, result)
		}
		if result == nil || len(result.Content) != 1 || result.Content[0].Text != `Computed "beside-parked" in 1s` {
			t.Fatalf("slow_compute answered %s", toJSON(t, a))
		}
		g, err := c.GetTask(ctx, parked.TaskID)
		if err != nil || g.Status != proto.StatusInputRequired || g.InputRequests["confirm"] == nil {
			t.Fatalf("parked task after slow_compute ran: %+v %v", g, err)
		}
		noJobFor(parked.TaskID)
	})

	t.Run("MRTR, then a task, across front ends", func(t *testing.T) {
		ctx := within(t)
		ca := taskClient(urls[0])
		cb := taskClient(urls[1])
		// Round 1 is an InputRequiredResult when the worker asks within the
		// tool's sync budget; a worker slower than that hands out the task
		// instead, so try a few times rather than let timing decide.
		var in *proto.InputRequiredResult
		for try := 1; in == nil; try++ {
			a, err := ca.CallTool(ctx, "test_tool_with_task", nil)
			switch {
			case err != nil:
				t.Fatalf("round 1: %v", err)
			case a.Input != nil:
				in = a.Input
			case a.Task != nil && try < 5:
				t.Logf("round 1 answered a task (the worker was slower than the sync budget); trying again")
				cancelTask(t, ctx, ca, a.Task.TaskID)
			default:
				t.Fatalf("round 1 answered %s, want input_required", toJSON(t, a))
			}
		}
		var req proto.InputRequest
		fromJSON(t, in.InputRequests["user_name"], &req)
		if in.ResultType != proto.ResultInputRequired || in.RequestState == "" || req.Method != proto.MethodElicit {
			t.Fatalf("round 1: %s", toJSON(t, in))
		}
		answers := map[string]any{"user_name": accept(map[string]any{"name": "Ada"})}

		for name, state := range tamperedStates(in.RequestState) {
			_, _, err := cb.CallToolRetry(ctx, "test_tool_with_task", nil, answers, state)
			var rpc *client.RPCError
			if !errors.As(err, &rpc) || rpc.RPC.Code != proto.CodeInvalidParams {
				t.Fatalf("retry with a %s requestState: %v, want -32602", name, err)
			}
		}

		a, raw, err := cb.CallToolRetry(ctx, "test_tool_with_task", nil, answers, in.RequestState)
		if err != nil {
			t.Fatalf("retry: %v", err)
		}
		if a.Task == nil || a.Task.ResultType != proto.ResultTask || a.Task.Status.Terminal() {
			t.Fatalf("retry answered %s, want a CreateTaskResult", raw)
		}
		for _, k := range []string{"inputRequests", "requestState", "result"} {
			if bytes.Contains(raw, []byte(`"`+k+`"`)) {
				t.Fatalf("CreateTaskResult carries %s: %s", k, raw)
			}
		}
		g := waitTask(t, ctx, ca, a.Task.TaskID, "completed", hasStatus(proto.StatusCompleted))
		if !strings.Contains(string(g.Result), "Hello, Ada! (from a task)") {
			t.Fatalf("result %s does not greet Ada", g.Result)
		}
	})
}

// tamperedStates are variants of a valid requestState that must be refused.
func tamperedStates(state string) map[string]string {
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	dot := strings.LastIndexByte(state, '.')
	return map[string]string{
		"changed payload":   flip(state, dot-2),
		"changed signature": flip(state, len(state)-3),
		"truncated":         state[:dot],
	}
}

package e2e

// In-process integration tests of the Tasks extension: a real front end
// (frontend.New, served by httptest) and a real worker (worker.New with the
// conformance pack and the test tools below) on one miniredis, sharing a
// fake clock that moves only when a test advances it. The worker
// heartbeats and reaps every 20ms of real time, so an advance past a TTL is
// acted on at once.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/internal/toolpack/conformance"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
)

// bound is the failure bound of a single wait on a signal.
const bound = 30 * time.Second

// fakeClock is the time of the front end and the worker; it moves only
// when a test advances it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// syncLog collects the processes' logs, shown when a test fails.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// inproc is a front end and a worker on one miniredis.
type inproc struct {
	b     *redistest.Backend
	clock *fakeClock
	store *taskstate.Store // on the shared clock, for looking at records
	url   string
	c     *client.Client // declares the Tasks extension and elicitation
}

// newInproc starts a worker serving the conformance pack, testTools and
// extra, and a front end, until the test ends.
func newInproc(t *testing.T, extra ...worker.Tool) *inproc {
	t.Helper()
	return newInprocWith(t, nil, extra...)
}

// newInprocWith is newInproc with mod applied to the worker's Config.
func newInprocWith(t *testing.T, mod func(*worker.Config), extra ...worker.Tool) *inproc {
	t.Helper()
	return newInprocSetup(t, mod, nil, extra...)
}

// newInprocSetup is newInprocWith with setup run on the worker before it
// runs (to serve upstream MCP servers, say).
func newInprocSetup(t *testing.T, mod func(*worker.Config), setup func(ctx context.Context, w *worker.Worker) error,
	extra ...worker.Tool) *inproc {
	t.Helper()
	b := redistest.Mini(t)
	e := &inproc{b: b, clock: &fakeClock{t: time.Now().Truncate(time.Millisecond)}}
	e.store = taskstate.New(b.Client, taskstate.Options{Prefix: b.Prefix, Clock: e.clock.Now})
	logs := &syncLog{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := worker.Config{Redis: b.Client, Prefix: b.Prefix, Clock: e.clock.Now,
		TaskCheckInterval: 5 * time.Millisecond, HeartbeatInterval: 20 * time.Millisecond,
		ReapInterval: 20 * time.Millisecond, ShutdownTimeout: 2 * time.Second, Logger: log.With("proc", "worker")}
	if mod != nil {
		mod(&cfg)
	}
	w, err := worker.New(cfg, append(testTools(), extra...)...)
	if err != nil {
		t.Fatalf("worker.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := conformance.Register(ctx, w); err != nil {
		cancel()
		t.Fatalf("conformance.Register: %v", err)
	}
	if setup != nil {
		if err := setup(ctx, w); err != nil {
			cancel()
			t.Fatalf("setup: %v", err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	fe, err := frontend.New(frontend.Config{Redis: b.Client, Prefix: b.Prefix, Clock: e.clock.Now,
		Logger: log.With("proc", "frontend")})
	if err != nil {
		cancel()
		t.Fatalf("frontend.New: %v", err)
	}
	srv := httptest.NewServer(fe.Handler())
	t.Cleanup(func() {
		fe.Drain()
		srv.Close()
		_ = fe.Close()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("worker Run: %v", err)
			}
		case <-time.After(bound):
			t.Errorf("worker Run did not return within %v of its context's end", bound)
		}
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	select {
	case <-w.Ready():
	case err := <-done:
		t.Fatalf("worker Run: %v", err)
	case <-time.After(bound):
		t.Fatal("worker not ready")
	}
	e.url = srv.URL + "/mcp"
	e.c = taskClient(e.url)
	return e
}

// ref is the record's reference of a task the test created.
func (e *inproc) ref(id string) taskstate.Ref {
	return taskstate.Ref{Owner: taskstate.OwnerTag(frontend.AnonymousPrincipal), ID: id}
}

// record reads a task record directly.
func (e *inproc) record(t *testing.T, id string) *taskstate.Record {
	t.Helper()
	rec, err := e.store.Get(context.Background(), e.ref(id))
	if err != nil {
		t.Fatalf("record of %s: %v", id, err)
	}
	return rec
}

// getNorm is tasks/get as a value (without _meta and resultType).
func (e *inproc) getNorm(t *testing.T, ctx context.Context, id string) map[string]any {
	t.Helper()
	var raw json.RawMessage
	if err := e.c.Call(ctx, proto.MethodTasksGet, id, map[string]any{"taskId": id}, &raw); err != nil {
		t.Fatalf("tasks/get %s: %v", id, err)
	}
	return normalize(t, raw)
}

// update calls tasks/update and requires the empty acknowledgement.
func (e *inproc) update(t *testing.T, ctx context.Context, id string, answers map[string]any) {
	t.Helper()
	ack, err := e.c.UpdateTask(ctx, id, answers)
	if err != nil || ack.ResultType != proto.ResultComplete {
		t.Fatalf("tasks/update %s %s: %+v %v", id, toJSON(t, answers), ack, err)
	}
}

// waitGone waits until the reaper removed the task's record and its
// deadline index entry.
func (e *inproc) waitGone(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	keys, ref := e.store.Keys(), e.ref(id)
	for {
		n, err := e.b.Client.Exists(ctx, keys.Task(ref)).Result()
		_, zerr := e.b.Client.ZScore(ctx, keys.Deadlines(ref.Owner), id).Result()
		if err == nil && n == 0 && errors.Is(zerr, redis.Nil) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("record of %s not reaped: %v (exists %d, index %v)", id, ctx.Err(), n, zerr)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// wantNotFound checks that each of tasks/get, tasks/update and
// tasks/cancel answers -32602 "Task not found" for id.
func (e *inproc) wantNotFound(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	calls := map[string]func() error{
		"tasks/get": func() error { _, err := e.c.GetTask(ctx, id); return err },
		"tasks/update": func() error {
			_, err := e.c.UpdateTask(ctx, id, map[string]any{"q": accept(map[string]any{"name": "late"})})
			return err
		},
		"tasks/cancel": func() error { _, err := e.c.CancelTask(ctx, id); return err },
	}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		err := calls[m]()
		var rpc *client.RPCError
		if !errors.As(err, &rpc) || rpc.RPC.Code != proto.CodeInvalidParams ||
			rpc.RPC.Message != "Failed to retrieve task: Task not found" {
			t.Errorf("%s of an expired task: %v, want -32602 Failed to retrieve task: Task not found", m, err)
		}
	}
}

// Test tools, beside the conformance pack.
const (
	toolAskOnce   = "ask_once"   // task, ttl 1m: asks "q", answers "answered <name>"
	toolSlowPoll  = "slow_poll"  // ask_once with pollInterval 8s
	toolTwoRounds = "two_rounds" // task: asks "first", then "second"
	toolExtendTTL = "extend_ttl" // task, ttl 1m: ExtendTTL(hours), then asks "q"
)

// elicitName is an elicitation of a name.
func elicitName(message string) proto.InputRequest {
	return proto.InputRequest{Method: proto.MethodElicit, Params: map[string]any{"message": message,
		"requestedSchema": json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}}
}

// answeredName is the name in an accepted elicitation answer.
func answeredName(raw json.RawMessage) string {
	var a struct {
		Content struct {
			Name string `json:"name"`
		} `json:"content"`
	}
	_ = json.Unmarshal(raw, &a)
	return a.Content.Name
}

func askOnce(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	ans, err := c.Input(ctx, map[string]proto.InputRequest{"q": elicitName("Who?")})
	if err != nil {
		return nil, err
	}
	return worker.TextResult("answered " + answeredName(ans["q"])), nil
}

func testTools() []worker.Tool {
	return []worker.Tool{
		{Name: toolAskOnce, Policy: worker.PolicyTask, TTL: time.Minute, Handler: askOnce},
		{Name: toolSlowPoll, Policy: worker.PolicyTask, PollInterval: 8 * time.Second, Handler: askOnce},
		{Name: toolTwoRounds, Policy: worker.PolicyTask, Handler: func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			first, err := c.Input(ctx, map[string]proto.InputRequest{"first": elicitName("First?")})
			if err != nil {
				return nil, err
			}
			second, err := c.Input(ctx, map[string]proto.InputRequest{"second": elicitName("Second?")})
			if err != nil {
				return nil, err
			}
			return worker.TextResult(fmt.Sprintf("first=%s second=%s", answeredName(first["first"]),
				answeredName(second["second"]))), nil
		}},
		{Name: toolExtendTTL, Policy: worker.PolicyTask, TTL: time.Minute, Handler: func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			var a struct {
				Hours int `json:"hours"`
			}
			if err := c.Bind(&a); err != nil {
				return nil, err
			}
			if err := c.ExtendTTL(ctx, time.Duration(a.Hours)*time.Hour); err != nil {
				return nil, err
			}
			return askOnce(ctx, c)
		}},
	}
}

func sortedKeys(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// park creates a task of tool and waits until it asks for input.
func (e *inproc) park(t *testing.T, ctx context.Context, tool string, args any) *proto.GetTaskResult {
	t.Helper()
	task := createTask(t, ctx, e.c, tool, args)
	return waitTask(t, ctx, e.c, task.TaskID, "input_required", hasStatus(proto.StatusInputRequired))
}

func TestTasksInProcess(t *testing.T) {
	t.Parallel()
	nameAda := accept(map[string]any{"name": "Ada"})
	yes := accept(map[string]any{"confirm": true})

	t.Run("partial answers", func(t *testing.T) {
		for _, order := range [][]string{{"name", "confirm"}, {"confirm", "name"}} {
			t.Run(strings.Join(order, " then "), func(t *testing.T) {
				t.Parallel()
				e, ctx := newInproc(t), within(t)
				answers := map[string]any{"name": nameAda, "confirm": yes}
				g := e.park(t, ctx, "multi_input", nil)
				if got := sortedKeys(g.InputRequests); !reflect.DeepEqual(got, []string{"confirm", "name"}) {
					t.Fatalf("inputRequests keys %v", got)
				}
				e.update(t, ctx, g.TaskID, map[string]any{order[0]: answers[order[0]]})
				g, err := e.c.GetTask(ctx, g.TaskID)
				if err != nil || g.Status != proto.StatusInputRequired || !reflect.DeepEqual(sortedKeys(g.InputRequests), order[1:]) {
					t.Fatalf("after answering %s: %+v %v, want input_required with only %s pending", order[0], g, err, order[1])
				}
				e.update(t, ctx, g.TaskID, map[string]any{order[1]: answers[order[1]]})
				g = waitTask(t, ctx, e.c, g.TaskID, "completed", hasStatus(proto.StatusCompleted))
				if !strings.Contains(string(g.Result), "Hello, Ada! (both inputs received)") {
					t.Fatalf("result %s", g.Result)
				}
			})
		}
	})

	t.Run("duplicate, unknown and stale keys are ignored", func(t *testing.T) {
		bob := accept(map[string]any{"name": "Bob"})
		for _, tc := range []struct {
			name, tool string
			first      map[string]any
			pending    string // the key pending after first
			junk       map[string]any
			last       map[string]any
			want       string
		}{
			{"already answered key", "multi_input", map[string]any{"name": nameAda}, "confirm",
				map[string]any{"name": bob}, map[string]any{"confirm": yes}, "Hello, Ada!"},
			{"unknown key", "multi_input", map[string]any{"name": nameAda}, "confirm",
				map[string]any{"nickname": bob}, map[string]any{"confirm": yes}, "Hello, Ada!"},
			{"answered and unknown keys at once", "multi_input", map[string]any{"name": nameAda}, "confirm",
				map[string]any{"name": bob, "nickname": bob}, map[string]any{"confirm": yes}, "Hello, Ada!"},
			{"key of a previous round", toolTwoRounds, map[string]any{"first": nameAda}, "second",
				map[string]any{"first": bob}, map[string]any{"second": accept(map[string]any{"name": "Eve"})}, "first=Ada second=Eve"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				e, ctx := newInproc(t), within(t)
				id := e.park(t, ctx, tc.tool, nil).TaskID
				e.update(t, ctx, id, tc.first)
				waitTask(t, ctx, e.c, id, tc.pending+" pending", func(g *proto.GetTaskResult) bool {
					return g.Status == proto.StatusInputRequired && reflect.DeepEqual(sortedKeys(g.InputRequests), []string{tc.pending})
				})
				before, answers := e.getNorm(t, ctx, id), e.record(t, id).Answers
				e.clock.Advance(time.Second) // any write would show in lastUpdatedAt
				e.update(t, ctx, id, tc.junk)
				if after := e.getNorm(t, ctx, id); !reflect.DeepEqual(after, before) {
					t.Fatalf("tasks/update %s changed the task:\nbefore %s\nafter  %s", toJSON(t, tc.junk), toJSON(t, before), toJSON(t, after))
				}
				if got := e.record(t, id).Answers; !reflect.DeepEqual(got, answers) {
					t.Fatalf("stored answers changed from %s to %s", toJSON(t, answers), toJSON(t, got))
				}
				e.update(t, ctx, id, tc.last)
				g := waitTask(t, ctx, e.c, id, "completed", hasStatus(proto.StatusCompleted))
				if !strings.Contains(string(g.Result), tc.want) {
					t.Fatalf("result %s, want %q (the first answer, applied once)", g.Result, tc.want)
				}
			})
		}
	})

	t.Run("a parked task cancelled ends cancelled at once", func(t *testing.T) {
		t.Parallel()
		e, ctx := newInproc(t), within(t)
		g := e.park(t, ctx, "confirm_delete", map[string]any{"filename": "a.txt"})
		attempt := e.record(t, g.TaskID).Attempt
		cancelTask(t, ctx, e.c, g.TaskID)
		g, err := e.c.GetTask(ctx, g.TaskID)
		if err != nil || g.Status != proto.StatusCancelled || g.InputRequests != nil || g.Result != nil {
			t.Fatalf("tasks/get right after the cancel ack: %+v %v, want cancelled", g, err)
		}
		if rec := e.record(t, g.TaskID); rec.Attempt != attempt {
			t.Fatalf("attempt %d after the cancel, was %d: a worker ran the task", rec.Attempt, attempt)
		}
	})

	t.Run("answers after a cancel change nothing", func(t *testing.T) {
		t.Parallel()
		e, ctx := newInproc(t), within(t)
		id := e.park(t, ctx, "confirm_delete", map[string]any{"filename": "b.txt"}).TaskID
		cancelTask(t, ctx, e.c, id)
		before := e.getNorm(t, ctx, id)
		e.clock.Advance(time.Second)
		e.update(t, ctx, id, map[string]any{"confirm": yes})
		if after := e.getNorm(t, ctx, id); !reflect.DeepEqual(after, before) || after["status"] != string(proto.StatusCancelled) {
			t.Fatalf("tasks/update after cancel:\nbefore %s\nafter  %s", toJSON(t, before), toJSON(t, after))
		}
		if rec := e.record(t, id); len(rec.Answers) != 0 || rec.Resumes != 0 {
			t.Fatalf("record after the update: answers %s, resumes %d", toJSON(t, rec.Answers), rec.Resumes)
		}
	})

	t.Run("expiry while working stops the handler", func(t *testing.T) {
		never := time.Hour // an interval that does not come up during the test
		for _, tc := range []struct {
			name string
			mod  func(*worker.Config)
			reap bool // the reaper runs, so the record goes
		}{
			{"heartbeat and reaper", nil, true},
			{"heartbeat alone", func(c *worker.Config) { c.ReapInterval = never }, false},
			{"reaper alone", func(c *worker.Config) { c.HeartbeatInterval = never }, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				expiryWhileWorking(t, tc.mod, tc.reap)
			})
		}
	})

	t.Run("expiry while parked", func(t *testing.T) {
		t.Parallel()
		e, ctx := newInproc(t), within(t)
		id := e.park(t, ctx, toolAskOnce, nil).TaskID
		e.clock.Advance(2 * time.Minute)
		e.wantNotFound(t, ctx, id)
		e.waitGone(t, ctx, id)
		e.wantNotFound(t, ctx, id)
	})

	t.Run("a listener sees expiry as failed Expired", func(t *testing.T) {
		t.Parallel()
		e, ctx := newInproc(t), within(t)
		id := e.park(t, ctx, toolAskOnce, nil).TaskID
		l := listenTasks(t, ctx, e.url, id)
		n := l.next(t, ctx, nil)
		if n.Status != proto.StatusInputRequired {
			t.Fatalf("state at acknowledgement %s", toJSON(t, n.norm))
		}
		sameAsGet(t, ctx, e.c, n)
		e.clock.Advance(2 * time.Minute)
		n = l.next(t, ctx, n)
		if n.TaskID != id || n.Status != proto.StatusFailed || n.StatusMessage != "Expired" || n.Error == nil ||
			n.InputRequests != nil || n.Result != nil {
			t.Fatalf("notification after expiry %s, want failed with statusMessage Expired and an error", toJSON(t, n.norm))
		}
		e.waitGone(t, ctx, id)
	})

	t.Run("ExtendTTL shows in ttlMs", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			hours int
			want  int64
		}{
			{"2h", 2, 2 * 3600 * 1000},
			{"capped by the worker's MaxTTL", 48, 24 * 3600 * 1000},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				e, ctx := newInproc(t), within(t)
				task := createTask(t, ctx, e.c, toolExtendTTL, map[string]any{"hours": tc.hours})
				if task.TTLMs == nil || *task.TTLMs != 60_000 {
					t.Fatalf("CreateTaskResult ttlMs %v, want 60000", task.TTLMs)
				}
				g := waitTask(t, ctx, e.c, task.TaskID, "input_required", hasStatus(proto.StatusInputRequired))
				if g.TTLMs == nil || *g.TTLMs != tc.want {
					t.Fatalf("tasks/get ttlMs %v, want %d", g.TTLMs, tc.want)
				}
				rec := e.record(t, task.TaskID)
				score, err := e.b.Client.ZScore(ctx, e.store.Keys().Deadlines(rec.Ref.Owner), task.TaskID).Result()
				if err != nil || int64(score) != rec.CreatedAt.UnixMilli()+tc.want {
					t.Fatalf("deadline index %v %v, want %d", score, err, rec.CreatedAt.UnixMilli()+tc.want)
				}
				// Past the first TTL: a reaper pass (seen by a 1m task going)
				// leaves the extended task alone.
				other := e.park(t, ctx, toolAskOnce, nil).TaskID
				e.clock.Advance(2 * time.Minute)
				e.waitGone(t, ctx, other)
				e.update(t, ctx, task.TaskID, map[string]any{"q": nameAda})
				g = waitTask(t, ctx, e.c, task.TaskID, "completed", hasStatus(proto.StatusCompleted))
				if g.TTLMs == nil || *g.TTLMs != tc.want || !strings.Contains(string(g.Result), "answered Ada") {
					t.Fatalf("completed with ttlMs %v, result %s", g.TTLMs, g.Result)
				}
			})
		}
	})

	t.Run("pollIntervalMs while waiting for input", func(t *testing.T) {
		for _, tc := range []struct {
			tool   string
			args   any
			answer map[string]any
			own    int64 // the tool's pollIntervalMs
		}{
			{"confirm_delete", map[string]any{"filename": "c.txt"}, map[string]any{"confirm": yes}, 500},
			{toolAskOnce, nil, map[string]any{"q": nameAda}, 1000}, // the front end's default
			{toolSlowPoll, nil, map[string]any{"q": nameAda}, 8000},
		} {
			t.Run(tc.tool, func(t *testing.T) {
				t.Parallel()
				e, ctx := newInproc(t), within(t)
				task := createTask(t, ctx, e.c, tc.tool, tc.args)
				if task.PollIntervalMs == nil || *task.PollIntervalMs != tc.own {
					t.Fatalf("CreateTaskResult pollIntervalMs %v, want %d", task.PollIntervalMs, tc.own)
				}
				g := waitTask(t, ctx, e.c, task.TaskID, "input_required", hasStatus(proto.StatusInputRequired))
				// The tool's own interval: a longer one would delay the poll
				// after tasks/update, where the next step is seen.
				if p := g.PollIntervalMs; p == nil || *p != tc.own {
					t.Fatalf("pollIntervalMs %v while input_required, want the tool's %d", p, tc.own)
				}
				e.update(t, ctx, task.TaskID, tc.answer)
				g = waitTask(t, ctx, e.c, task.TaskID, "completed", hasStatus(proto.StatusCompleted))
				if g.PollIntervalMs == nil || *g.PollIntervalMs != tc.own {
					t.Fatalf("pollIntervalMs %v once completed, want %d", g.PollIntervalMs, tc.own)
				}
			})
		}
	})
}

// recvWithin receives from c within the bound.
func recvWithin[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(bound):
		t.Fatalf("no %s within %v", what, bound)
		panic("unreachable")
	}
}

// expiryWhileWorking runs a handler whose step waits for its context on a
// task with a 1m TTL, moves the clock past the TTL and checks that the
// task is gone for the client and the handler stopped.
func expiryWhileWorking(t *testing.T, mod func(*worker.Config), reaped bool) {
	var steps, lateSteps atomic.Int64
	started := make(chan struct{}, 1)
	stepEnded := make(chan error, 1)
	returned := make(chan error, 1)
	tool := worker.Tool{Name: "expiring_work", Policy: worker.PolicyTask, TTL: time.Minute,
		Handler: func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			for {
				err := c.Step(ctx, func(sctx context.Context) error {
					steps.Add(1)
					select {
					case started <- struct{}{}:
					default:
					}
					select {
					case <-sctx.Done():
						stepEnded <- context.Cause(sctx)
						return sctx.Err()
					case <-time.After(bound):
						return errors.New("the step's context never ended")
					}
				})
				if err != nil {
					_ = c.Step(ctx, func(context.Context) error { lateSteps.Add(1); return nil })
					returned <- err
					return nil, err
				}
			}
		}}
	e, ctx := newInprocWith(t, mod, tool), within(t)
	task := createTask(t, ctx, e.c, tool.Name, nil)
	if task.TTLMs == nil || *task.TTLMs != 60_000 {
		t.Fatalf("ttlMs %v, want 60000", task.TTLMs)
	}
	recvWithin(t, started, "first step")
	e.clock.Advance(2 * time.Minute)
	e.wantNotFound(t, ctx, task.TaskID)
	t.Logf("the step's context ended: %v", recvWithin(t, stepEnded, "end of the step's context"))
	if err := recvWithin(t, returned, "handler return"); err == nil {
		t.Fatal("Step returned nil after the TTL passed")
	}
	if n, late := steps.Load(), lateSteps.Load(); n != 1 || late != 0 {
		t.Fatalf("%d steps ran (want 1) and %d after the first failed (want 0)", n, late)
	}
	if reaped {
		e.waitGone(t, ctx, task.TaskID)
		e.wantNotFound(t, ctx, task.TaskID)
	}
}

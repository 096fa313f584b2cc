package frontend_test

// The test harness: a front end on a real Redis (miniredis or
// redis-server), driven through its real router, with the test playing the
// worker. The frontend package must not import worker, so a fake Enqueuer
// claims each job through the store and finishes it the way the worker
// runtime would (see fixtureTools for what each tool does).

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/access"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// waitBound bounds every wait on a signal; reaching it is a failure, never
// a pass, so it only has to be generous.
const waitBound = 20 * time.Second

// Per-request _meta a client sends: without and with the Tasks extension.
const (
	metaPlain = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"replay","version":"1.0.0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}`
	metaTasks = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"replay","version":"1.0.0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
)

// Fixture tools. Immediate tools are finished by the fake worker right
// after the claim; held tools stay claimed ("working", "Running") until the
// test finishes them through the store.
const (
	toolGreet         = "greet"              // sync, immediate: "Hello, {name}!"
	toolGreetAuto     = "greet_auto"         // auto (budget 60s), immediate
	toolGreetUnicode  = "grüßen"             // sync, immediate (non-ASCII Mcp-Name)
	toolToolError     = "tool_error"         // sync, immediate: completed with isError
	toolProtocolError = "protocol_error_job" // sync, immediate: failed with a JSON-RPC error
	toolSlow          = "slow_compute"       // auto (budget 20ms), held
	toolTaskJob       = "task_job"           // task, held
	toolTTLLong       = "ttl_long"           // task, held, ttlMs 48h
	toolTTLShort      = "ttl_short"          // task, held, ttlMs 60s
	toolTTLUnlimited  = "ttl_unlimited"      // task, held, unlimited ttl
	toolPoll          = "poll_fast"          // task, held, pollIntervalMs 250
)

var immediateTools = map[string]bool{toolGreet: true, toolGreetAuto: true, toolGreetUnicode: true,
	toolToolError: true, toolProtocolError: true}

func fixtureTools(queue string) []catalog.Entry {
	def := func(name string, policy proto.Policy, f func(*catalog.Entry)) catalog.Entry {
		d := catalog.Entry{Tool: proto.Tool{Name: name, Description: "fixture " + name,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)},
			Policy: policy, Queue: queue}
		if f != nil {
			f(&d)
		}
		return d
	}
	return []catalog.Entry{
		def(toolGreet, proto.PolicySync, nil),
		def(toolGreetAuto, proto.PolicyAuto, func(d *catalog.Entry) { d.SyncBudgetMs = 60_000 }),
		def(toolGreetUnicode, proto.PolicySync, nil),
		def(toolToolError, proto.PolicySync, nil),
		def(toolProtocolError, proto.PolicySync, nil),
		def(toolSlow, "", func(d *catalog.Entry) { d.SyncBudgetMs = 20 }),
		def(toolTaskJob, proto.PolicyTask, nil),
		def(toolTTLLong, proto.PolicyTask, func(d *catalog.Entry) { d.TTLMs = 48 * 3600 * 1000 }),
		def(toolTTLShort, proto.PolicyTask, func(d *catalog.Entry) { d.TTLMs = 60_000 }),
		def(toolTTLUnlimited, proto.PolicyTask, func(d *catalog.Entry) { d.TTLMs = catalog.UnlimitedTTL }),
		def(toolPoll, proto.PolicyTask, func(d *catalog.Entry) { d.PollIntervalMs = 250 }),
	}
}

// outcomeFor is what the fake worker (and the asynq fake worker) answers
// for an immediate tool, shaped as the worker runtime stores it.
func outcomeFor(tool string, args json.RawMessage) taskstate.Outcome {
	var a struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(args, &a)
	text := func(s string, isErr bool) json.RawMessage {
		b, _ := json.Marshal(proto.CallToolResult{ResultBase: proto.ResultBase{ResultType: proto.ResultComplete},
			Content: []proto.Content{proto.TextContent(s)}, IsError: isErr})
		return b
	}
	switch tool {
	case toolToolError:
		return taskstate.Outcome{Status: proto.StatusCompleted, Result: text("no such city", true),
			StatusMessage: "Completed with a tool error"}
	case toolProtocolError:
		return taskstate.Outcome{Status: proto.StatusFailed, StatusMessage: "boom",
			Error: &proto.Error{Code: proto.CodeInvalidParams, Message: "Invalid arguments: boom",
				Data: map[string]any{"field": "seconds"}}}
	}
	return taskstate.Outcome{Status: proto.StatusCompleted, Result: text("Hello, "+a.Name+"!", false),
		StatusMessage: "Completed"}
}

// enqueued is one enqueue the fake Enqueuer saw.
type enqueued struct {
	frontend.Job
	Ref      taskstate.Ref // Job.Task
	Attempt  int64
	ClaimErr error
}

// fakeEnqueuer records every job, claims it through the store (as a worker
// picking it up at once would) and finishes immediate tools in a goroutine.
type fakeEnqueuer struct {
	store *taskstate.Store
	jobs  chan enqueued
	wg    sync.WaitGroup
	mu    sync.Mutex
	err   error // returned by Enqueue when set
	hold  bool  // claim nothing and finish nothing
}

func newFakeEnqueuer(store *taskstate.Store) *fakeEnqueuer {
	return &fakeEnqueuer{store: store, jobs: make(chan enqueued, 256)}
}

func (f *fakeEnqueuer) setErr(err error) { f.mu.Lock(); f.err = err; f.mu.Unlock() }

// setHold makes the fake worker leave every job alone (not even claimed).
func (f *fakeEnqueuer) setHold(hold bool) { f.mu.Lock(); f.hold = hold; f.mu.Unlock() }

func (f *fakeEnqueuer) Enqueue(ctx context.Context, job frontend.Job) error {
	j := enqueued{Job: job, Ref: job.Task}
	ref, seq := job.Task, job.Seq
	f.mu.Lock()
	ferr, hold := f.err, f.hold
	f.mu.Unlock()
	if ferr != nil {
		f.record(j)
		return ferr
	}
	if !hold {
		claim, cerr := f.store.Claim(ctx, ref, seq, taskstate.Share{})
		j.ClaimErr = cerr
		if cerr == nil {
			j.Attempt = claim.Attempt
			if immediateTools[claim.Record.Tool] {
				f.wg.Add(1)
				go func() {
					defer f.wg.Done()
					_ = f.store.Finish(context.Background(), ref, claim.Attempt, outcomeFor(claim.Record.Tool, claim.Record.Arguments))
				}()
			}
		}
	}
	f.record(j)
	return nil
}

func (f *fakeEnqueuer) record(j enqueued) {
	select {
	case f.jobs <- j:
	default: // nobody reads them in this test
	}
}

// nextJob waits for the next enqueue.
func (f *fakeEnqueuer) nextJob(t testing.TB) enqueued {
	t.Helper()
	select {
	case j := <-f.jobs:
		return j
	case <-time.After(waitBound):
		t.Fatal("no job was enqueued")
		return enqueued{}
	}
}

// fakeClock is an injectable clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Now().Truncate(time.Millisecond)} }

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// env is one front end under test.
type env struct {
	t      testing.TB
	b      *redistest.Backend
	cfg    frontend.Config
	srv    *frontend.Server
	h      http.Handler
	store  *taskstate.Store // the worker's view, on the same clock
	access *access.Store    // managed API keys
	enq    *fakeEnqueuer
	clock  *fakeClock
	prefix string
}

// newEnv builds a front end on b with the fixture tools published. mod may
// change the Config before New (Enqueuer nil there means the fake one).
func newEnv(t testing.TB, b *redistest.Backend, mod func(*frontend.Config)) *env {
	t.Helper()
	e := &env{t: t, b: b, clock: newFakeClock(), prefix: b.Prefix}
	e.store = taskstate.New(b.Client, taskstate.Options{Prefix: b.Prefix, Clock: e.clock.Now})
	e.access = access.New(b.Client, b.Prefix, e.clock.Now)
	e.enq = newFakeEnqueuer(e.store)
	e.publish(fixtureTools("mcpq")...)
	e.cfg = frontend.Config{
		Redis:         b.Client,
		Prefix:        b.Prefix,
		Enqueuer:      e.enq,
		SyncBudget:    20 * time.Millisecond,
		SyncWaitLimit: waitBound,
		Clock:         e.clock.Now,
		Logger:        slog.New(slog.DiscardHandler),
	}
	if mod != nil {
		mod(&e.cfg)
	}
	srv, err := frontend.New(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.srv, e.h = srv, srv.Handler()
	t.Cleanup(func() {
		e.enq.wg.Wait()
		_ = srv.Close()
	})
	return e
}

// with returns a copy of e that reports to t (a fuzz target must not use
// the *testing.F, a subtest not its parent).
func (e *env) with(t testing.TB) *env {
	c := *e
	c.t = t
	return &c
}

// deriveHeaders is what a conforming client sends for body: Content-Type,
// MCP-Protocol-Version from _meta, Mcp-Method and, where the method names
// something, Mcp-Name. Fields that are missing or not strings give no header.
func deriveHeaders(body []byte) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	var r struct {
		Method any `json:"method"`
		Params struct {
			Meta   map[string]any `json:"_meta"`
			Name   any            `json:"name"`
			URI    any            `json:"uri"`
			TaskID any            `json:"taskId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &r) != nil {
		// Best effort on partially typed bodies.
		var loose map[string]json.RawMessage
		if json.Unmarshal(body, &loose) != nil {
			return h
		}
		_ = json.Unmarshal(loose["method"], &r.Method)
		_ = json.Unmarshal(loose["params"], &r.Params)
	}
	if v, ok := r.Params.Meta[proto.MetaProtocolVersion].(string); ok {
		h.Set("MCP-Protocol-Version", v)
	}
	method, _ := r.Method.(string)
	if method != "" {
		h.Set("Mcp-Method", method)
	}
	var name any
	switch {
	case method == proto.MethodToolsCall || method == proto.MethodPromptsGet:
		name = r.Params.Name
	case method == proto.MethodResourcesRead:
		name = r.Params.URI
	case strings.HasPrefix(method, "tasks/"):
		name = r.Params.TaskID
	}
	if s, ok := name.(string); ok {
		h.Set("Mcp-Name", encodeHeaderValue(s))
	}
	return h
}

// encodeHeaderValue is the client side of the =?base64?...?= form.
func encodeHeaderValue(s string) string {
	for _, r := range s {
		if r > 0x7e || r < 0x20 {
			return "=?base64?" + b64(s) + "?="
		}
	}
	return s
}

// reply is one HTTP answer.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
	JSON   map[string]any // the decoded body (of SSE: the last event), numbers as json.Number
	Events []map[string]any
}

// serve sends one HTTP request through the router.
func (e *env) serve(ctx context.Context, method string, body []byte, h http.Header) reply {
	e.t.Helper()
	r := httptest.NewRequestWithContext(ctx, method, "http://localhost/mcp", bytes.NewReader(body))
	for k, vs := range h {
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	res := w.Result()
	b, _ := io.ReadAll(res.Body)
	rep := reply{Status: res.StatusCode, Header: res.Header, Body: b}
	decode := func(b []byte) map[string]any {
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			e.t.Errorf("response is not a JSON object: %v\n%s", err, b) // may run off the test goroutine
		}
		return m
	}
	switch ct := res.Header.Get("Content-Type"); {
	case len(bytes.TrimSpace(b)) == 0:
	case strings.HasPrefix(ct, "application/json"):
		rep.JSON = decode(b)
	case strings.HasPrefix(ct, "text/event-stream"): // the final response is the last event
		for _, line := range strings.Split(string(b), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				rep.Events = append(rep.Events, decode([]byte(data)))
			}
		}
		if n := len(rep.Events); n > 0 {
			rep.JSON = rep.Events[n-1]
		}
	}
	return rep
}

// post sends body with the headers a conforming client derives for it.
func (e *env) post(body string) reply {
	e.t.Helper()
	return e.serve(context.Background(), http.MethodPost, []byte(body), deriveHeaders([]byte(body)))
}

// rpc builds a request body; meta is metaPlain, metaTasks or "" (no _meta).
func rpc(id any, method, meta string, params map[string]any) string {
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	if meta != "" {
		p["_meta"] = json.RawMessage(meta)
	}
	m := map[string]any{"jsonrpc": "2.0", "method": method, "params": p}
	if id != nil {
		m["id"] = id
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// callTool calls a tool and returns the reply.
func (e *env) callTool(meta, tool string, args map[string]any) reply {
	e.t.Helper()
	p := map[string]any{"name": tool}
	if args != nil {
		p["arguments"] = args
	}
	return e.post(rpc(1, proto.MethodToolsCall, meta, p))
}

// createTask calls a task tool as a declaring client and returns the task id.
func (e *env) createTask(tool string) string {
	e.t.Helper()
	rep := e.callTool(metaTasks, tool, map[string]any{"name": "Ada"})
	mustMatch(e.t, rep, 200, `{"result":{"resultType":"task","taskId":"<taskid>"}}`)
	return str(rep.JSON, "result.taskId")
}

// taskRPC sends tasks/get or tasks/cancel for id with the given _meta.
func (e *env) taskRPC(method, meta, id string) reply {
	e.t.Helper()
	return e.post(rpc("t-1", method, meta, map[string]any{"taskId": id}))
}

// ref is the anonymous caller's reference to task id.
func ref(id string) taskstate.Ref {
	return taskstate.Ref{Owner: taskstate.OwnerTag(frontend.AnonymousPrincipal), ID: id}
}

// finish ends a held (claimed, attempt 1) task as the worker would.
func (e *env) finish(id string, o taskstate.Outcome) {
	e.t.Helper()
	if err := e.store.Finish(context.Background(), ref(id), 1, o); err != nil {
		e.t.Fatalf("finish %s: %v", id, err)
	}
}

// str reads a dotted path of a decoded body as a string ("" when absent).
func str(v any, path string) string {
	got, ok := lookup(v, path)
	if !ok {
		return ""
	}
	s, _ := got.(string)
	return s
}

// lookup walks a dotted path through decoded JSON objects.
func lookup(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// mustMatch checks the HTTP status and matches the body against want (see match).
func mustMatch(t testing.TB, rep reply, status int, want string) {
	t.Helper()
	if rep.Status != status {
		t.Fatalf("HTTP status %d, want %d; body %s", rep.Status, status, rep.Body)
	}
	if want == "" {
		return
	}
	var w any
	dec := json.NewDecoder(strings.NewReader(want))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		t.Fatalf("bad expectation %s: %v", want, err)
	}
	if err := match("", w, any(rep.JSON)); err != nil {
		t.Fatalf("%v\nbody: %s", err, rep.Body)
	}
}

// publish writes defs into the catalog and marks them served by a live
// worker for a century of the fake clock, as a running worker would.
func (e *env) publish(defs ...catalog.Entry) {
	e.t.Helper()
	if err := publishServed(e.store, defs...); err != nil {
		e.t.Fatal(err)
	}
}

// publishServed writes defs into the catalog and marks them served for a
// century of the store's clock.
func publishServed(store *taskstate.Store, defs ...catalog.Entry) error {
	ctx := context.Background()
	if err := store.Catalog().Publish(ctx, defs); err != nil {
		return err
	}
	keys := make([]string, len(defs))
	for i := range defs {
		keys[i] = defs[i].Key()
	}
	_, err := store.Catalog().Serve(ctx, keys, store.Now().Add(100*365*24*time.Hour))
	return err
}

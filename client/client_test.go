package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/proto"
)

// fake is a scripted MCP server: tools/call of "job" makes a task that asks
// for input key "k1" and completes with the answer once it has it.
type fake struct {
	t        *testing.T
	mu       sync.Mutex
	requests []*http.Request
	bodies   []map[string]any
	updates  []map[string]json.RawMessage
	status   proto.TaskStatus
	answer   json.RawMessage
	discover int
	ids      map[string]bool
	sse      bool
	fail     int // tasks/get answers 503 this many more times
}

func newFake(t *testing.T) (*fake, *httptest.Server) {
	f := &fake{t: t, status: proto.StatusInputRequired, ids: map[string]bool{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params map[string]any  `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r)
	f.bodies = append(f.bodies, req.Params)
	if f.ids[string(req.ID)] {
		f.t.Errorf("request id %s reused", req.ID)
	}
	f.ids[string(req.ID)] = true
	reply := func(status int, v any) {
		b, _ := json.Marshal(v)
		if f.sse {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(status)
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
			fmt.Fprintf(w, "data: %s\n\n", b)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(b)
	}
	result := func(v any) { reply(200, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": v}) }
	rpcErr := func(status, code int, msg string) {
		reply(status, map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": code, "message": msg}})
	}
	ttl := int64(60_000)
	poll := int64(1)
	task := proto.Task{TaskID: "-dash-id", Status: f.status, CreatedAt: time.Now().UTC().Format(time.RFC3339Nano),
		LastUpdatedAt: time.Now().UTC().Format(time.RFC3339Nano), TTLMs: &ttl, PollIntervalMs: &poll}
	switch req.Method {
	case proto.MethodDiscover:
		f.discover++
		result(map[string]any{"resultType": "complete", "ttlMs": 60_000, "cacheScope": "private", "supportedVersions": []string{proto.ProtocolVersion}, "capabilities": map[string]any{}})
	case proto.MethodListen:
		rpcErr(404, proto.CodeMethodNotFound, "no listen here")
	case proto.MethodToolsCall:
		if req.Params["name"] == "job" {
			result(proto.CreateTaskResult{ResultBase: proto.ResultBase{ResultType: proto.ResultTask}, Task: task})
			return
		}
		rpcErr(400, proto.CodeInvalidParams, "unknown tool")
	case proto.MethodTasksGet:
		if f.fail > 0 {
			f.fail--
			rpcErr(503, proto.CodeInternalError, "Service unavailable: redis unreachable")
			return
		}
		if req.Params["taskId"] != task.TaskID {
			rpcErr(400, proto.CodeInvalidParams, "Task not found")
			return
		}
		d := proto.DetailedTask{Task: task}
		switch f.status {
		case proto.StatusInputRequired:
			d.InputRequests = map[string]json.RawMessage{"k1": json.RawMessage(`{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object"}}}`)}
		case proto.StatusCompleted:
			d.Result = json.RawMessage(`{"resultType":"complete","content":[{"type":"text","text":` + string(mustQuote(string(f.answer))) + `}]}`)
		}
		result(proto.GetTaskResult{ResultBase: proto.ResultBase{ResultType: proto.ResultComplete}, DetailedTask: d})
	case proto.MethodTasksUpd:
		b, _ := json.Marshal(req.Params["inputResponses"])
		var m map[string]json.RawMessage
		_ = json.Unmarshal(b, &m)
		f.updates = append(f.updates, m)
		if a, ok := m["k1"]; ok && f.status == proto.StatusInputRequired {
			f.status, f.answer = proto.StatusCompleted, a
		}
		result(proto.Ack{ResultBase: proto.ResultBase{ResultType: proto.ResultComplete}})
	default:
		rpcErr(404, proto.CodeMethodNotFound, "Method not found")
	}
}

func mustQuote(s string) []byte { b, _ := json.Marshal(s); return b }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// A task's input key reaches the Input func once, across a crash: the
// second process resends the journaled answer instead of asking again.
func TestInputOnceAcrossResume(t *testing.T) {
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			f, srv := newFake(t)
			f.sse = sse
			j := &client.FileJournal{Dir: t.TempDir()}
			asked := 0
			c := &client.Client{URL: srv.URL, Tasks: true, Journal: j, Input: func(ctx context.Context, r client.InputRequest) (any, error) {
				asked++
				if r.Key != "k1" || r.Method != proto.MethodElicit {
					t.Errorf("input request %+v", r)
				}
				return proto.ElicitResult{Action: proto.ElicitAccept, Content: json.RawMessage(`{"ok":true}`)}, nil
			}}
			a, err := c.CallTool(ctx(t), "job", map[string]any{"n": 1})
			if err != nil || a.Handle == nil || a.Handle.ID != "-dash-id" {
				t.Fatalf("CallTool = %+v, %v", a, err)
			}
			// The id is on disk when CallTool returns.
			if e, ok, err := j.Get(ctx(t), srv.URL, "-dash-id"); !ok || err != nil || e.Tool != "job" || e.TTLMs == nil || e.ArgumentsDigest == "" {
				t.Fatalf("journal entry %+v %v %v", e, ok, err)
			}
			// A first process answered and died before tasks/update got through.
			if _, err := j.Answer(ctx(t), srv.URL, "-dash-id", "k1", json.RawMessage(`{"action":"accept","content":{"ok":"first"}}`)); err != nil {
				t.Fatal(err)
			}
			hs, err := c.Resume(ctx(t))
			if err != nil || len(hs) != 1 {
				t.Fatalf("Resume = %v, %v", hs, err)
			}
			res, err := hs[0].Wait(ctx(t))
			if err != nil || !strings.Contains(res.Content[0].Text, `"first"`) {
				t.Fatalf("Wait = %+v, %v", res, err)
			}
			if asked != 0 {
				t.Errorf("Input asked %d times for a key answered before the crash", asked)
			}
			if n, _ := j.List(ctx(t)); len(n) != 0 {
				t.Errorf("journal keeps %d entries after the outcome was delivered", len(n))
			}
		})
	}
}

func TestInputAskedOnceAndResultDelivered(t *testing.T) {
	_, srv := newFake(t)
	asked := 0
	c := &client.Client{URL: srv.URL, Tasks: true, Input: func(ctx context.Context, r client.InputRequest) (any, error) {
		asked++
		return proto.ElicitResult{Action: proto.ElicitAccept, Content: json.RawMessage(`{"ok":true}`)}, nil
	}}
	a, err := c.CallTool(ctx(t), "job", nil)
	if err != nil {
		t.Fatal(err)
	}
	var states []proto.TaskStatus
	g, err := a.Handle.Follow(ctx(t), func(g *proto.GetTaskResult) { states = append(states, g.Status) })
	if err != nil || g.Status != proto.StatusCompleted || asked != 1 {
		t.Fatalf("Follow = %v, %v; asked %d", g, err, asked)
	}
	if fmt.Sprint(states) != "[input_required completed]" {
		t.Errorf("states seen %v", states)
	}
}

// A server that is briefly unavailable (503) is retried with backoff; a
// definite error ends Follow at once.
func TestFollowRetriesUnavailable(t *testing.T) {
	f, srv := newFake(t)
	f.fail = 3
	c := &client.Client{URL: srv.URL, Tasks: true, Poll: client.PollBounds{Min: time.Millisecond, Max: 20 * time.Millisecond},
		Input: func(ctx context.Context, r client.InputRequest) (any, error) {
			return proto.ElicitResult{Action: proto.ElicitAccept, Content: json.RawMessage(`{}`)}, nil
		}}
	g, err := c.Attach("-dash-id", "job", nil).Follow(ctx(t), nil)
	if err != nil || g.Status != proto.StatusCompleted || f.fail != 0 {
		t.Fatalf("Follow = %v, %v (503s left %d)", g, err, f.fail)
	}
	if _, err := c.Attach("gone", "job", nil).Follow(ctx(t), nil); !errors.Is(err, client.ErrTaskGone) {
		t.Fatalf("Follow of an unknown task: %v, want ErrTaskGone", err)
	}
}

func TestResumeDropsExpiredAndUnknown(t *testing.T) {
	_, srv := newFake(t)
	j := &client.FileJournal{Dir: t.TempDir()}
	ttl := int64(1000)
	for _, e := range []client.Entry{
		{Server: srv.URL, TaskID: "old", CreatedAt: time.Now().Add(-time.Hour), TTLMs: &ttl},
		{Server: srv.URL, TaskID: "unknown", CreatedAt: time.Now()},
		{Server: srv.URL, TaskID: "-dash-id", CreatedAt: time.Now()},
		{Server: "http://elsewhere/mcp", TaskID: "other", CreatedAt: time.Now()},
	} {
		if err := j.Put(ctx(t), e); err != nil {
			t.Fatal(err)
		}
	}
	c := &client.Client{URL: srv.URL, Tasks: true, Journal: j}
	hs, err := c.Resume(ctx(t))
	if err != nil || len(hs) != 1 || hs[0].ID != "-dash-id" || hs[0].Last().Status != proto.StatusInputRequired {
		t.Fatalf("Resume = %v, %v", hs, err)
	}
	left, _ := j.List(ctx(t))
	if len(left) != 2 {
		t.Errorf("journal has %d entries, want the live one and the other server's", len(left))
	}
}

func TestTypedErrorsAndHeaders(t *testing.T) {
	f, srv := newFake(t)
	c := &client.Client{URL: srv.URL}
	_, err := c.CallTool(ctx(t), "nope", nil)
	var re *client.RPCError
	if !errors.Is(err, client.CodeInvalidParams) || !errors.As(err, &re) || re.HTTPStatus != 400 {
		t.Fatalf("err = %v", err)
	}
	if errors.Is(err, client.CodeMethodNotFound) {
		t.Error("-32602 matched CodeMethodNotFound")
	}
	if err := c.Call(ctx(t), "tasks/list", "", nil, nil); !errors.Is(err, client.CodeMethodNotFound) {
		t.Errorf("tasks/list: %v", err)
	}
	if _, err := c.CallTool(ctx(t), "héllo", nil); err == nil {
		t.Fatal("no error")
	}
	f.mu.Lock()
	r := f.requests[len(f.requests)-1]
	f.mu.Unlock()
	if got := r.Header.Get("Mcp-Name"); got != "=?base64?aMOpbGxv?=" {
		t.Errorf("Mcp-Name = %q", got)
	}
	mctx := client.WithHeader(client.WithMeta(ctx(t), map[string]any{"progressToken": "p1", proto.MetaProtocolVersion: "1999-01-01"}), http.Header{"X-Trace": {"t1"}})
	if _, err := c.GetTask(mctx, "-dash-id"); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	meta, _ := f.bodies[len(f.bodies)-1]["_meta"].(map[string]any)
	r = f.requests[len(f.requests)-1]
	f.mu.Unlock()
	if meta["progressToken"] != "p1" || meta[proto.MetaProtocolVersion] != proto.ProtocolVersion || r.Header.Get("X-Trace") != "t1" || r.Header.Get("Mcp-Name") != "-dash-id" {
		t.Errorf("per-request _meta %v, X-Trace %q, Mcp-Name %q", meta, r.Header.Get("X-Trace"), r.Header.Get("Mcp-Name"))
	}
	for i := 0; i < 3; i++ {
		if _, err := c.Discover(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	if f.discover != 1 {
		t.Errorf("server/discover sent %d times within its ttlMs", f.discover)
	}
}

func TestEncodeHeaderValue(t *testing.T) {
	for in, want := range map[string]string{
		"us-west1":     "us-west1",
		"us west 1":    "us west 1",
		" padded ":     "=?base64?IHBhZGRlZCA=?=",
		"Hello, 世界":    "=?base64?SGVsbG8sIOS4lueVjA==?=",
		"a\tb":         "=?base64?YQli?=",
		"=?base64?x?=": "=?base64?PT9iYXNlNjQ/eD89?=",
		"":             "",
	} {
		if got := client.EncodeHeaderValue(in); got != want {
			t.Errorf("EncodeHeaderValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestToolHeaders(t *testing.T) {
	for _, tc := range []struct {
		schema string
		ok     bool
	}{
		{`{"properties":{"r":{"type":"string","x-mcp-header":"Region"},"p":{"type":"integer","x-mcp-header":"P"}}}`, true},
		{`{"properties":{"r":{"type":"string","x-mcp-header":""}}}`, false},
		{`{"properties":{"r":{"type":"number","x-mcp-header":"N"}}}`, false},
		{`{"properties":{"r":{"type":"object","x-mcp-header":"O"}}}`, false},
		{`{"properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}`, false},
		{`{"properties":{"r":{"type":"string","x-mcp-header":"My Region"}}}`, false},
		{`{"properties":{"r":{"type":"string","x-mcp-header":"R:1"}}}`, false},
		{`{"properties":{"r":{"type":"string","x-mcp-header":"Région"}}}`, false},
	} {
		_, err := client.ToolHeaders(json.RawMessage(tc.schema))
		if (err == nil) != tc.ok {
			t.Errorf("ToolHeaders(%s) error %v, want ok=%v", tc.schema, err, tc.ok)
		}
	}
}

// Two processes answering the same key: the first answer wins in both.
func TestJournalAnswerFirstWins(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j := &client.FileJournal{Dir: dir}
			b, err := j.Answer(context.Background(), "s", "id", "k", json.RawMessage(fmt.Sprint(i)))
			if err != nil {
				t.Error(err)
			}
			got[i] = string(b)
		}()
	}
	wg.Wait()
	for _, g := range got {
		if g != got[0] {
			t.Fatalf("answers differ: %v", got)
		}
	}
}

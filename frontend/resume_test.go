package frontend_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend/internal/legacy"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

// sseEvent is one SSE event as a client reads it.
type sseEvent struct {
	id   string
	data map[string]any // nil for a priming event
}

// openSSE sends req and returns its SSE events as they arrive; the channel
// closes when the stream ends.
func openSSE(t *testing.T, ts *httptest.Server, req *http.Request) <-chan sseEvent {
	t.Helper()
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		res.Body.Close()
		t.Fatalf("%s: HTTP %d %s", req.Method, res.StatusCode, res.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 64)
	go func() {
		defer close(out)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		var ev sseEvent
		seen := false
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if seen {
					out <- ev
				}
				ev, seen = sseEvent{}, false
			case strings.HasPrefix(line, "id: "):
				ev.id, seen = strings.TrimPrefix(line, "id: "), true
			case strings.HasPrefix(line, "data:"):
				if data := strings.TrimSpace(strings.TrimPrefix(line, "data:")); data != "" {
					_ = json.Unmarshal([]byte(data), &ev.data)
				}
				seen = true
			}
		}
	}()
	return out
}

// TestLegacyResume: a held call's stream breaks; the task keeps running,
// and the client resumes the stream with GET and Last-Event-ID on another
// front end: the progress after its last event, then the call's result.
// Resuming again from the first event replays the whole stream, and only
// that stream.
func TestLegacyResume(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		a, other := newEnv(t, b, nil), newEnv(t, b, nil)
		l := &legacyClient{t: t}
		l.initialize(a, `{}`)
		tsA, tsB := httptest.NewServer(a.h), httptest.NewServer(other.h)
		defer tsA.Close()
		defer tsB.Close()

		ctx, breakStream := context.WithCancel(context.Background())
		body := `{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"slow_compute","arguments":{"name":"Fa"},"_meta":{"progressToken":"pt"}}}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tsA.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", l.session)
		held := make(chan (<-chan sseEvent), 1)
		go func() { held <- openSSE(t, tsA, req) }()
		j := a.enq.nextJob(t) // claimed: "Running" goes out as progress 0
		events := <-held
		prime := <-events
		if prime.id == "" || prime.data != nil {
			t.Fatalf("first event %+v, want a priming event (an id, no data)", prime)
		}
		if err := a.store.Progress(context.Background(), j.Ref, j.Attempt, "Step 1 of 2"); err != nil {
			t.Fatal(err)
		}
		var last sseEvent
		for ev := range events {
			if ev.id == "" {
				t.Fatalf("event without an id: %+v", ev)
			}
			if last = ev; str(ev.data, "params.message") == "Step 1 of 2" {
				break
			}
		}
		breakStream() // the connection is gone; the task must not be cancelled

		get := func(ts *httptest.Server, lastID string) *http.Request {
			r, _ := http.NewRequest(http.MethodGet, ts.URL+"/mcp", nil)
			r.Header.Set("Accept", "text/event-stream")
			r.Header.Set("Mcp-Session-Id", l.session)
			r.Header.Set("Last-Event-ID", lastID)
			return r
		}
		resumed := openSSE(t, tsB, get(tsB, last.id))
		if err := a.store.Progress(context.Background(), j.Ref, j.Attempt, "Step 2 of 2"); err != nil {
			t.Fatal(err)
		}
		var got []string
		for ev := range resumed {
			if ev.data == nil {
				continue
			}
			if len(got) == 0 { // the live progress is out: now the task ends
				err := a.store.Finish(context.Background(), j.Ref, j.Attempt, outcomeFor(toolSlow, json.RawMessage(`{"name":"Fa"}`)))
				if err != nil {
					t.Fatalf("finish after the stream broke: %v (the break cancelled the task?)", err)
				}
			}
			if ev.data["method"] == proto.NotifyProgress {
				got = append(got, str(ev.data, "params.message")+fmt.Sprintf("@%v", ev.data["params"].(map[string]any)["progress"]))
				continue
			}
			text, _ := lookup(ev.data, "result.content")
			if content, ok := text.([]any); ok && len(content) == 1 {
				got = append(got, str(ev.data, "id")+":"+str(content[0], "text"))
				continue
			}
			b, _ := json.Marshal(ev.data)
			got = append(got, string(b))
		}
		want := []string{"Step 2 of 2@2", "call-1:Hello, Fa!"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("resumed stream %q, want %q", got, want)
		}

		// From the priming event: everything the stream carried, then it ends.
		got = got[:0]
		for ev := range openSSE(t, tsA, get(tsA, prime.id)) {
			if ev.data != nil {
				got = append(got, str(ev.data, "params.message")+str(ev.data, "id"))
			}
		}
		want = []string{"Running", "Step 1 of 2", "Step 2 of 2", "call-1"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("replayed stream %q, want %q", got, want)
		}

		// Ids this session never issued, or not ids of this server: 400.
		for _, id := range []string{"nonsense", "c.AAAAAAAAAAAAAAAAAAAAAA/1-0", strings.Replace(prime.id, "c.", "x.", 1)} {
			if rep := other.serve(context.Background(), http.MethodGet, nil, get(tsB, id).Header); rep.Status != http.StatusBadRequest {
				t.Errorf("Last-Event-ID %q: HTTP %d %s, want 400", id, rep.Status, rep.Body)
			}
		}
	})
}

// TestLegacyResumeTaskResult: a tasks/result stream breaks (any proxy or
// network may cut it) just after the task asked for input; the client
// resumes it with GET and Last-Event-ID on another front end and gets the
// input request (once), answers it there, and gets the result with the
// request's id, as a TypeScript SDK v1 client does with a broken stream
// that carried an event id and no result. Before tasks/result streams
// carried ids, that client waited for its request timeout.
func TestLegacyResumeTaskResult(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		a, other := newEnv(t, b, nil), newEnv(t, b, nil)
		l := &legacyClient{t: t}
		l.initialize(a, `{"elicitation":{},"tasks":{}}`)
		rep := l.do(a, proto.MethodToolsCall, map[string]any{"name": toolSlow, "arguments": map[string]any{"name": "Ida"}, "task": map[string]any{}})
		id := str(rep.JSON, "result.task.taskId")
		j := a.enq.nextJob(t)
		tsA, tsB := httptest.NewServer(a.h), httptest.NewServer(other.h)
		defer tsA.Close()
		defer tsB.Close()

		ctx, breakStream := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tsA.URL+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":"r-1","method":"tasks/result","params":{"taskId":"`+id+`"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", l.session)
		related := func(meta any) string { // the related-task _meta's taskId
			m, _ := meta.(map[string]any)
			rt, _ := m[legacy.MetaRelatedTask].(map[string]any)
			id, _ := rt["taskId"].(string)
			return id
		}
		events := openSSE(t, tsA, req)
		ev := <-events
		if ev.data["method"] != legacy.NotifyTaskStatus || str(ev.data, "params.status") != "working" || !strings.HasPrefix(ev.id, "r.") {
			t.Fatalf("first event %+v, want the working status with an id", ev)
		}
		a.park(j.Ref, j.Attempt, "ask")
		if ev = <-events; str(ev.data, "params.status") != "input_required" || ev.id == "" {
			t.Fatalf("second event %+v, want the input_required status with an id", ev)
		}
		breakStream()

		get, _ := http.NewRequest(http.MethodGet, tsB.URL+"/mcp", nil)
		get.Header.Set("Accept", "text/event-stream")
		get.Header.Set("Mcp-Session-Id", l.session)
		get.Header.Set("Last-Event-ID", ev.id)
		var got []string
		for ev := range openSSE(t, tsB, get) {
			switch {
			case ev.id == "":
				t.Fatalf("resumed event without an id: %+v", ev)
			case ev.data["method"] == proto.MethodElicit:
				if meta, _ := lookup(ev.data, "params._meta"); related(meta) != id {
					t.Errorf("input request %v does not name task %s", ev.data, id)
				}
				ans, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": ev.data["id"], "result": map[string]any{"action": "accept", "content": map[string]any{}}})
				if rep := other.serve(context.Background(), http.MethodPost, ans, http.Header{"Content-Type": {"application/json"}, "Mcp-Session-Id": {l.session}}); rep.Status != http.StatusAccepted {
					t.Fatalf("answer: HTTP %d %s", rep.Status, rep.Body)
				}
				resumed := other.enq.nextJob(t)
				if err := other.store.Finish(context.Background(), j.Ref, resumed.Attempt, outcomeFor(toolSlow, json.RawMessage(`{"name":"Ida"}`))); err != nil {
					t.Fatalf("finish after the stream broke: %v", err)
				}
				got = append(got, "elicit")
			case ev.data["method"] == legacy.NotifyTaskStatus:
				// working again, then completed: statuses are informative
			default:
				content, _ := lookup(ev.data, "result.content")
				list, _ := content.([]any)
				if len(list) != 1 {
					t.Fatalf("resumed stream carried %v", ev.data)
				}
				meta, _ := lookup(ev.data, "result._meta")
				got = append(got, str(ev.data, "id")+":"+str(list[0], "text")+":"+related(meta))
			}
		}
		if want := "elicit|r-1:Hello, Ida!:" + id; strings.Join(got, "|") != want {
			t.Fatalf("resumed tasks/result stream %q, want %q", got, want)
		}
	})
}

// TestLegacyGetStreams: a message goes on one GET stream of a session only
// (the newest open one; when it closes, another takes over), the session's
// tasks report their states there as notifications/tasks/status, and a
// GET stream resumed with Last-Event-ID on another front end replays what
// it sent after that id.
func TestLegacyGetStreams(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		a, other := newEnv(t, b, nil), newEnv(t, b, nil)
		a.enq.setHold(true)
		l := &legacyClient{t: t}
		l.initialize(a, `{"tasks":{}}`)
		tsA, tsB := httptest.NewServer(a.h), httptest.NewServer(other.h)
		defer tsA.Close()
		defer tsB.Close()
		get := func(ctx context.Context, ts *httptest.Server, lastID string) <-chan sseEvent {
			r, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/mcp", nil)
			r.Header.Set("Accept", "text/event-stream")
			r.Header.Set("Mcp-Session-Id", l.session)
			if lastID != "" {
				r.Header.Set("Last-Event-ID", lastID)
			}
			return openSSE(t, ts, r)
		}
		next := func(events <-chan sseEvent) sseEvent { // the next message (not a priming event)
			for ev := range events {
				if ev.data != nil {
					return ev
				}
			}
			t.Fatal("stream ended")
			return sseEvent{}
		}
		ctx, endStreams := context.WithCancel(context.Background())
		defer endStreams() // before the servers close
		older := get(ctx, tsA, "")
		newestCtx, closeNewest := context.WithCancel(ctx)
		newest := get(newestCtx, tsB, "")

		if err := a.store.Catalog().AnnounceListChanged(ctx, "tools"); err != nil {
			t.Fatal(err)
		}
		if ev := next(newest); ev.data["method"] != proto.NotifyToolsListChanged || ev.id == "" {
			t.Fatalf("newest stream got %+v, want tools list_changed with an id", ev)
		}
		// The session's task: its states on the GET stream.
		rep := l.do(a, proto.MethodToolsCall, map[string]any{"name": toolTaskJob, "task": map[string]any{}})
		taskID := str(rep.JSON, "result.task.taskId")
		if taskID == "" {
			t.Fatalf("task-augmented call: %s", rep.Body)
		}
		mustMatch(t, l.do(a, proto.MethodTasksCncl, map[string]any{"taskId": taskID}), 200, `{"result":{"status":"cancelled"}}`)
		var lastSeen string
		for status := ""; status != "cancelled"; {
			ev := next(newest)
			if ev.data["method"] != legacy.NotifyTaskStatus || str(ev.data, "params.taskId") != taskID {
				t.Fatalf("GET stream got %+v, want the task's status", ev.data)
			}
			status, lastSeen = str(ev.data, "params.status"), ev.id
		}

		// The newest closes: the older stream takes the next messages, and
		// never got the ones above.
		closeNewest()
		for got := false; !got; {
			if err := a.store.Catalog().AnnounceListChanged(ctx, "prompts"); err != nil {
				t.Fatal(err)
			}
			select {
			case ev := <-older:
				if ev.data == nil {
					continue
				}
				if ev.data["method"] != proto.NotifyPromptsListChanged {
					t.Fatalf("older stream got %v first, want prompts list_changed (a message went to two streams)", ev.data)
				}
				got = true
			case <-time.After(50 * time.Millisecond): // the closed stream's hold not yet released: announce again
			}
		}

		// The closed stream, resumed on the other front end from before the
		// task's status: that status again, and nothing of the older stream.
		var first sseEvent
		for ev := range get(ctx, tsA, strings.Replace(lastSeen, lastSeen[strings.Index(lastSeen, "/")+1:], "0-0", 1)) {
			if ev.data != nil {
				first = ev
				break
			}
		}
		if first.data["method"] != proto.NotifyToolsListChanged {
			t.Fatalf("resumed stream replays %v first, want its tools list_changed", first.data)
		}
	})
}

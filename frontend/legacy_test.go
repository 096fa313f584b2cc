package frontend_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/frontend/internal/legacy"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// legacyClient speaks the 2025-11-25 era to one or more front ends: an
// initialize, then requests carrying its Mcp-Session-Id.
type legacyClient struct {
	t       testing.TB
	auth    string // Authorization header value ("" for none)
	session string
}

// send posts one JSON-RPC message to e as a 2025-11-25 client would.
func (l *legacyClient) send(ctx context.Context, e *env, id any, method string, params any) reply {
	l.t.Helper()
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if id != nil {
		m["id"] = id
	}
	if params != nil {
		m["params"] = params
	}
	body, _ := json.Marshal(m)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	if l.auth != "" {
		h.Set("Authorization", l.auth)
	}
	if l.session != "" {
		h.Set("Mcp-Session-Id", l.session)
		h.Set("MCP-Protocol-Version", proto.LegacyVersion)
	}
	return e.with(l.t).serve(ctx, http.MethodPost, body, h)
}

func (l *legacyClient) do(e *env, method string, params any) reply {
	l.t.Helper()
	return l.send(context.Background(), e, 1, method, params)
}

// initialize opens a session on e.
func (l *legacyClient) initialize(e *env, caps string) {
	l.t.Helper()
	rep := l.do(e, proto.MethodInitialize, map[string]any{"protocolVersion": proto.LegacyVersion,
		"capabilities": json.RawMessage(caps), "clientInfo": map[string]any{"name": "legacy", "version": "1"}})
	mustMatch(l.t, rep, 200, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"mcpq"}}}`)
	if l.session = rep.Header.Get("Mcp-Session-Id"); !taskstate.ValidID(l.session) {
		l.t.Fatalf("initialize gave session id %q", l.session)
	}
	if rep := l.send(context.Background(), e, nil, legacy.NotifyInitialized, nil); rep.Status != http.StatusAccepted {
		l.t.Fatalf("notifications/initialized: HTTP %d %s", rep.Status, rep.Body)
	}
}

// TestLegacySession: a 2025-11-25 client's session from initialize to
// DELETE, served by the same methods as the modern era.
func TestLegacySession(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, nil)
		l := &legacyClient{t: t}
		l.initialize(e, `{"elicitation":{}}`)

		mustMatch(t, l.do(e, legacy.MethodPing, nil), 200, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		mustMatch(t, l.do(e, legacy.MethodSetLevel, map[string]any{"level": "warning"}), 200, `{"result":{}}`)
		mustMatch(t, l.do(e, legacy.MethodSetLevel, map[string]any{"level": "loud"}), 200,
			`{"error":{"code":-32602,"message":"Invalid params: unknown logging level \"loud\""}}`)
		rep := l.do(e, proto.MethodToolsList, nil)
		mustMatch(t, rep, 200, `{"id":1}`)
		if tools, _ := lookup(rep.JSON, "result.tools"); len(tools.([]any)) != len(fixtureTools("")) {
			t.Fatalf("tools/list: %s", rep.Body)
		}
		mustMatch(t, l.do(e, proto.MethodToolsCall, map[string]any{"name": toolGreet, "arguments": map[string]any{"name": "Ada"}}),
			200, `{"result":{"content":[{"type":"text","text":"Hello, Ada!"}]}}`)
		// An auto tool is held open for a legacy client, never a task.
		mustMatch(t, l.do(e, proto.MethodToolsCall, map[string]any{"name": toolGreetAuto, "arguments": map[string]any{"name": "Bo"}}),
			200, `{"result":{"content":[{"type":"text","text":"Hello, Bo!"}]}}`)
		// JSON-RPC errors travel in a 200 answer in this era.
		mustMatch(t, l.do(e, "tools/nope", nil), 200, `{"error":{"code":-32601,"message":"Method not found: tools/nope"}}`)
		mustMatch(t, l.do(e, proto.MethodToolsCall, map[string]any{"name": "nope"}), 200, `{"error":{"code":-32602}}`)
		mustMatch(t, l.do(e, proto.MethodToolsCall, map[string]any{"name": toolTaskJob}), 200, `{"error":{"code":-32601}}`)

		// A wrong MCP-Protocol-Version header is the transport's 400.
		h := http.Header{"Content-Type": {"application/json"}, "Mcp-Session-Id": {l.session}, "Mcp-Protocol-Version": {"2025-06-18"}}
		rep = e.serve(context.Background(), http.MethodPost, []byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}`), h)
		mustMatch(t, rep, 400, `{"id":2,"error":{"code":-32600}}`)

		// A modern request carrying a session id is served statelessly.
		body := rpc(3, proto.MethodDiscover, metaPlain, nil)
		h = deriveHeaders([]byte(body))
		h.Set("Mcp-Session-Id", l.session)
		mustMatch(t, e.serve(context.Background(), http.MethodPost, []byte(body), h), 200,
			`{"result":{"supportedVersions":["2026-07-28","2025-11-25"]}}`)

		// DELETE ends the session; later requests get 404, as does a second DELETE.
		del := func() reply {
			return e.serve(context.Background(), http.MethodDelete, nil, http.Header{"Mcp-Session-Id": {l.session}})
		}
		if rep := del(); rep.Status != http.StatusNoContent {
			t.Fatalf("DELETE: HTTP %d %s", rep.Status, rep.Body)
		}
		mustMatch(t, l.do(e, legacy.MethodPing, nil), 404, `{"error":{"code":-32600,"message":"Session not found: initialize a new session"}}`)
		mustMatch(t, del(), 404, `{"error":{"code":-32600}}`)
		if rep := e.serve(context.Background(), http.MethodDelete, nil, nil); rep.Status != http.StatusMethodNotAllowed {
			t.Fatalf("DELETE without a session: HTTP %d", rep.Status)
		}
	})
}

// TestLegacySessionAcrossFrontEnds: a session opened on one front end is
// served by another, and by a front end started after the first is gone.
func TestLegacySessionAcrossFrontEnds(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		a := newEnv(t, b, nil)
		l := &legacyClient{t: t}
		l.initialize(a, `{}`)
		mustMatch(t, l.do(a, legacy.MethodSetLevel, map[string]any{"level": "error"}), 200, `{"result":{}}`)
		if err := a.srv.Close(); err != nil {
			t.Fatal(err)
		}
		c := newEnv(t, b, nil) // the restarted front end
		mustMatch(t, l.do(c, legacy.MethodPing, nil), 200, `{"result":{}}`)
		mustMatch(t, l.do(c, proto.MethodToolsCall, map[string]any{"name": toolGreet, "arguments": map[string]any{"name": "Cy"}}),
			200, `{"result":{"content":[{"text":"Hello, Cy!"}]}}`)
	})
}

// TestLegacySessionIsolation: a session is bound to the principal that
// opened it; another principal's requests and DELETE cannot reach it.
func TestLegacySessionIsolation(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newKeyEnv(t, b, nil)
		alice := &legacyClient{t: t, auth: "Bearer " + keyAlice}
		alice.initialize(e, `{}`)
		bob := &legacyClient{t: t, auth: "Bearer " + keyBob, session: alice.session}
		mustMatch(t, bob.do(e, legacy.MethodPing, nil), 404, `{"error":{"code":-32600}}`)
		h := http.Header{"Mcp-Session-Id": {alice.session}, "Authorization": {bob.auth}}
		mustMatch(t, e.serve(context.Background(), http.MethodDelete, nil, h), 404, `{"error":{"code":-32600}}`)
		anon := &legacyClient{t: t, session: alice.session}
		if rep := anon.do(e, legacy.MethodPing, nil); rep.Status != http.StatusUnauthorized {
			t.Fatalf("no key: HTTP %d %s", rep.Status, rep.Body)
		}
		mustMatch(t, alice.do(e, legacy.MethodPing, nil), 200, `{"result":{}}`)
	})
}

// TestModernOnly: with only the 2026-07-28 era, initialize gets the
// unsupported-version error naming what is served, and DELETE is 405.
func TestModernOnly(t *testing.T) {
	e := newEnv(t, redistest.Mini(t), func(c *frontend.Config) { c.Eras = []string{proto.ProtocolVersion} })
	l := &legacyClient{t: t}
	rep := l.do(e, proto.MethodInitialize, map[string]any{"protocolVersion": proto.LegacyVersion, "capabilities": map[string]any{}})
	mustMatch(t, rep, 400, `{"id":1,"error":{"code":-32022,"data":{"supported":["2026-07-28"],"requested":"2025-11-25"}}}`)
	if rep.Header.Get("Mcp-Session-Id") != "" {
		t.Fatal("a modern-only server minted a session")
	}
	mustMatch(t, e.post(rpc(2, proto.MethodDiscover, metaPlain, nil)), 200, `{"result":{"supportedVersions":["2026-07-28"]}}`)
	if rep := e.serve(context.Background(), http.MethodDelete, nil, http.Header{"Mcp-Session-Id": {"x"}}); rep.Status != http.StatusMethodNotAllowed {
		t.Fatalf("DELETE: HTTP %d", rep.Status)
	}
	// A modern initialize (with _meta) is still an unknown method.
	mustMatch(t, e.post(rpc(3, proto.MethodInitialize, metaPlain, nil)), 404, `{"error":{"code":-32601}}`)
}

// TestLegacyProgress: a long call's statusMessage updates reach a legacy
// client as notifications/progress on the request's stream, in order.
func TestLegacyProgress(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, nil)
		l := &legacyClient{t: t}
		l.initialize(e, `{}`)
		done := make(chan reply, 1)
		go func() {
			done <- l.do(e, proto.MethodToolsCall, map[string]any{"name": toolSlow,
				"arguments": map[string]any{"name": "Di"}, "_meta": map[string]any{"progressToken": "pt-1"}})
		}()
		j := e.enq.nextJob(t)
		ctx := context.Background()
		for _, msg := range []string{"Step 1 of 2", "Step 2 of 2"} {
			if err := e.store.Progress(ctx, j.Ref, j.Attempt, msg); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.store.Finish(ctx, j.Ref, j.Attempt, outcomeFor(toolSlow, json.RawMessage(`{"name":"Di"}`))); err != nil {
			t.Fatal(err)
		}
		rep := <-done
		mustMatch(t, rep, 200, `{"result":{"content":[{"text":"Hello, Di!"}]}}`)
		var got []string
		for _, ev := range rep.Events[:len(rep.Events)-1] {
			if ev["method"] != proto.NotifyProgress {
				t.Fatalf("unexpected event %v", ev)
			}
			got = append(got, str(ev, "params.message")+"@"+string(ev["params"].(map[string]any)["progress"].(json.Number))+
				"/"+str(ev, "params.progressToken"))
		}
		// The claim's "Running" is the first status update.
		want := []string{"Running@0/pt-1", "Step 1 of 2@1/pt-1", "Step 2 of 2@2/pt-1"}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Fatalf("progress %q, want %q", got, want)
		}
	})
}

// TestLegacyStream: resources/subscribe on one front end, the session's
// GET stream on another carries updates of the subscribed resource only.
func TestLegacyStream(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		a, other := newEnv(t, b, nil), newEnv(t, b, nil)
		l := &legacyClient{t: t}
		l.initialize(a, `{}`)
		mustMatch(t, l.do(a, legacy.MethodResSubscribe, map[string]any{"uri": "test://watched"}), 200, `{"result":{}}`)
		mustMatch(t, l.do(a, legacy.MethodResSubscribe, map[string]any{"uri": "test://dropped"}), 200, `{"result":{}}`)
		mustMatch(t, l.do(a, legacy.MethodResUnsubscribe, map[string]any{"uri": "test://dropped"}), 200, `{"result":{}}`)

		ts := httptest.NewServer(other.h)
		defer ts.Close()
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", l.session)
		res, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("GET: HTTP %d %s", res.StatusCode, res.Header.Get("Content-Type"))
		}
		sc := bufio.NewScanner(res.Body)
		if !sc.Scan() { // the opening keep-alive: the stream is subscribed
			t.Fatal("stream ended before it opened")
		}
		ctx := context.Background()
		for _, uri := range []string{"test://dropped", "test://other", "test://watched"} {
			if err := a.store.Catalog().AnnounceResourceUpdated(ctx, uri); err != nil {
				t.Fatal(err)
			}
		}
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			if want := `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"test://watched"}}`; data != want {
				t.Fatalf("event %s, want %s", data, want)
			}
			break
		}
		// Without a session, or with an unknown one, GET is not a stream.
		for _, c := range []struct {
			session string
			status  int
		}{{"", http.StatusMethodNotAllowed}, {taskstate.NewID(), http.StatusNotFound}} {
			h := http.Header{"Accept": {"text/event-stream"}}
			if c.session != "" {
				h.Set("Mcp-Session-Id", c.session)
			}
			if rep := other.serve(ctx, http.MethodGet, nil, h); rep.Status != c.status {
				t.Errorf("GET with session %q: HTTP %d, want %d", c.session, rep.Status, c.status)
			}
		}
	})
}

// TestLegacyInputRelay: a held legacy call whose task asks for input gets
// the question as a server-to-client request on its stream; the answer,
// POSTed to another front end, resumes the task and the call ends with
// its result.
func TestLegacyInputRelay(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		a, other := newEnv(t, b, nil), newEnv(t, b, nil)
		l := &legacyClient{t: t}
		l.initialize(a, `{"elicitation":{}}`)
		ts := httptest.NewServer(a.h)
		defer ts.Close()
		body := `{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"slow_compute","arguments":{"name":"Ed"}}}`
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", l.session)
		events := make(chan map[string]any, 16)
		go func() {
			defer close(events)
			res, err := ts.Client().Do(req)
			if err != nil {
				return
			}
			defer res.Body.Close()
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
					var m map[string]any
					_ = json.Unmarshal([]byte(data), &m)
					events <- m
				}
			}
		}()
		j := a.enq.nextJob(t)
		a.park(j.Ref, j.Attempt, "ask")
		ev := <-events
		if ev["method"] != proto.MethodElicit || str(ev, "params.message") == "" {
			t.Fatalf("first event %v, want an elicitation/create request", ev)
		}
		id := str(ev, "id")

		answer := func(e *env, id string) reply {
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
				"result": map[string]any{"action": "accept", "content": map[string]any{"name": "Ed"}}})
			return e.serve(context.Background(), http.MethodPost, b, http.Header{"Content-Type": {"application/json"}, "Mcp-Session-Id": {l.session}})
		}
		mustMatch(t, answer(other, "not-ours"), 400, `{"error":{"code":-32600}}`)
		if rep := answer(other, id); rep.Status != http.StatusAccepted {
			t.Fatalf("answer: HTTP %d %s", rep.Status, rep.Body)
		}
		resumed := other.enq.nextJob(t) // the answer resumed the task through the other front end
		rec, err := other.store.Get(context.Background(), j.Ref)
		if err != nil || string(rec.Answers["ask"]) != `{"action":"accept","content":{"name":"Ed"}}` {
			t.Fatalf("answers in the record: %s (%v)", rec.Answers["ask"], err)
		}
		if err := other.store.Finish(context.Background(), j.Ref, resumed.Attempt, outcomeFor(toolSlow, json.RawMessage(`{"name":"Ed"}`))); err != nil {
			t.Fatal(err)
		}
		var last map[string]any
		for ev := range events {
			last = ev
		}
		if got, _ := lookup(last, "result.content"); str(last, "id") != "call-1" || got == nil || str(got.([]any)[0], "text") != "Hello, Ed!" {
			t.Fatalf("call answered %v", last)
		}
	})
}

// TestLegacyTasks: the 2025-11-25 tasks utility on the same records as the
// Tasks extension. A task created by either era is seen by both, each in
// its own shape, and by no other principal.
func TestLegacyTasks(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newKeyEnv(t, b, nil)
		e.enq.setHold(true) // tasks stay working until the test ends them
		alice := &legacyClient{t: t, auth: "Bearer " + keyAlice}
		alice.initialize(e, `{"tasks":{}}`)
		bob := &legacyClient{t: t, auth: "Bearer " + keyBob}
		bob.initialize(e, `{"tasks":{}}`)

		rep := alice.do(e, proto.MethodToolsList, nil)
		for _, tool := range rep.JSON["result"].(map[string]any)["tools"].([]any) {
			want := map[string]string{toolGreet: "forbidden", toolSlow: "optional", toolTaskJob: "required"}[str(tool, "name")]
			if got := str(tool, "execution.taskSupport"); want != "" && got != want {
				t.Errorf("%s: taskSupport %q, want %q", str(tool, "name"), got, want)
			}
		}
		mustMatch(t, alice.do(e, proto.MethodToolsCall, map[string]any{"name": toolGreet, "task": map[string]any{}}), 200,
			`{"error":{"code":-32601}}`)
		mustMatch(t, alice.do(e, proto.MethodToolsCall, map[string]any{"name": toolTaskJob}), 200, `{"error":{"code":-32601}}`)

		rep = alice.do(e, proto.MethodToolsCall, map[string]any{"name": toolTaskJob, "task": map[string]any{"ttl": 7200000}})
		mustMatch(t, rep, 200, `{"result":{"task":{"taskId":"<taskid>","status":"working","ttl":3600000}}}`)
		legacyID := str(rep.JSON, "result.task.taskId")
		e.clock.Advance(time.Millisecond) // newest first
		modernID := e.createAs(keyAlice, toolTaskJob)

		for _, id := range []string{legacyID, modernID} {
			mustMatch(t, alice.do(e, proto.MethodTasksGet, map[string]any{"taskId": id}), 200,
				`{"result":{"taskId":"`+id+`","status":"working","ttl":3600000}}`)
			rep := e.send(keyAlice, rpc(1, proto.MethodTasksGet, metaTasks, map[string]any{"taskId": id}), nil)
			mustMatch(t, rep, 200, `{"result":{"resultType":"complete","taskId":"`+id+`","status":"working","ttlMs":3600000}}`)
			if _, legacyShape := rep.JSON["result"].(map[string]any)["ttl"]; legacyShape {
				t.Errorf("modern tasks/get shows the legacy ttl: %s", rep.Body)
			}
			mustMatch(t, bob.do(e, proto.MethodTasksGet, map[string]any{"taskId": id}), 200,
				`{"error":{"code":-32602,"message":"Failed to retrieve task: Task not found"}}`)
			mustMatch(t, e.send(keyBob, rpc(1, proto.MethodTasksGet, metaTasks, map[string]any{"taskId": id}), nil), 200,
				`{"error":{"code":-32602,"message":"Failed to retrieve task: Task not found"}}`)
			mustMatch(t, bob.do(e, proto.MethodTasksCncl, map[string]any{"taskId": id}), 200, `{"error":{"code":-32602}}`)
		}
		listed := func(l *legacyClient) []string {
			var ids []string
			for _, task := range l.do(e, proto.MethodTasksList, map[string]any{}).JSON["result"].(map[string]any)["tasks"].([]any) {
				ids = append(ids, str(task, "taskId"))
			}
			return ids
		}
		if got := listed(alice); len(got) != 2 || got[0] != modernID || got[1] != legacyID {
			t.Errorf("alice lists %v, want [%s %s]", got, modernID, legacyID)
		}
		if got := listed(bob); len(got) != 0 {
			t.Errorf("bob lists %v", got)
		}

		// A modern client cancels the legacy task (no worker holds it: it
		// ends at once), and the legacy client the modern one.
		mustMatch(t, e.send(keyAlice, rpc(1, proto.MethodTasksCncl, metaTasks, map[string]any{"taskId": legacyID}), nil), 200,
			`{"result":{"resultType":"complete"}}`)
		mustMatch(t, alice.do(e, proto.MethodTasksGet, map[string]any{"taskId": legacyID}), 200, `{"result":{"status":"cancelled"}}`)
		mustMatch(t, alice.do(e, proto.MethodTasksCncl, map[string]any{"taskId": legacyID}), 200, `{"error":{"code":-32602}}`)
		mustMatch(t, alice.do(e, proto.MethodTasksCncl, map[string]any{"taskId": modernID}), 200,
			`{"result":{"taskId":"`+modernID+`","status":"cancelled"}}`)
		mustMatch(t, e.send(keyAlice, rpc(1, proto.MethodTasksGet, metaTasks, map[string]any{"taskId": modernID}), nil), 200,
			`{"result":{"status":"cancelled"}}`)

		// tasks/result waits for the end and answers the call's result.
		e.enq.setHold(false)
		rep = alice.do(e, proto.MethodToolsCall, map[string]any{"name": toolGreetAuto, "arguments": map[string]any{"name": "Flo"}, "task": map[string]any{}})
		doneID := str(rep.JSON, "result.task.taskId")
		mustMatch(t, alice.do(e, proto.MethodTasksRes, map[string]any{"taskId": doneID}), 200,
			`{"result":{"content":[{"text":"Hello, Flo!"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"`+doneID+`"}}}}`)
		mustMatch(t, alice.do(e, proto.MethodTasksRes, map[string]any{"taskId": legacyID}), 200, `{"error":{"code":-32603}}`)
		mustMatch(t, bob.do(e, proto.MethodTasksRes, map[string]any{"taskId": doneID}), 200, `{"error":{"code":-32602}}`)
	})
}

// TestLegacyTaskResultStream: a tasks/result waiting for a task shows its
// states as notifications/tasks/status and relays its input request (naming
// the task) on the request's stream, then answers the result.
func TestLegacyTaskResultStream(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, nil)
		l := &legacyClient{t: t}
		l.initialize(e, `{"elicitation":{},"tasks":{}}`)
		rep := l.do(e, proto.MethodToolsCall, map[string]any{"name": toolSlow, "arguments": map[string]any{"name": "Gus"}, "task": map[string]any{}})
		id := str(rep.JSON, "result.task.taskId")
		j := e.enq.nextJob(t)
		ts := httptest.NewServer(e.h)
		defer ts.Close()
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":"r-1","method":"tasks/result","params":{"taskId":"`+id+`"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", l.session)
		res, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		next := func() map[string]any {
			for sc.Scan() {
				if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
					var m map[string]any
					if err := json.Unmarshal([]byte(data), &m); err != nil {
						t.Fatal(err)
					}
					return m
				}
			}
			t.Fatal("stream ended")
			return nil
		}
		if ev := next(); ev["method"] != legacy.NotifyTaskStatus || str(ev, "params.status") != "working" || str(ev, "params.taskId") != id {
			t.Fatalf("first event %v", ev)
		}
		e.park(j.Ref, j.Attempt, "ask")
		if ev := next(); ev["method"] != legacy.NotifyTaskStatus || str(ev, "params.status") != "input_required" {
			t.Fatalf("second event %v", ev)
		}
		ev := next()
		if ev["method"] != proto.MethodElicit {
			t.Fatalf("third event %v", ev)
		}
		meta, _ := lookup(ev, "params._meta")
		if rt, _ := meta.(map[string]any)[legacy.MetaRelatedTask].(map[string]any); rt["taskId"] != id {
			t.Fatalf("input request %v does not name task %s", ev, id)
		}
		ans, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": ev["id"], "result": map[string]any{"action": "decline"}})
		if rep := e.serve(context.Background(), http.MethodPost, ans, http.Header{"Content-Type": {"application/json"}, "Mcp-Session-Id": {l.session}}); rep.Status != http.StatusAccepted {
			t.Fatalf("answer: HTTP %d %s", rep.Status, rep.Body)
		}
		resumed := e.enq.nextJob(t)
		if err := e.store.Finish(context.Background(), j.Ref, resumed.Attempt, outcomeFor(toolSlow, json.RawMessage(`{"name":"Gus"}`))); err != nil {
			t.Fatal(err)
		}
		for {
			ev := next()
			if ev["method"] == legacy.NotifyTaskStatus {
				continue // working again, completed
			}
			if got, _ := lookup(ev, "result.content"); str(ev, "id") != "r-1" || got == nil || str(got.([]any)[0], "text") != "Hello, Gus!" {
				t.Fatalf("tasks/result answered %v", ev)
			}
			break
		}
	})
}

// TestLegacyTaskTTL: a 2025-11-25 task.ttl is honoured up to the tool's TTL
// (1h here); what is not a positive integer is -32602.
func TestLegacyTaskTTL(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, nil)
		e.enq.setHold(true)
		alice := &legacyClient{t: t}
		alice.initialize(e, `{"tasks":{}}`)
		for _, c := range []struct {
			task map[string]any
			want string
		}{
			{map[string]any{"ttl": 60000}, `{"result":{"task":{"status":"working","ttl":60000}}}`},
			{map[string]any{"ttl": 7200000}, `{"result":{"task":{"ttl":3600000}}}`},
			{map[string]any{}, `{"result":{"task":{"ttl":3600000}}}`},
			{map[string]any{"ttl": nil}, `{"result":{"task":{"ttl":3600000}}}`},
			{map[string]any{"ttl": 0}, `{"error":{"code":-32602}}`},
			{map[string]any{"ttl": -5}, `{"error":{"code":-32602}}`},
			{map[string]any{"ttl": 1.5}, `{"error":{"code":-32602}}`},
			{map[string]any{"ttl": "60000"}, `{"error":{"code":-32602}}`},
		} {
			rep := alice.do(e, proto.MethodToolsCall, map[string]any{"name": toolTaskJob, "task": c.task})
			mustMatch(t, rep, 200, c.want)
			if id := str(rep.JSON, "result.task.taskId"); id != "" {
				if want := str(rep.JSON, "result.task.ttl"); str(alice.do(e, proto.MethodTasksGet, map[string]any{"taskId": id}).JSON, "result.ttl") != want {
					t.Errorf("task %v: tasks/get does not show the ttl %s", c.task, want)
				}
				mustMatch(t, alice.do(e, proto.MethodTasksCncl, map[string]any{"taskId": id}), 200, `{"result":{"status":"cancelled"}}`)
			}
		}

	})
}

// TestLegacyCancelRunning: 2025-11-25 tasks/cancel moves the task to
// cancelled before it answers, also for a task a worker runs (which ends
// it once the cancel reaches it): the answer is the cancelled task, never
// the working one on its way there.
func TestLegacyCancelRunning(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, nil)
		l := &legacyClient{t: t}
		l.initialize(e, `{"tasks":{}}`)
		rep := l.do(e, proto.MethodToolsCall, map[string]any{"name": toolTaskJob, "task": map[string]any{}})
		id := str(rep.JSON, "result.task.taskId")
		j := e.enq.nextJob(t) // claimed: a worker holds it
		if j.ClaimErr != nil {
			t.Fatal(j.ClaimErr)
		}
		worker := make(chan error, 1)
		go func() { // the worker, seeing the cancel, ends its step
			ctx := context.Background()
			for deadline := time.Now().Add(waitBound); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if rec, err := e.store.Get(ctx, j.Ref); err != nil || rec.CancelRequested {
					worker <- e.store.Finish(ctx, j.Ref, j.Attempt, outcomeFor(toolTaskJob, nil))
					return
				}
			}
			worker <- context.DeadlineExceeded
		}()
		mustMatch(t, l.do(e, proto.MethodTasksCncl, map[string]any{"taskId": id}), 200,
			`{"result":{"taskId":"`+id+`","status":"cancelled"}}`)
		if err := <-worker; !errors.Is(err, taskstate.ErrCancelled) {
			t.Fatalf("the worker's finish: %v, want ErrCancelled", err)
		}
		mustMatch(t, l.do(e, proto.MethodTasksCncl, map[string]any{"taskId": id}), 200, `{"error":{"code":-32602}}`)
	})
}

// TestLegacyInputOnGetStream: a client that created a task, opened the
// session's GET stream and only polls tasks/get (never tasks/result) is
// asked for the parked task's input on the GET stream, once, naming the
// task; its answer, POSTed to another front end, resumes the task.
func TestLegacyInputOnGetStream(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		a, other := newEnv(t, b, nil), newEnv(t, b, nil)
		l := &legacyClient{t: t}
		l.initialize(a, `{"elicitation":{},"tasks":{}}`)
		ts := httptest.NewServer(other.h)
		defer ts.Close()
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", l.session)
		res, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		if !sc.Scan() { // the opening keep-alive: the stream is subscribed
			t.Fatal("stream ended before it opened")
		}
		events := make(chan map[string]any, 64)
		go func() {
			defer close(events)
			for sc.Scan() {
				if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
					var m map[string]any
					_ = json.Unmarshal([]byte(data), &m)
					events <- m
				}
			}
		}()
		rep := l.do(a, proto.MethodToolsCall, map[string]any{"name": toolTaskJob, "task": map[string]any{}})
		id := str(rep.JSON, "result.task.taskId")
		j := a.enq.nextJob(t)
		a.park(j.Ref, j.Attempt, "ask")
		mustMatch(t, l.do(a, proto.MethodTasksGet, map[string]any{"taskId": id}), 200, `{"result":{"status":"input_required"}}`)

		// next is the GET stream's next message other than a task status.
		next := func() map[string]any {
			t.Helper()
			for {
				select {
				case ev, ok := <-events:
					if !ok {
						t.Fatal("the GET stream ended")
					}
					if ev["method"] != legacy.NotifyTaskStatus {
						return ev
					}
				case <-time.After(waitBound):
					t.Fatal("nothing on the GET stream")
				}
			}
		}
		ev := next()
		if ev["method"] != proto.MethodElicit || str(ev, "id") != "mcpq-input:"+id+":ask" || relatedTask(ev) != id {
			t.Fatalf("GET stream sent %v, want the task's elicitation/create naming it", ev)
		}
		answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": str(ev, "id"),
			"result": map[string]any{"action": "accept", "content": map[string]any{"name": "Ed"}}})
		if rep := a.serve(context.Background(), http.MethodPost, answer,
			http.Header{"Content-Type": {"application/json"}, "Mcp-Session-Id": {l.session}}); rep.Status != http.StatusAccepted {
			t.Fatalf("answer: HTTP %d %s", rep.Status, rep.Body)
		}
		resumed := a.enq.nextJob(t)
		if err := a.store.Finish(context.Background(), j.Ref, resumed.Attempt, outcomeFor(toolTaskJob, json.RawMessage(`{"name":"Ed"}`))); err != nil {
			t.Fatal(err)
		}
		mustMatch(t, l.do(a, proto.MethodTasksGet, map[string]any{"taskId": id}), 200, `{"result":{"status":"completed"}}`)
		// The stream carries the completed status, and no second question.
		for {
			select {
			case ev := <-events:
				if ev["method"] == proto.MethodElicit {
					t.Fatalf("asked again: %v", ev)
				}
				if ev["method"] == legacy.NotifyTaskStatus && str(ev, "params.status") == "completed" {
					return
				}
			case <-time.After(waitBound):
				t.Fatal("no completed status on the GET stream")
			}
		}
	})
}

// relatedTask is the related-task id in a message's params._meta.
func relatedTask(msg map[string]any) string {
	p, _ := msg["params"].(map[string]any)
	m, _ := p["_meta"].(map[string]any)
	r, _ := m[legacy.MetaRelatedTask].(map[string]any)
	s, _ := r["taskId"].(string)
	return s
}

// TestLegacyShape: a 2025-11-25 answer carries none of the result fields
// only 2026-07-28 has (resultType, cacheScope, ttlMs), while the modern
// answer to the same request keeps them.
func TestLegacyShape(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, nil)
		l := &legacyClient{t: t}
		l.initialize(e, `{"tasks":{}}`)
		for _, c := range []struct {
			method string
			params map[string]any
		}{
			{proto.MethodToolsList, nil},
			{proto.MethodPromptsList, nil},
			{proto.MethodResourcesList, nil},
			{proto.MethodToolsCall, map[string]any{"name": toolGreet, "arguments": map[string]any{"name": "Ada"}}},
			{proto.MethodToolsCall, map[string]any{"name": toolGreetAuto, "arguments": map[string]any{"name": "Ada"}, "task": map[string]any{}}},
		} {
			rep := l.do(e, c.method, c.params)
			res, ok := rep.JSON["result"].(map[string]any)
			if !ok {
				t.Fatalf("%s: %s", c.method, rep.Body)
			}
			for _, k := range []string{"resultType", "cacheScope", "ttlMs"} {
				if _, has := res[k]; has {
					t.Errorf("%s: the 2025-11-25 answer has %s: %s", c.method, k, rep.Body)
				}
			}
		}
		rep := e.send("", rpc(1, proto.MethodToolsList, metaTasks, nil), nil)
		mustMatch(t, rep, 200, `{"result":{"resultType":"complete"}}`)
	})
}

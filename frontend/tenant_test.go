package frontend_test

// Issue 13 (no tenant can hurt another), front-end side: bounded work per
// request, duplicate member names, what a listing and a listen read, and
// the lower findings. Each test fails on the code before its fix.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

// TestTenantDuplicateNames: a body with a duplicate member name anywhere
// is refused before anything reads it, so the header check and the method
// cannot read different values of one member (finding 4).
func TestTenantDuplicateNames(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newKeyEnv(t, b, nil)
		const dup = `{"error":{"code":-32600,"message":"Invalid Request: duplicate member name in an object"}}`
		noName := func(h http.Header) { h.Del("Mcp-Name") }
		// The probe: the header check read "name": null (no Mcp-Name
		// needed), the call read "greet".
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"x"},"_meta":` +
			metaPlain + `,"name":null}}`
		mustMatch(t, e.send(keyAlice, body, noName), 400, dup)
		// A duplicate deep inside the arguments, in _meta, and in the envelope.
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"x","name":"y"},"_meta":` + metaPlain + `}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"a":[{"b":{"c":1,"c":2}}]},"_meta":` + metaPlain + `}}`,
			`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":` + strings.Replace(metaPlain, `{}}`, `{},"io.modelcontextprotocol/clientCapabilities":{"x":1}}`, 1) + `}}`,
			`{"jsonrpc":"2.0","id":1,"id":2,"method":"server/discover","params":{"_meta":` + metaPlain + `}}`,
			`{"jsonrpc":"2.0","method":"tools/call","method":"server/discover","id":1,"params":{"_meta":` + metaPlain + `}}`,
		} {
			mustMatch(t, e.send(keyAlice, body, nil), 400, dup)
		}
		// The same names in different objects are fine.
		mustMatch(t, e.send(keyAlice, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"x","o":{"name":"y"}},"_meta":`+
			metaPlain+`}}`, nil), 200, `{"result":{"content":[{"text":"Hello, x!"}]}}`)
	})
}

// TestTenantUpdateBounded: tasks/update takes at most
// frontend.MaxInputResponses answers, each key at most
// frontend.MaxInputKeyBytes; past that it is -32602 naming the limit,
// whatever the task id, before any Redis command (finding 1).
func TestTenantUpdateBounded(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newKeyEnv(t, b, nil)
		update := func(id string, n int, keyLen int) reply {
			var sb strings.Builder
			sb.WriteString(`{`)
			for i := range n {
				if i > 0 {
					sb.WriteString(",")
				}
				k := fmt.Sprintf("k%d", i)
				if keyLen > len(k) {
					k += strings.Repeat("x", keyLen-len(k))
				}
				fmt.Fprintf(&sb, `%q:{"action":"accept"}`, k)
			}
			sb.WriteString(`}`)
			body := `{"jsonrpc":"2.0","id":"u","method":"tasks/update","params":{"taskId":"` + id +
				`","inputResponses":` + sb.String() + `,"_meta":` + metaTasks + `}}`
			return e.send(keyAlice, body, nil)
		}
		tooMany := fmt.Sprintf(`{"id":"u","error":{"<exact>":true,"code":-32602,"message":"Invalid params: inputResponses has more than %d entries (the limit per request)"}}`,
			frontend.MaxInputResponses)
		unknown := "AAAAAAAAAAAAAAAAAAAAAA"
		mustMatch(t, update(unknown, frontend.MaxInputResponses+1, 0), 200, tooMany)
		mustMatch(t, update(unknown, 50_000, 0), 200, tooMany)
		mustMatch(t, update(unknown, frontend.MaxInputResponses, 0), 200, taskNotFound)
		mustMatch(t, update(unknown, 1, frontend.MaxInputKeyBytes+1), 200,
			fmt.Sprintf(`{"error":{"code":-32602,"message":"Invalid params: an inputResponses key is longer than %d bytes"}}`, frontend.MaxInputKeyBytes))

		// A real task waiting for input takes a full update.
		id := e.createAs(keyAlice, toolTaskJob)
		aref := owned("alice", id)
		e.park(aref, e.enq.nextJob(t).Attempt, "k0", "k1")
		before := e.record(aref)
		mustMatch(t, update(id, frontend.MaxInputResponses+1, 0), 200, tooMany)
		if after := e.record(aref); fmt.Sprint(before) != fmt.Sprint(after) {
			t.Errorf("a refused update changed the task")
		}
		mustMatch(t, update(id, frontend.MaxInputResponses, 0), 200, `{"result":{"resultType":"complete"}}`)
		e.enq.nextJob(t) // both answered: resumed
	})
}

// TestTenantRevocationEndsLongRequests: revoking a managed key ends that
// key's open listen stream on one front end and its held synchronous call
// on another with a 401 error, and cancels the held call's task (finding
// 3). Before the fix both stayed open until their own end.
func TestTenantRevocationEndsLongRequests(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		recheck := func(c *frontend.Config) { c.AuthRecheck = 100 * time.Millisecond }
		e1, e2 := newKeyEnv(t, b, recheck), newKeyEnv(t, b, recheck)
		e2.enq.setHold(true) // the held call's task never runs
		fe1, fe2 := httptest.NewServer(e1.h), httptest.NewServer(e2.h)
		defer fe1.Close()
		defer fe2.Close()
		key, info, err := e1.access.CreateKey(context.Background(), "carol")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitBound)
		defer cancel()
		auth := http.Header{"Authorization": {"Bearer " + key}}
		l, err := (&client.Client{URL: fe1.URL + "/mcp", Header: auth}).Listen(ctx, map[string]any{"toolsListChanged": true})
		if err != nil {
			t.Fatal(err)
		}
		if m := <-l.C; m.Method != proto.NotifySubscribed {
			t.Fatalf("listen opened with %+v", m)
		}
		held := make(chan error, 1)
		go func() { // a client without the Tasks extension: the call is held until the task ends
			_, err := (&client.Client{URL: fe2.URL + "/mcp", Header: auth}).CallTool(ctx, toolSlow, map[string]any{"name": "x"})
			held <- err
		}()
		j := e2.enq.nextJob(t) // the held call's task exists
		if err := e1.access.RevokeKey(context.Background(), info.ID); err != nil {
			t.Fatal(err)
		}
		revokedAt := time.Now()
		const want = "Unauthorized: the API key was revoked"
		var last client.Message
		for m := range l.C {
			last = m
			if m.Method != "" && m.Method != proto.NotifyToolsListChanged {
				t.Errorf("after the revocation the stream delivered %+v", m)
			}
		}
		if last.Error == nil || last.Error.Message != want {
			t.Errorf("listen stream ended with %+v, want the error %q", last, want)
		}
		t.Logf("listen stream ended %s after the revocation", time.Since(revokedAt).Round(time.Millisecond))
		select {
		case err := <-held:
			var re *client.RPCError
			if !errors.As(err, &re) || re.HTTPStatus != http.StatusUnauthorized || re.RPC.Message != want {
				t.Errorf("held call ended with %v, want HTTP 401 %q", err, want)
			}
		case <-ctx.Done():
			t.Fatal("the held call did not end")
		}
		waitUntil(t, "the held call's task is cancelled", func() bool {
			rec, err := e2.store.Get(context.Background(), j.Ref)
			return err == nil && rec.CancelRequested
		})
	})
}

// waitUntil polls cond until it holds, failing after waitBound.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, waitBound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTenantListenBounded: a listen names at most MaxListenTasks distinct
// task ids (repeats count once and are read once), and a principal holds
// at most MaxListenStreams open streams per front end (finding 5).
func TestTenantListenBounded(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newKeyEnv(t, b, func(c *frontend.Config) { c.MaxListenStreams = 2 })
		e.enq.setHold(true)
		fe := httptest.NewServer(e.h)
		defer fe.Close()
		ctx, cancel := context.WithTimeout(context.Background(), waitBound)
		defer cancel()
		alice := &client.Client{URL: fe.URL + "/mcp", Tasks: true, Header: http.Header{"Authorization": {"Bearer " + keyAlice}}}
		var ids []string
		for range 3 {
			ids = append(ids, e.createAs(keyAlice, toolTaskJob))
			e.enq.nextJob(t)
		}
		var many []string
		for i := range frontend.MaxListenTasks + 1 {
			many = append(many, fmt.Sprintf("AAAAAAAAAAAAAAAAAAA%03d", i))
		}
		_, err := alice.Listen(ctx, map[string]any{"taskIds": many})
		var re *client.RPCError
		if !errors.As(err, &re) || re.RPC.Code != proto.CodeInvalidParams ||
			re.RPC.Message != fmt.Sprintf("Invalid params: at most %d taskIds per subscription", frontend.MaxListenTasks) {
			t.Fatalf("listen with %d ids: %v", len(many), err)
		}
		// The probe named the same tasks many times over: each counts, and is read and shown, once.
		var repeated []string
		for range 200 {
			repeated = append(repeated, ids...)
		}
		lctx, lcancel := context.WithCancel(ctx)
		l1, err := alice.Listen(lctx, map[string]any{"taskIds": repeated})
		if err != nil {
			t.Fatal(err)
		}
		ack := <-l1.C
		var acked struct {
			Notifications struct {
				TaskIDs []string `json:"taskIds"`
			} `json:"notifications"`
		}
		if err := json.Unmarshal(ack.Params, &acked); err != nil || len(acked.Notifications.TaskIDs) != len(ids) {
			t.Fatalf("acknowledgement %s (%v), want %d task ids", ack.Params, err, len(ids))
		}
		for range ids {
			if m := <-l1.C; m.Method != proto.NotifyTasks {
				t.Fatalf("got %+v, want the initial task states", m)
			}
		}
		// A second stream is allowed, a third is not; closing one frees its place.
		l2, err := alice.Listen(ctx, map[string]any{"toolsListChanged": true})
		if err != nil {
			t.Fatal(err)
		}
		<-l2.C
		_, err = alice.Listen(ctx, map[string]any{"toolsListChanged": true})
		if !errors.As(err, &re) || re.HTTPStatus != http.StatusTooManyRequests {
			t.Fatalf("third listen: %v, want HTTP 429", err)
		}
		bob := &client.Client{URL: fe.URL + "/mcp", Header: http.Header{"Authorization": {"Bearer " + keyBob}}}
		if _, err := bob.Listen(ctx, map[string]any{"toolsListChanged": true}); err != nil {
			t.Fatalf("bob's listen: %v (alice's streams count against alice only)", err)
		}
		lcancel()
		for range l1.C { // the stream ended
		}
		waitUntil(t, "a listen is accepted again", func() bool {
			c, cc := context.WithCancel(ctx)
			defer cc()
			_, err := alice.Listen(c, map[string]any{"toolsListChanged": true})
			return err == nil
		})
	})
}

// TestTenantArgumentBytes: one call's arguments are bounded
// (MaxArgumentBytes, -32602), and so are the argument bytes a principal's
// live tasks hold in Redis together (MaxArgumentBytesHeld, 429); an ended
// task gives its bytes back (finding 6).
func TestTenantArgumentBytes(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newKeyEnv(t, b, func(c *frontend.Config) { c.MaxArgumentBytes, c.MaxArgumentBytesHeld = 2000, 3000 })
		e.enq.setHold(true)
		call := func(key string, n int) reply {
			return e.send(key, rpc(1, proto.MethodToolsCall, metaTasks, map[string]any{"name": toolTaskJob,
				"arguments": map[string]any{"name": strings.Repeat("a", n-len(`{"name":""}`))}}), nil)
		}
		mustMatch(t, call(keyAlice, 2001), 200,
			`{"error":{"<exact>":true,"code":-32602,"message":"Invalid params: arguments are 2001 bytes, more than the 2000 allowed per call"}}`)
		first := call(keyAlice, 1500)
		mustMatch(t, first, 200, `{"result":{"resultType":"task"}}`)
		mustMatch(t, call(keyAlice, 1500), 200, `{"result":{"resultType":"task"}}`)
		e.enq.nextJob(t)
		e.enq.nextJob(t)
		keys := e.redisKeys()
		const held = `{"id":1,"error":{"<exact>":true,"code":-32603,"message":"Limit reached: this principal's live tasks hold too many argument bytes; wait for some to end"}}`
		mustMatch(t, call(keyAlice, 20), 429, held)
		if got := e.redisKeys(); fmt.Sprint(keys) != fmt.Sprint(got) {
			t.Errorf("a refused call wrote keys:\nbefore %v\nafter  %v", keys, got)
		}
		mustMatch(t, call(keyBob, 1500), 200, `{"result":{"resultType":"task"}}`) // bob has his own budget
		e.enq.nextJob(t)
		// A cancelled task gives its bytes back.
		mustMatch(t, e.send(keyAlice, taskBody(proto.MethodTasksCncl, str(first.JSON, "result.taskId")), nil), 200, "")
		mustMatch(t, call(keyAlice, 1500), 200, `{"result":{"resultType":"task"}}`)
		e.enq.nextJob(t)
		mustMatch(t, call(keyAlice, 20), 429, held)
	})
}

// errReader fails every read with an error that names socket addresses,
// as a connection reset does.
type errReader struct{}

func (errReader) Read([]byte) (int, error) {
	return 0, errors.New("read tcp 127.0.0.1:8080->10.1.2.3:41234: connection reset by peer")
}

// TestTenantLowerFindings: the lower findings of the review (finding 7)
// that a router test can show: the anonymous mode checks Host too (DNS
// rebinding), every answer is no-store and nosniff, a 401 closes the
// connection, and a body read error does not echo socket addresses.
func TestTenantLowerFindings(t *testing.T) {
	b := redistest.Mini(t)
	anon := newEnv(t, b, nil)
	keyed := newKeyEnv(t, b, nil)
	discover := rpc(1, proto.MethodDiscover, metaPlain, nil)
	send := func(e *env, method, target, host, body, key string) *http.Response {
		t.Helper()
		r := httptest.NewRequest(method, target, strings.NewReader(body))
		r.Host = host
		if body != "" {
			r.Header = deriveHeaders([]byte(body))
		}
		bearer(r.Header, key)
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, r)
		return w.Result()
	}
	for _, host := range []string{"evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.nip.io",
		"localhost:abc", "127.0.0.2", "evil.example:80@x", "[::2]:8080"} {
		for _, target := range []string{"/mcp", "/v1/tasks", "/v1/tasks/x"} {
			method, body := http.MethodGet, ""
			if target == "/mcp" {
				method, body = http.MethodPost, discover
			}
			if res := send(anon, method, target, host, body, ""); res.StatusCode != http.StatusForbidden {
				t.Errorf("anonymous %s %s with Host %s: HTTP %d, want 403", method, target, host, res.StatusCode)
			}
		}
		// With a key the Host does not matter: a rebinding page has no key.
		if res := send(keyed, http.MethodPost, "/mcp", host, discover, keyAlice); res.StatusCode != 200 {
			t.Errorf("keyed request with Host %s: HTTP %d", host, res.StatusCode)
		}
	}
	for _, host := range []string{"localhost", "localhost:8080", "LocalHost:8080", "127.0.0.1:9", "[::1]:8080", "[::1]"} {
		res := send(anon, http.MethodPost, "/mcp", host, discover, "")
		if res.StatusCode != 200 {
			t.Errorf("anonymous request with Host %s: HTTP %d", host, res.StatusCode)
		}
		if res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("answer headers %v lack no-store/nosniff", res.Header)
		}
	}
	if res := send(anon, http.MethodGet, "/v1/tasks", "localhost", "", ""); res.StatusCode != 200 ||
		res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("GET /v1/tasks: HTTP %d, headers %v", res.StatusCode, res.Header)
	}
	// A 401 closes the connection: the client cannot keep it with a slow body.
	res := send(keyed, http.MethodPost, "/mcp", "localhost", discover, "wrong")
	if res.StatusCode != 401 || res.Header.Get("Connection") != "close" {
		t.Errorf("401: HTTP %d, Connection %q, want close", res.StatusCode, res.Header.Get("Connection"))
	}
	// A body read error does not echo the socket addresses.
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", errReader{})
	r.Header = deriveHeaders([]byte(discover))
	w := httptest.NewRecorder()
	anon.h.ServeHTTP(w, r)
	if body := w.Body.String(); strings.Contains(body, "127.0.0.1") || strings.Contains(body, "10.1.2.3") ||
		!strings.Contains(body, "Parse error: the request body could not be read") {
		t.Errorf("body read error answered %s", body)
	}
}

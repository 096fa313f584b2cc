package frontend_test

// Authentication: KeyAuth on its own, and through the router (401 with
// WWW-Authenticate before anything else runs, 503 when keys cannot be
// checked, managed keys revoked at once, anonymous only where allowed).
// The helpers here (keyed envs, requests as a principal, REST calls) are
// shared with hostile_test.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/access"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

const (
	// metaElicit declares elicitation (so input can be asked by MRTR) and
	// not the Tasks extension (so an auto tool keeps the request open).
	metaElicit = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"replay","version":"1.0.0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	elicitReq = `{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object"}}}`
)

// Static keys of the two principals the hostile suite plays.
const (
	keyAlice = "alice-0123456789abcdef0123456789abcdef"
	keyBob   = "bob-fedcba9876543210fedcba9876543210"
)

func staticKeys() map[string]string { return map[string]string{keyAlice: "alice", keyBob: "bob"} }

// newKeyEnv is newEnv authenticating alice and bob by static keys and
// managed keys in Redis (internal/access); anonymous requests are refused.
func newKeyEnv(t testing.TB, b *redistest.Backend, mod func(*frontend.Config)) *env {
	t.Helper()
	managed := access.New(b.Client, b.Prefix, nil)
	return newEnv(t, b, func(c *frontend.Config) {
		c.Auth = frontend.NewKeyAuth(staticKeys(), managed, false)
		if mod != nil {
			mod(c)
		}
	})
}

// owned is principal's reference to task id.
func owned(principal, id string) taskstate.Ref {
	return taskstate.Ref{Owner: taskstate.OwnerTag(principal), ID: id}
}

// bearer sets Authorization for key ("" sends none).
func bearer(h http.Header, key string) http.Header {
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	return h
}

// send posts body to /mcp as the holder of key, with the headers a
// conforming client derives; mod may change them.
func (e *env) send(key, body string, mod func(http.Header)) reply {
	e.t.Helper()
	h := bearer(deriveHeaders([]byte(body)), key)
	if mod != nil {
		mod(h)
	}
	return e.serve(context.Background(), http.MethodPost, []byte(body), h)
}

// createAs calls a task tool as the holder of key and returns the task id.
func (e *env) createAs(key, tool string) string {
	e.t.Helper()
	rep := e.send(key, rpc(1, proto.MethodToolsCall, metaTasks, map[string]any{"name": tool}), nil)
	mustMatch(e.t, rep, 200, `{"result":{"resultType":"task","taskId":"<taskid>"}}`)
	return str(rep.JSON, "result.taskId")
}

// do sends any request through h and decodes a JSON answer.
func do(ctx context.Context, h http.Handler, method, target string, body []byte, hdr http.Header) (reply, error) {
	r := httptest.NewRequestWithContext(ctx, method, "http://localhost"+target, bytes.NewReader(body))
	maps.Copy(r.Header, hdr)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	res := w.Result()
	b, _ := io.ReadAll(res.Body)
	rep := reply{Status: res.StatusCode, Header: res.Header, Body: b}
	decode := func(b []byte) (map[string]any, error) {
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		return m, dec.Decode(&m)
	}
	var err error
	switch ct := res.Header.Get("Content-Type"); {
	case len(bytes.TrimSpace(b)) == 0:
	case strings.HasPrefix(ct, "application/json"):
		rep.JSON, err = decode(b)
	case strings.HasPrefix(ct, "text/event-stream"): // the final response is the last event
		for _, line := range strings.Split(string(b), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				m, derr := decode([]byte(data))
				if derr != nil {
					return rep, derr
				}
				rep.Events = append(rep.Events, m)
			}
		}
		if n := len(rep.Events); n > 0 {
			rep.JSON = rep.Events[n-1]
		}
	}
	return rep, err
}

// rest GETs a REST path as the holder of key.
func (e *env) rest(key, path string) reply {
	e.t.Helper()
	rep, err := do(context.Background(), e.h, http.MethodGet, path, nil, bearer(http.Header{}, key))
	if err != nil {
		e.t.Fatalf("GET %s: %v: %s", path, err, rep.Body)
	}
	return rep
}

// listed is the task ids GET /v1/tasks shows the holder of key.
func (e *env) listed(key string) []string {
	e.t.Helper()
	rep := e.rest(key, "/v1/tasks?limit=500")
	if rep.Status != 200 {
		e.t.Fatalf("GET /v1/tasks: %d %s", rep.Status, rep.Body)
	}
	var page struct {
		Tasks []proto.Task `json:"tasks"`
	}
	if err := json.Unmarshal(rep.Body, &page); err != nil {
		e.t.Fatal(err)
	}
	var ids []string
	for _, t := range page.Tasks {
		ids = append(ids, t.TaskID)
	}
	return ids
}

// redisKeys lists the keys under the env's prefix.
func (e *env) redisKeys() []string {
	e.t.Helper()
	keys, err := e.b.Keys(context.Background(), e.prefix+"*")
	if err != nil {
		e.t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// lookupFunc is a KeyLookup.
type lookupFunc func(key string) (string, bool, error)

func (f lookupFunc) LookupKey(_ context.Context, key string) (string, bool, error) { return f(key) }

func TestKeyAuth(t *testing.T) {
	errDown := errors.New("redis down")
	managed := lookupFunc(func(key string) (string, bool, error) {
		switch key {
		case "managed-carol":
			return "carol", true, nil
		case "explode":
			return "", false, errDown
		}
		return "", false, nil
	})
	strict := frontend.NewKeyAuth(staticKeys(), managed, false)
	open := frontend.NewKeyAuth(staticKeys(), managed, true)
	staticOnly := frontend.NewKeyAuth(staticKeys(), nil, false)
	for _, c := range []struct {
		name   string
		auth   *frontend.KeyAuth
		header []string // Authorization values; nil sends none
		want   string
		err    error
	}{
		{"alice", strict, []string{"Bearer " + keyAlice}, "alice", nil},
		{"bob", strict, []string{"Bearer " + keyBob}, "bob", nil},
		{"scheme case", strict, []string{"bEaReR " + keyAlice}, "alice", nil},
		{"padded key", strict, []string{"Bearer   " + keyAlice + "  "}, "alice", nil},
		{"first header wins", strict, []string{"Bearer " + keyBob, "Bearer " + keyAlice}, "bob", nil},
		{"managed", strict, []string{"Bearer managed-carol"}, "carol", nil},
		{"static before managed", strict, []string{"Bearer " + keyAlice}, "alice", nil},
		{"no header", strict, nil, "", frontend.ErrNoCredentials},
		{"empty header", strict, []string{""}, "", frontend.ErrNoCredentials},
		{"basic", strict, []string{"Basic " + keyAlice}, "", frontend.ErrNoCredentials},
		{"no scheme", strict, []string{keyAlice}, "", frontend.ErrNoCredentials},
		{"scheme only", strict, []string{"Bearer"}, "", frontend.ErrNoCredentials},
		{"blank key", strict, []string{"Bearer    "}, "", frontend.ErrNoCredentials},
		{"tab separator", strict, []string{"Bearer\t" + keyAlice}, "", frontend.ErrNoCredentials},
		{"wrong key", strict, []string{"Bearer nope"}, "", frontend.ErrBadCredentials},
		{"key prefix", strict, []string{"Bearer " + keyAlice[:len(keyAlice)-1]}, "", frontend.ErrBadCredentials},
		{"key extended", strict, []string{"Bearer " + keyAlice + "0"}, "", frontend.ErrBadCredentials},
		{"key case", strict, []string{"Bearer " + strings.ToUpper(keyAlice)}, "", frontend.ErrBadCredentials},
		{"two keys", strict, []string{"Bearer " + keyAlice + " " + keyBob}, "", frontend.ErrBadCredentials},
		{"principal as key", strict, []string{"Bearer alice"}, "", frontend.ErrBadCredentials},
		{"hash as key", strict, []string{"Bearer " + access.HashKey(keyAlice)}, "", frontend.ErrBadCredentials},
		{"invalid utf-8", strict, []string{"Bearer \xff\xfe" + keyAlice}, "", frontend.ErrBadCredentials},
		{"managed unknown without store", staticOnly, []string{"Bearer managed-carol"}, "", frontend.ErrBadCredentials},
		{"anonymous allowed", open, nil, frontend.AnonymousPrincipal, nil},
		{"anonymous allowed, key given", open, []string{"Bearer " + keyBob}, "bob", nil},
		{"anonymous allowed, wrong key", open, []string{"Bearer nope"}, "", frontend.ErrBadCredentials},
		{"anonymous allowed, malformed", open, []string{"Basic x"}, "", frontend.ErrNoCredentials},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			for _, v := range c.header {
				r.Header.Add("Authorization", v)
			}
			p, err := c.auth.Authenticate(r)
			if p != c.want || !errors.Is(err, c.err) {
				t.Errorf("Authenticate = %q, %v; want %q, %v", p, err, c.want, c.err)
			}
		})
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set("Authorization", "Bearer explode")
	_, err := strict.Authenticate(r)
	var unavailable *frontend.UnavailableError
	if !errors.As(err, &unavailable) || !errors.Is(err, errDown) {
		t.Errorf("store down: %v, want an UnavailableError wrapping it", err)
	}
}

// TestAuthHTTP: what the router answers for each kind of credential, on
// both Redis backends, with managed keys in Redis.
func TestAuthHTTP(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newKeyEnv(t, b, nil)
		carol, info, err := e.access.CreateKey(context.Background(), "carol")
		if err != nil {
			t.Fatal(err)
		}
		discover := rpc(7, proto.MethodDiscover, metaPlain, nil)
		const (
			noCreds  = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Unauthorized: missing Authorization: Bearer \u003ckey\u003e"}}`
			badCreds = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Unauthorized: invalid or revoked API key"}}`
		)
		for _, c := range []struct {
			name, auth, body, challenge string
		}{
			{"no header", "", noCreds, `Bearer realm="mcpq"`},
			{"wrong key", "Bearer " + keyAlice + "x", badCreds, `Bearer realm="mcpq", error="invalid_token"`},
			{"basic", "Basic YWxpY2U6cHc=", noCreds, `Bearer realm="mcpq", error="invalid_token"`},
		} {
			t.Run(c.name, func(t *testing.T) {
				h := deriveHeaders([]byte(discover))
				if c.auth != "" {
					h.Set("Authorization", c.auth)
				}
				rep := e.serve(context.Background(), http.MethodPost, []byte(discover), h)
				if rep.Status != 401 || string(rep.Body) != c.body {
					t.Errorf("HTTP %d %s, want 401 %s", rep.Status, rep.Body, c.body)
				}
				if got := rep.Header.Get("WWW-Authenticate"); got != c.challenge {
					t.Errorf("WWW-Authenticate %q, want %q", got, c.challenge)
				}
				if strings.Contains(string(rep.Body), keyAlice) {
					t.Errorf("the answer echoes the key")
				}
				r, err := do(context.Background(), e.h, http.MethodGet, "/v1/tasks", nil, http.Header{"Authorization": {c.auth}})
				if err != nil || r.Status != 401 || r.Header.Get("WWW-Authenticate") == "" || str(r.JSON, "error") == "" {
					t.Errorf("REST: %v HTTP %d %q %s", err, r.Status, r.Header.Get("WWW-Authenticate"), r.Body)
				}
			})
		}

		// Authentication comes first: an unauthenticated request is 401
		// whatever else is wrong with it, and changes nothing.
		before := e.redisKeys()
		for _, body := range []string{
			rpc(1, proto.MethodToolsCall, metaTasks, map[string]any{"name": toolTaskJob}),
			rpc(1, proto.MethodToolsCall, metaPlain, map[string]any{"name": toolGreet, "arguments": map[string]any{"name": "x"}}),
			"{not json", strings.Repeat("[", 1000),
		} {
			for _, mod := range []func(http.Header){nil, func(h http.Header) { h.Set("Content-Type", "text/plain") },
				func(h http.Header) { h.Set("Authorization", "Bearer "+keyBob+"!") }} {
				h := deriveHeaders([]byte(body))
				if mod != nil {
					mod(h)
				}
				if rep := e.serve(context.Background(), http.MethodPost, []byte(body), h); rep.Status != 401 {
					t.Errorf("unauthenticated %.40q: HTTP %d %s", body, rep.Status, rep.Body)
				}
			}
		}
		if after := e.redisKeys(); !slices.Equal(before, after) {
			t.Errorf("unauthenticated requests changed Redis keys:\nbefore %v\nafter  %v", before, after)
		}
		if n := len(e.enq.jobs); n != 0 {
			t.Errorf("unauthenticated requests enqueued %d jobs", n)
		}

		// A managed key works until it is revoked, then answers like a wrong key.
		id := e.createAs(carol, toolTaskJob)
		if got := e.listed(carol); !slices.Equal(got, []string{id}) {
			t.Errorf("carol lists %v", got)
		}
		if err := e.access.RevokeKey(context.Background(), info.ID); err != nil {
			t.Fatal(err)
		}
		rep := e.send(carol, rpc(1, proto.MethodTasksGet, metaTasks, map[string]any{"taskId": id}), nil)
		if rep.Status != 401 || string(rep.Body) != badCreds || !strings.Contains(rep.Header.Get("WWW-Authenticate"), "invalid_token") {
			t.Errorf("revoked key: HTTP %d %s", rep.Status, rep.Body)
		}
		if r := e.rest(carol, "/v1/tasks"); r.Status != 401 {
			t.Errorf("revoked key on REST: %d", r.Status)
		}
		// Alice's key never reaches carol's tasks.
		if got := e.listed(keyAlice); slices.Contains(got, id) {
			t.Errorf("alice lists carol's task")
		}
	})
}

// TestAuthUnavailable: when managed keys cannot be checked the answer is
// 503 (try again), not 401 (wrong key), and static keys still work.
func TestAuthUnavailable(t *testing.T) {
	down := lookupFunc(func(string) (string, bool, error) { return "", false, errors.New("dial tcp 10.0.0.1:6379: refused") })
	e := newEnv(t, redistest.Mini(t), func(c *frontend.Config) { c.Auth = frontend.NewKeyAuth(staticKeys(), down, false) })
	body := rpc(3, proto.MethodDiscover, metaPlain, nil)
	rep := e.send("mcpq_unknown_key", body, nil)
	mustMatch(t, rep, 503, `{"id":null,"error":{"code":-32603,"message":"Authentication is unavailable; try again"}}`)
	if strings.Contains(string(rep.Body), "10.0.0.1") || rep.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("503 leaks the cause or challenges: %v %s", rep.Header, rep.Body)
	}
	if r := e.rest("mcpq_unknown_key", "/v1/tasks"); r.Status != 503 {
		t.Errorf("REST with the store down: %d %s", r.Status, r.Body)
	}
	mustMatch(t, e.send(keyAlice, body, nil), 200, `{"id":3,"result":{}}`)
	mustMatch(t, e.send("", body, nil), 401, "")
}

// TestAnonymousAllowed: with --allow-anonymous a request without a key is
// the anonymous principal, with its own tasks; a wrong key is still 401.
func TestAnonymousAllowed(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, func(c *frontend.Config) { c.Auth = frontend.NewKeyAuth(staticKeys(), nil, true) })
		anon := e.createAs("", toolTaskJob)
		alice := e.createAs(keyAlice, toolTaskJob)
		mustMatch(t, e.send("", rpc("g", proto.MethodTasksGet, metaTasks, map[string]any{"taskId": alice}), nil), 200, taskNotFound)
		mustMatch(t, e.send(keyAlice, rpc("g", proto.MethodTasksGet, metaTasks, map[string]any{"taskId": anon}), nil), 200, taskNotFound)
		mustMatch(t, e.send("", rpc("g", proto.MethodTasksGet, metaTasks, map[string]any{"taskId": anon}), nil), 200,
			`{"result":{"taskId":"`+anon+`"}}`)
		if got := e.listed(""); !slices.Equal(got, []string{anon}) {
			t.Errorf("anonymous lists %v", got)
		}
		rep := e.send("wrong", rpc(1, proto.MethodDiscover, metaPlain, nil), nil)
		if rep.Status != 401 {
			t.Errorf("wrong key with anonymous allowed: %d", rep.Status)
		}
	})
}

// The hostile suite's helpers.

// park puts a claimed task into input_required with the given keys, as a
// worker asking for input would.
func (e *env) park(ref taskstate.Ref, attempt int64, keys ...string) {
	e.t.Helper()
	reqs := map[string]json.RawMessage{}
	for _, k := range keys {
		reqs[k] = json.RawMessage(elicitReq)
	}
	if err := e.store.RequestInput(context.Background(), ref, attempt, reqs); err != nil {
		e.t.Fatalf("RequestInput: %v", err)
	}
}

// record is the task's hash exactly as Redis holds it.
func (e *env) record(ref taskstate.Ref) map[string]string {
	e.t.Helper()
	m, err := e.b.Client.HGetAll(context.Background(), e.store.Keys().Task(ref)).Result()
	if err != nil || len(m) == 0 {
		e.t.Fatalf("HGETALL %s: %v (%d fields)", ref.ID, err, len(m))
	}
	return m
}

// taskBody is a tasks/* request for id (the JSON-RPC id is fixed, so two
// answers can be compared byte for byte).
func taskBody(method, id string) string {
	p := map[string]any{"taskId": id}
	if method == proto.MethodTasksUpd {
		p["inputResponses"] = map[string]any{"q": map[string]any{"action": "accept", "content": map[string]any{"ok": true}}}
	}
	return rpc("x", method, metaTasks, p)
}

// b64Name sends Mcp-Name in its =?base64?...?= form, so any id can travel.
func b64Name(h http.Header) {
	if v := h.Get("Mcp-Name"); v != "" && !strings.HasPrefix(v, "=?base64?") {
		h.Set("Mcp-Name", "=?base64?"+b64(v)+"?=")
	}
}

// drainJobs forgets the jobs enqueued so far.
func (e *env) drainJobs() {
	for {
		select {
		case <-e.enq.jobs:
		default:
			return
		}
	}
}

var taskMethods = []string{proto.MethodTasksGet, proto.MethodTasksUpd, proto.MethodTasksCncl}

// sameAnswer fails unless two answers are indistinguishable.
func sameAnswer(t *testing.T, what string, got, want reply) {
	t.Helper()
	if got.Status != want.Status || !bytes.Equal(got.Body, want.Body) ||
		got.Header.Get("Content-Type") != want.Header.Get("Content-Type") || len(got.Header) != len(want.Header) {
		t.Errorf("%s: HTTP %d %v %s\nwant HTTP %d %v %s", what, got.Status, got.Header, got.Body, want.Status, want.Header, want.Body)
	}
}

// drained is a second front end on the same config whose listen streams
// end right after the acknowledgement and the initial task states.
func (e *env) drained() http.Handler {
	e.t.Helper()
	srv, err := frontend.New(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	srv.Drain()
	e.t.Cleanup(func() { _ = srv.Close() })
	return srv.Handler()
}

// listen opens subscriptions/listen for ids on h as the holder of key.
func (e *env) listen(h http.Handler, key string, ids ...string) reply {
	e.t.Helper()
	body := rpc("L", proto.MethodListen, metaTasks, map[string]any{"notifications": map[string]any{"taskIds": ids}})
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	rep, err := do(ctx, h, http.MethodPost, "/mcp", []byte(body), bearer(deriveHeaders([]byte(body)), key))
	if err != nil || rep.Status != 200 || len(rep.Events) == 0 {
		e.t.Fatalf("listen: %v HTTP %d %s", err, rep.Status, rep.Body)
	}
	return rep
}

func b64url(s string) string {
	return strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(b64(s)), "=")
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// mrtr starts a tools/call that the test's worker answers by asking for
// input, and returns the InputRequiredResult's requestState with the task.
func (e *env) mrtr(key, tool string, args map[string]any) (string, taskstate.Ref) {
	e.t.Helper()
	body := rpc("m", proto.MethodToolsCall, metaElicit, map[string]any{"name": tool, "arguments": args})
	ch := make(chan reply, 1)
	go func() { ch <- e.with(e.t).send(key, body, nil) }()
	j := e.enq.nextJob(e.t)
	e.park(j.Ref, j.Attempt, "q")
	rep := await(e.t.(*testing.T), ch)
	mustMatch(e.t, rep, 200, `{"id":"m","result":{"resultType":"input_required","inputRequests":{"q":{}},"requestState":"<string>"}}`)
	return str(rep.JSON, "result.requestState"), j.Ref
}

// retryBody is an MRTR retry of tool with args, answering q.
func retryBody(tool string, args any, state string) string {
	return rpc("r", proto.MethodToolsCall, metaElicit, map[string]any{"name": tool, "arguments": args,
		"inputResponses": map[string]any{"q": map[string]any{"action": "accept", "content": map[string]any{"ok": true}}},
		"requestState":   state})
}

// flipChar changes a base64url character's high bit, so the decoded data
// always changes (the low bits of a last character may be padding).
func flipChar(c byte) byte {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, c)
	if i < 0 {
		return 'A'
	}
	return alphabet[i^32]
}

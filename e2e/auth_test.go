package e2e

// Identity across processes: a front end with static keys for alice and
// bob (no anonymous access) and a worker, on a real redis-server, plus
// managed keys made and revoked with `mcpq keys`. Another principal's task
// answers exactly like an unknown id on every task method and on the REST
// index; no key, a wrong key and a revoked key get 401 and change nothing.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// authFE is a front end that requires API keys.
type authFE struct {
	base   string // http://host:port
	b      *redistest.Backend
	env    []string // REDIS_URL and MCPQ_PREFIX, for mcpq subcommands
	nextID int
}

// answer is one HTTP answer, kept byte for byte.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("HTTP %d: not JSON: %q", a.status, a.body)
	}
	return m
}

// mcpBody is a JSON-RPC request whose _meta declares the Tasks extension
// and elicitation.
func mcpBody(id any, method string, params map[string]any) []byte {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		proto.MetaProtocolVersion: proto.ProtocolVersion,
		proto.MetaClientCapabilities: map[string]any{"elicitation": map[string]any{},
			"extensions": map[string]any{proto.TasksExtension: map[string]any{}}},
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return b
}

// post sends a JSON-RPC request with the routing headers and key ("" for
// none; a full Authorization value when it has a space).
func (f *authFE) post(t *testing.T, ctx context.Context, key string, id any, method, name string, params map[string]any) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.base+"/mcp", bytes.NewReader(mcpBody(id, method, params)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", proto.ProtocolVersion)
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	setKey(req, key)
	return do(t, req)
}

func setKey(req *http.Request, key string) {
	switch {
	case key == "":
	case strings.Contains(key, " "):
		req.Header.Set("Authorization", key)
	default:
		req.Header.Set("Authorization", "Bearer "+key)
	}
}

func do(t *testing.T, req *http.Request) answer {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: res.StatusCode, header: res.Header, body: b}
}

// get is a REST GET as the holder of key.
func (f *authFE) get(t *testing.T, ctx context.Context, key, path string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	setKey(req, key)
	return do(t, req)
}

// ids lists the task ids GET /v1/tasks shows the holder of key.
func (f *authFE) ids(t *testing.T, ctx context.Context, key string) []string {
	t.Helper()
	a := f.get(t, ctx, key, "/v1/tasks?limit=500")
	if a.status != 200 {
		t.Fatalf("GET /v1/tasks: %d %s", a.status, a.body)
	}
	var page struct{ Tasks []proto.Task }
	if err := json.Unmarshal(a.body, &page); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range page.Tasks {
		ids = append(ids, tk.TaskID)
	}
	slices.Sort(ids)
	return ids
}

// task calls a task method on id ("x" is the JSON-RPC id of every such call,
// so two answers compare byte for byte).
func (f *authFE) task(t *testing.T, ctx context.Context, key, method, id string) answer {
	t.Helper()
	p := map[string]any{"taskId": id}
	if method == proto.MethodTasksUpd {
		p["inputResponses"] = map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}
	}
	return f.post(t, ctx, key, "x", method, id, p)
}

// create calls a tool that becomes a task and returns its id.
func (f *authFE) create(t *testing.T, ctx context.Context, key, tool string, args map[string]any) string {
	t.Helper()
	a := f.post(t, ctx, key, 1, proto.MethodToolsCall, tool, map[string]any{"name": tool, "arguments": args})
	var r struct {
		Result proto.CreateTaskResult `json:"result"`
	}
	if a.status != 200 || json.Unmarshal(a.body, &r) != nil || r.Result.ResultType != proto.ResultTask || r.Result.TaskID == "" {
		t.Fatalf("tools/call %s: HTTP %d %s, want a task", tool, a.status, a.body)
	}
	return r.Result.TaskID
}

// status polls alice's view of id until it is want.
func (f *authFE) await(t *testing.T, ctx context.Context, key, id string, want proto.TaskStatus) map[string]any {
	t.Helper()
	for {
		a := f.task(t, ctx, key, proto.MethodTasksGet, id)
		m := a.json(t)
		if st, _ := lookupPath(m, "result", "status"); st == string(want) {
			return m
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s never %s: last %s", id, want, a.body)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func lookupPath(m map[string]any, path ...string) (any, bool) {
	var v any = m
	for _, k := range path {
		o, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = o[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// listenAck opens subscriptions/listen for ids and returns the status and
// the acknowledgement's data line, byte for byte; the stream is then closed.
func (f *authFE) listenAck(t *testing.T, ctx context.Context, key string, ids ...string) (int, string) {
	t.Helper()
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	body := mcpBody("L", proto.MethodListen, map[string]any{"notifications": map[string]any{"taskIds": ids}})
	req, err := http.NewRequestWithContext(lctx, http.MethodPost, f.base+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", proto.ProtocolVersion)
	req.Header.Set("Mcp-Method", proto.MethodListen)
	setKey(req, key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return res.StatusCode, data
		}
	}
	t.Fatalf("listen: HTTP %d, no event (%v)", res.StatusCode, sc.Err())
	return 0, ""
}

// mcpqCmd runs an mcpq subcommand against the front end's Redis and prefix.
func (f *authFE) mcpqCmd(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(mcpqBin, args...)
	cmd.Env = append(os.Environ(), f.env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcpq %v: %v\n%s", args, err, stderr.String())
	}
	return string(out) + stderr.String()
}

// redisState is the key names under the prefix and the length of the job
// queue: what a request that changed nothing leaves as it was.
func (f *authFE) redisState(t *testing.T, ctx context.Context) string {
	t.Helper()
	keys, err := f.b.Keys(ctx, f.b.Prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	// The conformance pack announces its watched resource on the clock
	// (internal/toolpack/conformance/resources.go), and each process's
	// series recorder writes its minute's hash on the clock
	// (taskstate/series/recorder.go: FlushInterval) with what the accepted
	// requests and runs before counted: refused requests or not.
	keys = slices.DeleteFunc(keys, func(k string) bool {
		return strings.HasPrefix(k, f.b.Prefix+"resource-change:") || strings.HasPrefix(k, f.b.Prefix+"series:")
	})
	slices.Sort(keys)
	// asynq's pending list and the jobs waiting by principal (internal/queue/fair.go).
	pending, err := queue.NewClient(f.b.Client, queue.Options{Prefix: f.b.Prefix}).Pending(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d pending jobs; keys %v", len(pending), keys)
}

func TestAuthAcrossProcesses(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, testAuthAcrossProcesses)
}

func testAuthAcrossProcesses(t *testing.T, b *redistest.Backend) {
	t.Parallel()
	keyAlice, keyBob := "k1-"+taskstate.NewID(), "k2-"+taskstate.NewID()
	f := &authFE{b: b, env: []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix}}
	start(t, "worker", f.env, nil, "worker", "--fixtures", "conformance")
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	start(t, "frontend", append([]string{"MCPQ_API_KEYS=alice:" + keyAlice + ",bob:" + keyBob}, f.env...), nil,
		"frontend", "--addr", addr)
	f.base = "http://" + addr
	waitHealthy(t, f.base)
	ctx := within(t)
	for { // the worker publishes its catalog on its own schedule
		a := f.post(t, ctx, keyAlice, 1, proto.MethodToolsList, "", nil)
		if a.status == 200 && bytes.Contains(a.body, []byte(`"confirm_delete"`)) && bytes.Contains(a.body, []byte(`"slow_compute"`)) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("catalog never listed the fixtures: %d %s", a.status, a.body)
		case <-time.After(50 * time.Millisecond):
		}
	}

	parked := f.create(t, ctx, keyAlice, "confirm_delete", map[string]any{"filename": "a.txt"})
	running := f.create(t, ctx, keyAlice, "slow_compute", map[string]any{"seconds": 30})
	f.await(t, ctx, keyAlice, parked, proto.StatusInputRequired)
	taskKey := func(id string) string {
		return taskstate.Keys{Prefix: b.Prefix}.Task(taskstate.Ref{Owner: taskstate.OwnerTag("alice"), ID: id})
	}

	t.Run("another principal's task answers like an unknown id", func(t *testing.T) {
		for _, id := range []string{parked, running} {
			before, err := b.Client.HGetAll(ctx, taskKey(id)).Result()
			if err != nil {
				t.Fatal(err)
			}
			unknown := taskstate.NewID()
			for _, m := range []string{proto.MethodTasksGet, proto.MethodTasksUpd, proto.MethodTasksCncl} {
				foreign := f.task(t, ctx, keyBob, m, id)
				for what, other := range map[string]answer{
					"bob, unknown id":   f.task(t, ctx, keyBob, m, unknown),
					"alice, unknown id": f.task(t, ctx, keyAlice, m, unknown),
				} {
					if foreign.status != other.status || !bytes.Equal(foreign.body, other.body) ||
						foreign.header.Get("Content-Type") != other.header.Get("Content-Type") {
						t.Errorf("%s on alice's task: HTTP %d %s\n%s: HTTP %d %s", m, foreign.status, foreign.body, what, other.status, other.body)
					}
				}
				if code, _ := lookupPath(foreign.json(t), "error", "code"); code != float64(proto.CodeInvalidParams) {
					t.Errorf("%s: %s, want -32602", m, foreign.body)
				}
			}
			st, ack := f.listenAck(t, ctx, keyBob, id)
			st2, ack2 := f.listenAck(t, ctx, keyBob, unknown)
			if st != 200 || st != st2 || ack != ack2 || strings.Contains(ack, id) {
				t.Errorf("bob's listen on alice's task: %d %s\nunknown id: %d %s", st, ack, st2, ack2)
			}
			if _, mine := f.listenAck(t, ctx, keyAlice, id); !strings.Contains(mine, `"taskIds":["`+id+`"]`) {
				t.Errorf("alice's listen did not honour her task: %s", mine)
			}
			// Bob changed nothing: the worker's own writes (heartbeats,
			// progress) aside, the record is as it was.
			after, err := b.Client.HGetAll(ctx, taskKey(id)).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, field := range []string{"status", "cancel", "pending", "resumes", "owner", "createdAt"} {
				if before[field] != after[field] {
					t.Errorf("task %s field %s: %q became %q", id, field, before[field], after[field])
				}
			}
			for k := range after {
				if strings.HasPrefix(k, "ans:") {
					t.Errorf("bob's answer was stored: %s=%s", k, after[k])
				}
			}

			if slices.Contains(f.ids(t, ctx, keyBob), id) {
				t.Errorf("bob's GET /v1/tasks lists alice's task")
			}
			foreign := f.get(t, ctx, keyBob, "/v1/tasks/"+id)
			other := f.get(t, ctx, keyBob, "/v1/tasks/"+unknown)
			if foreign.status != 404 || other.status != 404 || !bytes.Equal(foreign.body, other.body) {
				t.Errorf("bob GET /v1/tasks/{alice's}: %d %s; unknown: %d %s", foreign.status, foreign.body, other.status, other.body)
			}
			if a := f.get(t, ctx, keyAlice, "/v1/tasks/"+id); a.status != 200 || !bytes.Contains(a.body, []byte(id)) {
				t.Errorf("alice GET /v1/tasks/%s: %d %s", id, a.status, a.body)
			}
		}
		if got, want := f.ids(t, ctx, keyAlice), sorted(parked, running); !slices.Equal(got, want) {
			t.Errorf("alice lists %v, want %v", got, want)
		}
		f.await(t, ctx, keyAlice, parked, proto.StatusInputRequired)
		f.await(t, ctx, keyAlice, running, proto.StatusWorking)
	})

	t.Run("no key, a wrong key and a revoked key get 401 and change nothing", func(t *testing.T) {
		created := f.mcpqCmd(t, "keys", "create", "carol")
		spare := strings.TrimSpace(strings.SplitN(f.mcpqCmd(t, "keys", "create", "carol"), "\n", 2)[0])
		carol := strings.TrimSpace(strings.SplitN(created, "\n", 2)[0])
		if !strings.HasPrefix(carol, "mcpq_") || !strings.HasPrefix(spare, "mcpq_") {
			t.Fatalf("mcpq keys create printed %q", created)
		}
		carolID := strings.SplitN(carol, "_", 3)[1]
		if list := f.mcpqCmd(t, "keys", "list"); !strings.Contains(list, carolID) || !strings.Contains(list, "carol") {
			t.Fatalf("mcpq keys list: %s", list)
		}
		// Carol's key works, and her task is hers alone.
		carolTask := f.create(t, ctx, carol, "confirm_delete", map[string]any{"filename": "c.txt"})
		if got := f.ids(t, ctx, spare); !slices.Equal(got, []string{carolTask}) {
			t.Fatalf("carol lists %v", got)
		}
		if slices.Contains(f.ids(t, ctx, keyAlice), carolTask) {
			t.Fatalf("alice lists carol's task")
		}
		f.mcpqCmd(t, "keys", "revoke", carolID)
		if list := f.mcpqCmd(t, "keys", "list"); strings.Contains(list, carolID) {
			t.Errorf("revoked key still listed: %s", list)
		}

		f.await(t, ctx, spare, carolTask, proto.StatusInputRequired) // no worker writes during the snapshots
		aliceBefore, carolBefore := f.ids(t, ctx, keyAlice), f.ids(t, ctx, spare)
		redisBefore := f.redisState(t, ctx)
		var wrongBody []byte
		for _, c := range []struct {
			name, key, challenge string
		}{
			{"no key", "", `Bearer realm="mcpq"`},
			{"wrong key", keyAlice + "x", `Bearer realm="mcpq", error="invalid_token"`},
			{"bob's key as basic", "Basic " + keyBob, `Bearer realm="mcpq", error="invalid_token"`},
			{"revoked key", carol, `Bearer realm="mcpq", error="invalid_token"`},
		} {
			for _, a := range []answer{
				f.post(t, ctx, c.key, 1, proto.MethodToolsCall, "confirm_delete",
					map[string]any{"name": "confirm_delete", "arguments": map[string]any{"filename": "z.txt"}}),
				f.task(t, ctx, c.key, proto.MethodTasksCncl, carolTask),
				f.task(t, ctx, c.key, proto.MethodTasksUpd, parked),
				f.post(t, ctx, c.key, 1, proto.MethodDiscover, "", nil),
			} {
				if a.status != 401 || a.header.Get("WWW-Authenticate") != c.challenge {
					t.Errorf("%s: HTTP %d WWW-Authenticate %q %s", c.name, a.status, a.header.Get("WWW-Authenticate"), a.body)
				}
				if id, ok := lookupPath(a.json(t), "id"); !ok || id != nil {
					t.Errorf("%s: 401 body %s, want a JSON-RPC error with id null", c.name, a.body)
				}
			}
			for _, path := range []string{"/v1/tasks", "/v1/tasks/" + carolTask} {
				if a := f.get(t, ctx, c.key, path); a.status != 401 || a.header.Get("WWW-Authenticate") != c.challenge {
					t.Errorf("%s GET %s: HTTP %d %s", c.name, path, a.status, a.body)
				}
			}
			a := f.post(t, ctx, c.key, 1, proto.MethodDiscover, "", nil)
			switch c.name {
			case "wrong key":
				wrongBody = a.body
			case "revoked key":
				if !bytes.Equal(a.body, wrongBody) {
					t.Errorf("a revoked key answers %s, a wrong key %s", a.body, wrongBody)
				}
			}
		}
		if got := f.redisState(t, ctx); got != redisBefore {
			t.Errorf("refused requests changed Redis:\nbefore %s\nafter  %s", redisBefore, got)
		}
		if got := f.ids(t, ctx, keyAlice); !slices.Equal(got, aliceBefore) {
			t.Errorf("alice's tasks %v became %v", aliceBefore, got)
		}
		if got := f.ids(t, ctx, spare); !slices.Equal(got, carolBefore) {
			t.Errorf("carol's tasks %v became %v", carolBefore, got)
		}
		f.await(t, ctx, spare, carolTask, proto.StatusInputRequired) // not cancelled
		f.await(t, ctx, keyAlice, parked, proto.StatusInputRequired) // not answered
		if a := f.task(t, ctx, spare, proto.MethodTasksCncl, carolTask); a.status != 200 {
			t.Errorf("carol's cancel: %d %s", a.status, a.body)
		}
	})

	t.Run("alice still owns her tasks; a replayed answer is ignored", func(t *testing.T) {
		if a := f.task(t, ctx, keyAlice, proto.MethodTasksUpd, parked); a.status != 200 {
			t.Fatalf("alice's tasks/update: %d %s", a.status, a.body)
		}
		decline := f.post(t, ctx, keyAlice, "x", proto.MethodTasksUpd, parked, map[string]any{"taskId": parked,
			"inputResponses": map[string]any{"confirm": map[string]any{"action": "decline"}}})
		if decline.status != 200 {
			t.Errorf("replayed tasks/update: %d %s", decline.status, decline.body)
		}
		done := f.await(t, ctx, keyAlice, parked, proto.StatusCompleted)
		if text, _ := json.Marshal(done); !strings.Contains(string(text), "Deleted a.txt") {
			t.Errorf("completed with %s, want the first answer's result", text)
		}
		if a := f.task(t, ctx, keyAlice, proto.MethodTasksCncl, running); a.status != 200 {
			t.Errorf("alice's cancel: %d %s", a.status, a.body)
		}
		f.await(t, ctx, keyAlice, running, proto.StatusCancelled)
	})
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}

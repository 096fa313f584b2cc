package frontend_test

// TestReplay replays the recorded JSON-RPC exchanges in
// testdata/exchanges/*.json through the real router, on miniredis and on a
// real redis-server. Each file is a JSON array of cases:
//
//	{"name": "...",
//	 "config": {"maxBodyBytes": 64, "defaultTtlMs": 0, "maxTtlMs": 0,
//	            "allowUnlimitedTtl": false, "pollIntervalMs": 0},
//	 "steps": [step, ...]}            // or the fields of one step inline
//
// A step sends one HTTP request and checks the answer:
//
//	{"httpMethod": "POST",            // default POST
//	 "request": {...},                // the JSON-RPC body, or
//	 "rawBody": "...",                // a body sent byte for byte
//	 "headers": {"Mcp-Name": "x", "Mcp-Method": null},
//	                                  // merged onto the headers a conforming
//	                                  // client derives from the body; null removes
//	 "expect": {"status": 400, "response": {...}, "emptyBody": true,
//	            "headers": {"Allow": "POST"}},
//	 "capture": {"tid": "result.taskId"}}
//
// or plays the worker for a held task instead:
//
//	{"finish": {"task": "${tid}", "status": "completed", "result": {...},
//	            "error": {...}, "statusMessage": "..."}}
//
// Before replay, "${name}" is replaced everywhere: "${meta}" and
// "${metaTasks}" (quoted) by the standard _meta objects without and with
// the Tasks extension; ${task.<kind>} by the id of a task prepared in the
// store (queued, working, completed, toolError, failed, cancelled, expired,
// foreign, unknown); captured names by what an earlier step captured.
// Response expectations use the matcher in match_test.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

type replayCase struct {
	Name   string       `json:"name"`
	Config replayConfig `json:"config"`
	Steps  []replayStep `json:"steps"`
	replayStep
}

type replayConfig struct {
	MaxBodyBytes      int64 `json:"maxBodyBytes"`
	DefaultTTLMs      int64 `json:"defaultTtlMs"`
	MaxTTLMs          int64 `json:"maxTtlMs"`
	AllowUnlimitedTTL bool  `json:"allowUnlimitedTtl"`
	PollIntervalMs    int64 `json:"pollIntervalMs"`
}

type replayStep struct {
	HTTPMethod string             `json:"httpMethod"`
	Request    json.RawMessage    `json:"request"`
	RawBody    *string            `json:"rawBody"`
	Headers    map[string]*string `json:"headers"`
	Expect     *replayExpect      `json:"expect"`
	Capture    map[string]string  `json:"capture"`
	Finish     *replayFinish      `json:"finish"`
}

type replayExpect struct {
	Status    int               `json:"status"`
	Response  json.RawMessage   `json:"response"`
	EmptyBody bool              `json:"emptyBody"`
	Headers   map[string]string `json:"headers"`
}

type replayFinish struct {
	Task          string          `json:"task"`
	Status        string          `json:"status"`
	Result        json.RawMessage `json:"result"`
	Error         *proto.Error    `json:"error"`
	StatusMessage string          `json:"statusMessage"`
}

func TestReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "exchanges", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no exchange files: %v", err)
	}
	total := 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var cases []replayCase
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cases); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		seen := map[string]bool{}
		for i := range cases {
			c := &cases[i]
			if len(c.Steps) == 0 {
				c.Steps = []replayStep{c.replayStep}
			}
			if c.Name == "" || seen[c.Name] {
				t.Fatalf("%s: case %d has an empty or repeated name %q", file, i, c.Name)
			}
			seen[c.Name] = true
			for j, s := range c.Steps {
				if (s.Finish == nil) == (s.Expect == nil) {
					t.Fatalf("%s: %q step %d needs exactly one of expect and finish", file, c.Name, j)
				}
			}
		}
		total += len(cases)
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.Name, func(t *testing.T) {
					t.Parallel()
					redistest.Each(t, func(t *testing.T, b *redistest.Backend) { replay(t, b, c) })
				})
			}
		})
	}
	t.Logf("%d recorded exchanges in %d files", total, len(files))
}

func replay(t *testing.T, b *redistest.Backend, c replayCase) {
	e := newEnv(t, b, func(cfg *frontend.Config) {
		ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
		cfg.MaxBodyBytes = c.Config.MaxBodyBytes
		cfg.DefaultTTL = ms(c.Config.DefaultTTLMs)
		cfg.MaxTTL = ms(c.Config.MaxTTLMs)
		cfg.AllowUnlimitedTTL = c.Config.AllowUnlimitedTTL
		cfg.PollInterval = ms(c.Config.PollIntervalMs)
	})
	vars := map[string]string{}
	jsonVars := map[string]string{"meta": metaPlain, "metaTasks": metaTasks}
	for k, id := range preparePresets(t, e) {
		vars["task."+k] = id
	}
	subst := func(s string) string {
		for k, v := range jsonVars {
			s = strings.ReplaceAll(s, `"${`+k+`}"`, v)
		}
		for k, v := range vars {
			s = strings.ReplaceAll(s, "${"+k+"}", v)
		}
		if i := strings.Index(s, "${"); i >= 0 {
			t.Fatalf("unknown variable in %q", s[i:min(len(s), i+30)])
		}
		return s
	}
	for i, s := range c.Steps {
		if s.Finish != nil {
			f := s.Finish
			o := taskstate.Outcome{Status: proto.TaskStatus(f.Status), StatusMessage: f.StatusMessage, Error: f.Error}
			if len(f.Result) > 0 {
				o.Result = json.RawMessage(subst(string(f.Result)))
			}
			e.finish(subst(f.Task), o)
			continue
		}
		var body []byte
		switch {
		case s.RawBody != nil:
			body = []byte(*s.RawBody)
		case len(s.Request) > 0:
			body = []byte(subst(string(s.Request)))
		}
		h := deriveHeaders(body)
		for k, v := range s.Headers { // removals first: names are case-insensitive
			if v == nil {
				h.Del(k)
			}
		}
		for k, v := range s.Headers {
			if v != nil {
				h.Set(k, subst(*v))
			}
		}
		method := s.HTTPMethod
		if method == "" {
			method = http.MethodPost
		}
		rep := e.serve(context.Background(), method, body, h)
		checkStep(t, i, rep, s.Expect, subst)
		for name, path := range s.Capture {
			v := str(rep.JSON, path)
			if v == "" {
				t.Fatalf("step %d: nothing to capture at %s", i, path)
			}
			vars[name] = v
		}
	}
}

func checkStep(t *testing.T, i int, rep reply, x *replayExpect, subst func(string) string) {
	t.Helper()
	if rep.Status != x.Status {
		t.Fatalf("step %d: HTTP status %d, want %d; body %s", i, rep.Status, x.Status, rep.Body)
	}
	for k, v := range x.Headers {
		if got := rep.Header.Get(k); got != v {
			t.Errorf("step %d: header %s = %q, want %q", i, k, got, v)
		}
	}
	if x.EmptyBody {
		if len(rep.Body) != 0 {
			t.Fatalf("step %d: want an empty body, got %s", i, rep.Body)
		}
		return
	}
	if len(x.Response) == 0 {
		return
	}
	if ct := rep.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("step %d: Content-Type %q, want application/json; body %s", i, ct, rep.Body)
	}
	var want map[string]any
	dec := json.NewDecoder(strings.NewReader(subst(string(x.Response))))
	dec.UseNumber()
	if err := dec.Decode(&want); err != nil {
		t.Fatalf("step %d: bad expectation: %v", i, err)
	}
	// Every answer is one JSON-RPC 2.0 response with exactly one of
	// result and error.
	if rep.JSON["jsonrpc"] != "2.0" {
		t.Fatalf("step %d: jsonrpc is %v; body %s", i, rep.JSON["jsonrpc"], rep.Body)
	}
	if _, ok := rep.JSON["id"]; !ok {
		t.Fatalf("step %d: response has no id; body %s", i, rep.Body)
	}
	_, hasRes := rep.JSON["result"]
	_, hasErr := rep.JSON["error"]
	if hasRes == hasErr {
		t.Fatalf("step %d: want exactly one of result and error; body %s", i, rep.Body)
	}
	if _, wantErr := want["error"]; wantErr != hasErr {
		t.Fatalf("step %d: want error=%v; body %s", i, wantErr, rep.Body)
	}
	if err := match("", any(want), any(rep.JSON)); err != nil {
		t.Fatalf("step %d: %v\nbody: %s", i, err, rep.Body)
	}
}

// preparePresets writes the tasks the exchanges refer to as ${task.<kind>},
// through the store as a worker would leave them.
func preparePresets(t *testing.T, e *env) map[string]string {
	t.Helper()
	ctx := context.Background()
	ttl := int64(3_600_000)
	create := func(st *taskstate.Store, principal string) string {
		rec, err := st.Create(ctx, taskstate.CreateParams{Principal: principal, Tool: toolTaskJob,
			Arguments: json.RawMessage(`{"name":"Ada"}`), TTLMs: &ttl, PollIntervalMs: 1000, StatusMessage: "Queued"})
		if err != nil {
			t.Fatal(err)
		}
		return rec.Ref.ID
	}
	claimed := func() string {
		id := create(e.store, frontend.AnonymousPrincipal)
		if _, err := e.store.Claim(ctx, ref(id), 0, taskstate.Share{}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	p := map[string]string{
		"queued":  create(e.store, frontend.AnonymousPrincipal),
		"working": claimed(),
		"foreign": create(e.store, "mallory"),
		"unknown": taskstate.NewID(),
	}
	p["completed"] = claimed()
	e.finish(p["completed"], taskstate.Outcome{Status: proto.StatusCompleted, StatusMessage: "Completed",
		Result: json.RawMessage(`{"resultType":"complete","content":[{"type":"text","text":"done"}],"structuredContent":{"n":42}}`)})
	p["toolError"] = claimed()
	e.finish(p["toolError"], outcomeFor(toolToolError, nil))
	p["failed"] = claimed()
	e.finish(p["failed"], outcomeFor(toolProtocolError, nil))
	p["cancelled"] = create(e.store, frontend.AnonymousPrincipal)
	if err := e.store.RequestCancel(ctx, ref(p["cancelled"])); err != nil {
		t.Fatal(err)
	}
	// Created two hours ago with a one-hour TTL; the Redis key outlives
	// the TTL (long grace), so only the store's expiry check hides it.
	past := func() time.Time { return e.clock.Now().Add(-2 * time.Hour) }
	old := taskstate.New(e.b.Client, taskstate.Options{Prefix: e.prefix, Clock: past, ExpiryGrace: 3 * time.Hour})
	p["expired"] = create(old, frontend.AnonymousPrincipal)
	return p
}

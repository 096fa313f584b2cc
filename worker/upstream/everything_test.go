package upstream

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/internal/everythingtest"
	"github.com/mcpq/mcpq/mcpqtest"
	"github.com/mcpq/mcpq/proto"
)

// everything is the spec of the official "everything" server
// (internal/everythingtest: skipped where it is not installed).
func everything(t *testing.T) Spec {
	t.Helper()
	return Spec{Name: "everything", Command: everythingtest.Command(t)}
}

// direct calls the tool on a session of its own, as a client without mcpq would.
func direct(t *testing.T, s *Server, name string, args map[string]any) map[string]any {
	t.Helper()
	sl, err := s.pool.acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer s.pool.release(sl)
	sess, err := sl.session(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sess.request(context.WithoutCancel(t.Context()), proto.MethodToolsCall, map[string]any{"name": name, "arguments": args}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resultFields(t, raw)
}

// resultFields is a result's content, structuredContent and isError as JSON values.
func resultFields(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for _, k := range []string{"content", "structuredContent", "isError"} {
		if v, ok := m[k]; ok && v != false {
			out[k] = v
		}
	}
	return out
}

func TestEverythingServerOverStdio(t *testing.T) {
	spec := everything(t)
	s, reg, env := serve(t, spec)
	if len(reg.list()) < 10 {
		t.Fatalf("only %d tools served", len(reg.list()))
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get-structured-content", map[string]any{"location": "New York"}},
		{"get-resource-links", map[string]any{"count": 3}},
		{"get-tiny-image", map[string]any{}},
		{"echo", map[string]any{"message": "hi"}},
	} {
		t.Run(c.tool, func(t *testing.T) {
			res := env.Call(t, c.tool, c.args).Result(t)
			b, _ := json.Marshal(res)
			got, want := resultFields(t, b), direct(t, s, c.tool, c.args)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("through mcpq:\n%s\ndirect:\n%s", mustJSON(got), mustJSON(want))
			}
		})
	}
	t.Run("trigger-long-running-operation", func(t *testing.T) {
		args := map[string]any{"duration": 2, "steps": 4}
		run := env.Call(t, "trigger-long-running-operation", args)
		st := run.WaitFor(t, "upstream progress in statusMessage", func(st mcpqtest.State) bool {
			return strings.HasSuffix(st.StatusMessage, " of 4") // progress/total, the upstream sends no message
		})
		t.Logf("statusMessage %q", st.StatusMessage)
		res := run.Result(t)
		b, _ := json.Marshal(res)
		if got, want := resultFields(t, b), direct(t, s, "trigger-long-running-operation", args); !reflect.DeepEqual(got, want) {
			t.Errorf("through mcpq:\n%s\ndirect:\n%s", mustJSON(got), mustJSON(want))
		}
	})
}

func TestEverythingServerOverStreamableHTTP(t *testing.T) {
	stdio := everything(t)
	url := everythingtest.StartHTTP(t, stdio.Command)
	spec := Spec{Name: "everything-http", URL: url, Tools: []string{"echo", "trigger-long-running-operation", "get-structured-content"}}
	_, reg, env := serve(t, spec)
	if len(reg.list()) != 3 {
		t.Fatalf("served %d tools, want 3", len(reg.list()))
	}
	res := env.Call(t, "get-structured-content", map[string]any{"location": "Chicago"}).Result(t)
	if len(res.StructuredContent) == 0 || res.IsError {
		t.Errorf("get-structured-content: %+v", res)
	}
	run := env.Call(t, "trigger-long-running-operation", map[string]any{"duration": 1, "steps": 2})
	run.WaitFor(t, "upstream progress", func(st mcpqtest.State) bool { return strings.HasSuffix(st.StatusMessage, " of 2") })
	if r := run.Result(t); r.IsError || !strings.Contains(r.Content[0].Text, "completed") {
		t.Errorf("long-running: %+v", r)
	}
}

// TestEverythingServerInputRelay: the upstream's elicitation/create and
// sampling/createMessage during a call surface as the task's
// input_required with the upstream's request inside; the answer goes back
// on the same upstream session, and the tool's result shows it.
func TestEverythingServerInputRelay(t *testing.T) {
	spec := everything(t)
	spec.Tools = []string{"trigger-elicitation-request", "trigger-sampling-request"}
	_, reg, env := serve(t, spec)
	if len(reg.list()) != 2 {
		t.Fatalf("served %d tools, want the 2 the upstream registers for a client with elicitation and sampling", len(reg.list()))
	}
	t.Run("elicitation", func(t *testing.T) {
		run := env.Call(t, "trigger-elicitation-request", map[string]any{})
		key, req := only(t, run.Input(t))
		if req.Method != proto.MethodElicit || !strings.Contains(string(mustJSON(req.Params)), "Your full, legal name") {
			t.Fatalf("input request %s: %s %s", key, req.Method, string(mustJSON(req.Params)))
		}
		run.Accept(t, key, map[string]any{"name": "Ada Lovelace", "check": true})
		res := run.Result(t)
		if text := string(mustJSON(res.Content)); !strings.Contains(text, "Name: Ada Lovelace") || !strings.Contains(text, "Agreed to terms: true") {
			t.Errorf("the upstream's result does not show the answer: %s", text)
		}
		if d := run.Deliveries(); len(d) != 1 {
			t.Errorf("deliveries %v: the call must stay open in one delivery", d)
		}
	})
	t.Run("sampling", func(t *testing.T) {
		run := env.Call(t, "trigger-sampling-request", map[string]any{"prompt": "two words", "maxTokens": 20})
		key, req := only(t, run.Input(t))
		if req.Method != proto.MethodCreateMessage || !strings.Contains(string(mustJSON(req.Params)), "two words") {
			t.Fatalf("input request %s: %s %s", key, req.Method, string(mustJSON(req.Params)))
		}
		run.Answer(t, map[string]any{key: map[string]any{"role": "assistant", "model": "test-model",
			"content": map[string]any{"type": "text", "text": "sampled reply"}}})
		if text := string(mustJSON(run.Result(t).Content)); !strings.Contains(text, "sampled reply") || !strings.Contains(text, "test-model") {
			t.Errorf("the upstream's result does not show the sample: %s", text)
		}
	})
	t.Run("cancel while the upstream waits", func(t *testing.T) {
		run := env.Call(t, "trigger-elicitation-request", map[string]any{})
		run.Input(t)
		run.Cancel(t)
		if st := run.End(t); st.Status != proto.StatusCancelled {
			t.Fatalf("ended %s (%s)", st.Status, st.StatusMessage)
		}
	})
}

// only is the one input request of reqs.
func only(t *testing.T, reqs map[string]proto.InputRequest) (string, proto.InputRequest) {
	t.Helper()
	if len(reqs) != 1 {
		t.Fatalf("input requests %v, want one", reqs)
	}
	for k, r := range reqs {
		return k, r
	}
	panic("unreachable")
}

// TestEverythingServerOwnTask: simulate-research-query is the upstream's
// own 2025-11-25 task (taskSupport required): mcpq asks for it as a task,
// follows it (its statusMessage into the mcpq task's, the elicitation it
// queues for the task relayed to the client through tasks/result) and
// completes with its result.
func TestEverythingServerOwnTask(t *testing.T) {
	spec := everything(t)
	spec.Tools = []string{"simulate-research-query"}
	_, reg, env := serve(t, spec)
	if len(reg.list()) != 1 {
		t.Fatalf("served %d tools, want simulate-research-query", len(reg.list()))
	}
	t.Run("plain", func(t *testing.T) {
		run := env.Call(t, "simulate-research-query", map[string]any{"topic": "tidal power"})
		st := run.WaitFor(t, "the upstream task's statusMessage", func(st mcpqtest.State) bool {
			return strings.HasSuffix(st.StatusMessage, "...") // "Gathering sources...", "Analyzing content...": the upstream's stages
		})
		t.Logf("statusMessage %q", st.StatusMessage)
		text := string(mustJSON(run.Result(t).Content))
		if !strings.Contains(text, "Research Report: tidal power") {
			t.Errorf("result %s", text)
		}
	})
	t.Run("ambiguous: the upstream task asks for input", func(t *testing.T) {
		run := env.Call(t, "simulate-research-query", map[string]any{"topic": "python", "ambiguous": true})
		key, req := only(t, run.Input(t))
		if req.Method != proto.MethodElicit || !strings.Contains(string(mustJSON(req.Params)), "multiple interpretations") {
			t.Fatalf("input request %s: %s %s", key, req.Method, mustJSON(req.Params))
		}
		run.Accept(t, key, map[string]any{"interpretation": "the snake"})
		if text := string(mustJSON(run.Result(t).Content)); !strings.Contains(text, "Clarification**: the snake") {
			t.Errorf("the upstream's report does not show the answer: %s", text)
		}
	})
}

package frontend_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

// TestUpdateChecksAnswers: a tasks/update whose inputResponses entry does
// not fit the request it answers (an elicitation action "bogus", content
// of the wrong type, a sampling answer without content, roots that are
// not an array) gets -32602 naming the key, writes nothing and enqueues
// nothing; the task stays input_required, and good answers after it
// resume the task.
func TestUpdateChecksAnswers(t *testing.T) {
	e := newEnv(t, redistest.Mini(t), nil)
	id := e.createTask(toolTaskJob)
	att := e.enq.nextJob(t).Attempt
	reqs := map[string]json.RawMessage{
		"form": json.RawMessage(`{"method":"elicitation/create","params":{"message":"Where?","requestedSchema":` +
			`{"type":"object","properties":{"city":{"type":"string"},"n":{"type":"integer"},` +
			`"size":{"type":"string","enum":["s","m"]},"ok":{"type":"boolean"}}}}}`),
		"llm":   json.RawMessage(`{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}`),
		"roots": json.RawMessage(`{"method":"roots/list"}`),
	}
	if err := e.store.RequestInput(context.Background(), ref(id), att, reqs); err != nil {
		t.Fatal(err)
	}
	good := map[string]any{
		"form":  json.RawMessage(`{"action":"accept","content":{"city":"Oslo","n":3,"size":"m","ok":true,"extra":1}}`),
		"llm":   json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"hi"}}`),
		"roots": json.RawMessage(`{"roots":[{"uri":"file:///w"}]}`),
	}
	update := func(responses map[string]any) reply {
		return e.post(rpc("u", proto.MethodTasksUpd, metaTasks, map[string]any{"taskId": id, "inputResponses": responses}))
	}
	for _, c := range []struct{ key, answer, says string }{
		{"form", `{"action":"bogus"}`, `action \"bogus\"`},
		{"form", `{"action":"accept","content":[1]}`, "content"},
		{"form", `{"action":"accept","content":{"city":7}}`, `content[\"city\"]`},
		{"form", `{"action":"accept","content":{"n":2.5}}`, "integer"},
		{"form", `{"action":"accept","content":{"size":"xl"}}`, "enum"},
		{"form", `{"action":"accept","content":{"ok":"yes"}}`, "boolean"},
		{"llm", `{"role":"assistant"}`, "CreateMessageResult"},
		{"llm", `{"role":"assistant","content":5}`, "CreateMessageResult"},
		{"roots", `{"roots":"file:///w"}`, "ListRootsResult"},
		{"roots", `{}`, "ListRootsResult"},
	} {
		responses := map[string]any{}
		for k, v := range good {
			responses[k] = v
		}
		responses[c.key] = json.RawMessage(c.answer)
		before := e.record(ref(id))
		rep := update(responses)
		mustMatch(t, rep, 200, `{"id":"u","error":{"code":-32602}}`)
		if msg := string(rep.Body); !strings.Contains(msg, `inputResponses[\"`+c.key+`\"]`) || !strings.Contains(msg, c.says) {
			t.Errorf("%s %s: %s, want the key and %q", c.key, c.answer, rep.Body, c.says)
		}
		if after := e.record(ref(id)); after["status"] != before["status"] || after["lastUpdatedAt"] != before["lastUpdatedAt"] {
			t.Errorf("%s %s changed the task: %v -> %v", c.key, c.answer, before["status"], after["status"])
		}
	}
	mustMatch(t, e.taskRPC(proto.MethodTasksGet, metaTasks, id), 200,
		`{"result":{"status":"input_required","inputRequests":{"form":{},"llm":{},"roots":{}}}}`)
	select {
	case j := <-e.enq.jobs:
		t.Fatalf("a refused update enqueued %+v", j)
	default:
	}
	mustMatch(t, update(good), 200, `{"id":"u","result":{}}`)
	if j := e.enq.nextJob(t); j.Ref != ref(id) {
		t.Errorf("good answers resumed %+v, want %s", j, id)
	}
}
